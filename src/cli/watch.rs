//! Budgets that hold for a whole command, whatever it is doing, Ctrl-C, and the progress
//! line.
//!
//! A watchdog thread samples the process's resident memory and the time since the current
//! case started (compiling included) every few milliseconds. When a budget is exceeded or
//! Ctrl-C is pressed it requests a stop ([`Stop`]). The explorer polls that request and
//! returns an `incomplete` verdict with the counts it reached, which the command reports
//! as usual (exit 3). Work that does not poll (compiling a kernel, the lock-step
//! simulation, a stress campaign, replaying, minimising, running a kernel file's script to
//! export it, reading a trace file) is ended by the watchdog itself, which kills the
//! script's process group if one runs: it prints the partial report (what the command was doing, for how long, with how much
//! memory, how far an exploration got) and exits with code 3. A second Ctrl-C ends the
//! process at once, also with code 3. `SIGTERM` and `SIGHUP` are handled like Ctrl-C.
//!
//! The memory sampled is semcheck's own and that of every process of the process groups
//! it started and every other process descended from it ([`semcheck::children`]): the
//! script of a kernel file and any process the script started, one that left its group
//! included. While such a process runs and memory is within 1 GiB of the budget the
//! watchdog samples every 4 ms (else every 20 ms), so a script that allocates fast is
//! stopped close to the budget ([`semcheck::memory::TreeSampler`] keeps such samples
//! cheap).
//!
//! On a terminal, stderr shows a live line: what is being done, and while exploring the
//! states, states per second, depth and resident memory. It is not drawn when stderr is
//! not a terminal.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use semcheck::checker::{Budget, Control, Progress, Stop, StopReason};
use serde_json::json;

use super::EXIT_INCOMPLETE;

/// How often the watchdog samples.
const TICK: Duration = Duration::from_millis(20);
/// How often it samples while a process semcheck started runs and memory is within
/// [`FAST_MARGIN`] of the budget (an export's script can allocate a gigabyte in a fraction
/// of a second, and nothing of it polls the budget).
const FAST_TICK: Duration = Duration::from_millis(4);
/// How far below the memory budget sampling speeds up: a process would have to allocate
/// this much within one [`TICK`] (50 GB/s) to pass the budget unseen. Farther below it,
/// sampling every 4 ms only costs CPU (a tenth of a core with two exports running).
const FAST_MARGIN: u64 = 1 << 30;
/// How long work that polls the stop request may take to stop before the watchdog ends the
/// process itself.
const GRACE: Duration = Duration::from_secs(2);

/// The budgets of a command.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Limits {
    /// Seconds per case, compiling included.
    pub(crate) seconds: Option<f64>,
    /// Bytes of resident memory of the whole process.
    pub(crate) memory_bytes: Option<u64>,
}

/// How a partial report is printed when the watchdog ends the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Style {
    /// `CASE: INCOMPLETE` and the detail on stdout, like `check`'s text report.
    Text,
    /// A JSON object on stdout with `verdict: incomplete`, like `check --json`.
    Json,
    /// `semcheck: CASE: incomplete: DETAIL` on stderr, for commands whose stdout is a
    /// rendering (`trace`, `replay`).
    Note,
}

/// Whether the command line asks for SARIF (a machine report is then a SARIF log).
fn sarif_requested() -> bool {
    let raw: Vec<String> = std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    super::output::requested_format(&raw) == Some(super::output::OutputFormat::Sarif)
}

/// The style of a command's report: JSON or text.
pub(crate) fn style(json: bool) -> Style {
    if json {
        Style::Json
    } else {
        Style::Text
    }
}

/// The watchdog's view of the command.
pub(crate) struct Watch {
    stop: Stop,
    interrupted: AtomicBool,
    state: Mutex<State>,
}

struct State {
    limits: Limits,
    /// When the current case started: the time budget counts from here.
    since: Instant,
    /// The case, as the report heads it (`psum N=8`).
    head: String,
    style: Style,
    /// What the command is doing (`compiling the kernel`), while it works.
    doing: Option<String>,
    /// Whether that work polls the stop request itself (the explorer).
    cooperative: bool,
    /// Whether a memory stop ends that work at once all the same (an export polls the
    /// stop, but its script can allocate faster than a cancel reaches it).
    memory_ends: bool,
    /// What the command has already decided, for a command of many steps (`N = 2..40
    /// decided: 39 proved`): the partial report says it.
    so_far: Option<String>,
    /// When the pending stop was first seen.
    requested_at: Option<Instant>,
    /// The exploration's last progress, and the one before (for the rate).
    last: Option<Progress>,
    rate: f64,
    resident: u64,
    bar: Option<ProgressBar>,
}

/// Seconds as a stop report says them: tenths from a second on, else two significant
/// digits (`0.012`, not `0.0`, under a budget of 0.01 s).
fn elapsed_text(seconds: f64) -> String {
    if seconds >= 1.0 || seconds <= 0.0 {
        format!("{seconds:.1}")
    } else {
        let decimals = (1 - seconds.log10().floor() as i32).clamp(1, 9) as usize;
        format!("{seconds:.decimals$}")
    }
}

impl State {
    /// What stopped work `doing` for `reason`, and how far it got.
    fn detail(&self, reason: StopReason, doing: &str) -> String {
        let seconds = self.since.elapsed().as_secs_f64();
        let by =
            Budget { max_states: None, max_seconds: self.limits.seconds, max_memory_bytes: self.limits.memory_bytes }
                .limit(reason);
        let reached = match self.last {
            Some(p) => format!(", {} states stored, depth {}", p.states, p.depth),
            None => String::new(),
        };
        let claimed = match &self.so_far {
            Some(note) => format!("{note}; nothing more is claimed"),
            None => "nothing was proved".to_string(),
        };
        format!(
            "stopped by {by} while {doing}, after {} s with {} MiB resident{reached}; {claimed}",
            elapsed_text(seconds),
            self.resident >> 20
        )
    }

    /// Work `what` starts (`cooperative` when it polls the stop request itself).
    fn begin(&mut self, what: &str, cooperative: bool) {
        self.doing = Some(what.to_string());
        self.cooperative = cooperative;
        self.memory_ends = false;
        if cooperative {
            self.last = None;
        }
        self.requested_at = None;
    }
}

static WATCH: OnceLock<Watch> = OnceLock::new();

/// The command's watch (without budgets until [`start`] gives them).
pub(crate) fn watch() -> &'static Watch {
    WATCH.get_or_init(|| Watch {
        stop: Stop::new(),
        interrupted: AtomicBool::new(false),
        state: Mutex::new(State {
            limits: Limits::default(),
            since: Instant::now(),
            // Until a case starts (the managed environment made before the first export).
            head: "semcheck".to_string(),
            style: Style::Text,
            doing: None,
            cooperative: false,
            memory_ends: false,
            so_far: None,
            requested_at: None,
            last: None,
            rate: 0.0,
            resident: 0,
            bar: None,
        }),
    })
}

/// Starts watching with `limits`: the watchdog thread and the handler of `SIGINT`
/// (Ctrl-C), `SIGTERM` and `SIGHUP` (the `ctrlc` crate with its `termination` feature:
/// the three are handled alike). Every end of the process, this one included, ends the
/// processes semcheck started and removes its temporary folders
/// ([`semcheck::cleanup`], registered here).
pub(crate) fn start(limits: Limits) {
    semcheck::cleanup::install();
    let w = watch();
    w.lock().limits = limits;
    let _ = ctrlc::set_handler(|| {
        let w = watch();
        if w.interrupted.swap(true, Ordering::AcqRel) {
            eprintln!("\nsemcheck: interrupted again; stopping now");
            std::process::exit(EXIT_INCOMPLETE);
        }
        w.stop.request(StopReason::Interrupted);
    });
    std::thread::Builder::new()
        .name("semcheck-watchdog".into())
        .spawn(|| loop {
            std::thread::sleep(watch().interval());
            watch().tick();
        })
        .expect("cannot start the watchdog thread");
}

/// The resident memory of this command in bytes: this process and every process of the
/// process groups it started (a user's script and whatever it started), when known.
pub(crate) fn resident_bytes() -> Option<u64> {
    Some(semcheck::memory::resident_bytes(None)? + semcheck::children::resident_bytes())
}

impl Watch {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// From now on the time budget of a case is `seconds` (a command whose stages have
    /// budgets of their own, like `mutate`, sets it per stage).
    pub(crate) fn limit_seconds(&self, seconds: Option<f64>) {
        self.lock().limits.seconds = seconds;
    }

    /// Whether Ctrl-C was pressed: the command checks no further case.
    pub(crate) fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::Acquire)
    }

    /// A new case starts now (the time budget counts from here), headed `head` in reports.
    pub(crate) fn case(&self, head: &str, style: Style) {
        let mut s = self.lock();
        s.since = Instant::now();
        s.head = head.to_string();
        s.style = style;
        s.last = None;
        s.so_far = None;
        s.requested_at = None;
        self.stop.clear();
        if self.interrupted() {
            self.stop.request(StopReason::Interrupted);
        }
    }

    /// The command is now doing `what` (`compiling the kernel`); `cooperative` when that
    /// work polls [`Watch::control`]'s stop request and reports by itself.
    pub(crate) fn doing(&self, what: &str, cooperative: bool) {
        let mut s = self.lock();
        s.begin(what, cooperative);
        if s.bar.is_none() && std::io::stderr().is_terminal() {
            let bar = ProgressBar::new_spinner();
            bar.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("a valid template"));
            s.bar = Some(bar);
        }
        let line = format!("{}: {what}", s.head);
        if let Some(bar) = &s.bar {
            bar.set_message(line);
        }
    }

    /// The command waits for an export of a kernel file (`what`), which polls the stop
    /// request for the time budget and Ctrl-C and then ends with an error of kind
    /// `Stopped` ([`Watch::stopped_detail`] says why), so that the next case can go on;
    /// the memory budget ends the command at once, as for work that does not poll.
    pub(crate) fn doing_export(&self, what: &str) {
        self.doing(what, true);
        self.lock().memory_ends = true;
    }

    /// Whether a stop of the current case was requested (by a budget or Ctrl-C).
    pub(crate) fn stop_requested(&self) -> bool {
        self.stop.requested().is_some()
    }

    /// Why the current case was stopped and how far it got, as a partial report says it
    /// (`stopped by the time budget of 2 s while ..., after 2.0 s with 180 MiB resident;
    /// nothing was proved`).
    pub(crate) fn stopped_detail(&self) -> String {
        let s = self.lock();
        let reason = self.stop.requested().unwrap_or(StopReason::Interrupted);
        s.detail(reason, s.doing.as_deref().unwrap_or("working"))
    }

    /// The command is doing `what` and prints its results as it goes (a table of cases run
    /// in child processes): budgets and Ctrl-C hold, and no progress line is drawn over
    /// its output.
    pub(crate) fn working(&self, what: &str) {
        self.lock().begin(what, false);
    }

    /// What the command has decided so far, said by the partial report if the watchdog
    /// ends it.
    pub(crate) fn so_far(&self, note: &str) {
        self.lock().so_far = Some(note.to_string());
    }

    /// The work is done: nothing is being done that the watchdog would have to end, and
    /// the progress line is cleared (call it before printing results).
    pub(crate) fn idle(&self) {
        let mut s = self.lock();
        s.doing = None;
        // A stop requested meanwhile gets its grace period from now (see `tick`).
        s.requested_at = None;
        if let Some(bar) = s.bar.take() {
            bar.finish_and_clear();
        }
    }

    /// The hooks an exploration of the current case runs with: the stop request, the
    /// progress line, and the case's start as the clock of its time budget.
    pub(crate) fn control(&self) -> Control<'static> {
        static PROGRESS: fn(&Progress) = |p| watch().progress(p);
        Control { stop: Some(&watch().stop), progress: Some(&PROGRESS), since: Some(self.lock().since) }
    }

    fn progress(&self, p: &Progress) {
        let mut s = self.lock();
        let (states, seconds) = s.last.map_or((0, 0.0), |l| (l.states, l.seconds));
        if p.seconds > seconds {
            s.rate = p.states.saturating_sub(states) as f64 / (p.seconds - seconds);
        }
        s.last = Some(*p);
        if let Some(bar) = &s.bar {
            bar.set_message(format!(
                "{}: {} states ({:.0}/s), depth {}, {} MiB",
                s.head,
                p.states,
                s.rate,
                p.depth,
                s.resident.max(p.memory_bytes) >> 20
            ));
        }
    }

    /// How long to sleep before the next sample: [`FAST_TICK`] while a process semcheck
    /// started runs within [`FAST_MARGIN`] of the memory budget, else [`TICK`].
    fn interval(&self) -> Duration {
        if !semcheck::children::any_running() {
            return TICK;
        }
        let s = self.lock();
        match s.limits.memory_bytes {
            Some(budget) if s.resident.saturating_add(FAST_MARGIN) >= budget => FAST_TICK,
            _ => TICK,
        }
    }

    /// One sample: budgets, a pending stop, the progress line.
    fn tick(&self) {
        let resident = resident_bytes().unwrap_or(0);
        let mut s = self.lock();
        s.resident = resident;
        // A Ctrl-C or signal while no registered work runs (between cases; making the
        // managed environment before the first export) is left to the command for a grace
        // period, then ends it here.
        let doing = match s.doing.clone() {
            Some(doing) => doing,
            None if self.stop.requested() == Some(StopReason::Interrupted) => {
                let at = *s.requested_at.get_or_insert_with(Instant::now);
                if at.elapsed() < GRACE {
                    return;
                }
                "preparing".to_string()
            }
            None => return,
        };
        if self.stop.requested().is_none() {
            if s.limits.memory_bytes.is_some_and(|m| resident >= m) {
                self.stop.request(StopReason::Memory);
            } else if s.limits.seconds.is_some_and(|m| s.since.elapsed().as_secs_f64() >= m) {
                self.stop.request(StopReason::Time);
            }
        }
        if let Some(reason) = self.stop.requested() {
            let at = *s.requested_at.get_or_insert_with(Instant::now);
            if !s.cooperative || (s.memory_ends && reason == StopReason::Memory) || at.elapsed() >= GRACE {
                self.end(&mut s, reason, &doing);
            }
        }
        if let (Some(bar), false) = (&s.bar, s.cooperative) {
            bar.set_message(format!(
                "{}: {doing} ({:.1} s, {} MiB)",
                s.head,
                s.since.elapsed().as_secs_f64(),
                resident >> 20
            ));
        }
    }

    /// Prints the partial report of work that did not stop by itself and ends the process.
    fn end(&self, s: &mut State, reason: StopReason, doing: &str) -> ! {
        if let Some(bar) = s.bar.take() {
            bar.finish_and_clear();
        }
        let seconds = s.since.elapsed().as_secs_f64();
        let detail = s.detail(reason, doing);
        let mut out = std::io::stdout().lock();
        let _ = match s.style {
            Style::Text => writeln!(out, "{}: INCOMPLETE\n  {detail}", s.head),
            Style::Json if sarif_requested() => {
                let log = super::sarif::stopped(&format!("{}: not proved: {detail}", s.head));
                writeln!(out, "{}", serde_json::to_string_pretty(&log).expect("JSON of plain data"))
            }
            Style::Json => {
                let raw: Vec<String> = std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
                let stopped = json!({
                    "kind": "stopped",
                    "case": s.head,
                    "verdict": "incomplete",
                    "incomplete": {"reason": reason, "detail": detail},
                    "states": s.last.map_or(0, |p| p.states),
                    "seconds": seconds,
                });
                let summary = json!({
                    "cases": 1,
                    "seconds": seconds,
                    "peak_rss_bytes": semcheck::memory::peak_resident_bytes(),
                });
                let doc = super::output::results(
                    &super::output::requested_command(&raw),
                    EXIT_INCOMPLETE,
                    vec![stopped],
                    summary,
                );
                writeln!(out, "{}", serde_json::to_string_pretty(&doc).expect("JSON of plain data"))
            }
            Style::Note => {
                eprintln!("semcheck: {}: incomplete: {detail}", s.head);
                Ok(())
            }
        };
        let _ = out.flush();
        // Exiting runs `semcheck::cleanup::now`: the script's process group is killed.
        std::process::exit(EXIT_INCOMPLETE);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn elapsed_seconds_keep_two_significant_digits_below_a_second() {
        let said: Vec<String> =
            [12.345, 1.0, 0.95, 0.0123, 0.001234, 0.0].into_iter().map(super::elapsed_text).collect();
        assert_eq!(said, ["12.3", "1.0", "0.95", "0.012", "0.0012", "0.0"]);
    }
}
