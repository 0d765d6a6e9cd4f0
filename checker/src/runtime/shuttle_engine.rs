//! The shuttle engine: randomized schedules of the threaded runtime ([`super::sim`]).
//!
//! Every device, and every DMA completion event (`DmaMode::PerEvent`), is a shuttle
//! thread; the scheduler (random or PCT) picks which runs next at every lock, wait and
//! signal, so the order in which DMAs complete is the scheduler's own choice and a failing
//! schedule replays exactly. A sampled engine never proves anything: a campaign that finds
//! nothing is [`ShuttleVerdict::Incomplete`], with the number of iterations and the
//! scheduler.
//!
//! Schedules are recorded by a wrapper around the scheduler ("replay is just another
//! scheduler") and saved as a readable text file ([`ScheduleFile`]) that
//! [`replay`] runs again under shuttle's `ReplayScheduler`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use semcheck_model::{Program, Rule, Violation};
use serde::Serialize;
use shuttle::scheduler::{PctScheduler, RandomScheduler, ReplayScheduler, Schedule, Scheduler, Task, TaskId};
use shuttle::{Config as ShuttleConfig, Runner, UngracefulShutdownConfig};

use super::checks::{from_tool_panic, panic_message, Sink};
use super::{sim, RunConfig};

/// Which shuttle scheduler drives a campaign.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchedulerKind {
    /// Uniformly random choice at every scheduling point.
    Random,
    /// Probabilistic concurrency testing with this bug depth (preemptions).
    Pct {
        /// The bug depth.
        depth: usize,
    },
}

impl SchedulerKind {
    /// `random` or `pct(depth=3)`.
    pub fn name(&self) -> String {
        match self {
            SchedulerKind::Random => "random".to_string(),
            SchedulerKind::Pct { depth } => format!("pct(depth={depth})"),
        }
    }
}

/// The configuration of a shuttle campaign.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Campaign {
    /// The scheduler.
    pub scheduler: SchedulerKind,
    /// Most iterations (executions) to run.
    pub iterations: usize,
    /// The scheduler's seed.
    pub seed: u64,
}

/// A recorded schedule: the scheduler's data seed and every choice it made
/// (`Some(task)` a scheduling decision, `None` a random number).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RecordedSchedule {
    /// The seed of shuttle's data source for the execution.
    pub seed: u64,
    /// The choices, in order.
    pub steps: Vec<Option<usize>>,
}

impl RecordedSchedule {
    /// `3 1 1 r 2 …`: task ids, `r` for a random number.
    pub fn steps_text(&self) -> String {
        let words: Vec<String> = self.steps.iter().map(|s| s.map_or("r".to_string(), |t| t.to_string())).collect();
        words.join(" ")
    }

    fn to_shuttle(&self) -> Schedule {
        let mut s = Schedule::new(self.seed);
        for step in &self.steps {
            match step {
                Some(t) => s.push_task(TaskId::from(*t)),
                None => s.push_random(),
            }
        }
        s
    }
}

/// The outcome of a shuttle campaign.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum ShuttleVerdict {
    /// A rule is broken in the schedule recorded.
    Violation {
        /// The broken rule and its explanation.
        violation: Violation,
        /// The 1-based iteration that failed.
        iteration: usize,
        /// The failing schedule.
        schedule: RecordedSchedule,
    },
    /// Every iteration ran without a violation: nothing is proved.
    Incomplete {
        /// Iterations run.
        iterations: usize,
    },
}

/// A campaign's report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ShuttleReport {
    /// The verdict.
    pub verdict: ShuttleVerdict,
    /// The campaign.
    pub campaign: Campaign,
}

#[derive(Default)]
struct Recording {
    current: RecordedSchedule,
}

/// A scheduler that records the choices of the scheduler it wraps.
struct Recorder<S> {
    inner: S,
    rec: Arc<Mutex<Recording>>,
}

impl<S: Scheduler> Scheduler for Recorder<S> {
    fn new_execution(&mut self) -> Option<Schedule> {
        let s = self.inner.new_execution()?;
        self.rec.lock().unwrap_or_else(|e| e.into_inner()).current =
            RecordedSchedule { seed: s.seed, steps: Vec::new() };
        Some(s)
    }

    fn next_task(&mut self, runnable: &[&Task], current: Option<TaskId>, is_yielding: bool) -> Option<TaskId> {
        let t = self.inner.next_task(runnable, current, is_yielding)?;
        self.rec.lock().unwrap_or_else(|e| e.into_inner()).current.steps.push(Some(usize::from(t)));
        Some(t)
    }

    fn next_u64(&mut self) -> u64 {
        self.rec.lock().unwrap_or_else(|e| e.into_inner()).current.steps.push(None);
        self.inner.next_u64()
    }
}

fn shuttle_config() -> ShuttleConfig {
    let mut c = ShuttleConfig::new();
    c.failure_persistence = shuttle::FailurePersistence::None;
    c.silence_warnings = true;
    let mut u = UngracefulShutdownConfig::default();
    u.immediately_return_on_panic = true;
    c.ungraceful_shutdown_config = u;
    c
}

/// Runs `program` under `scheduler` until the first failing iteration; `Ok(None)` when no
/// iteration failed, `Err` for a panic that is not a rule of the model.
fn drive<S: Scheduler + 'static>(
    program: &Program,
    scheduler: S,
    run: RunConfig,
) -> Result<(usize, Option<(Violation, RecordedSchedule)>), String> {
    let rec = Arc::new(Mutex::new(Recording::default()));
    let runner = Runner::new(Recorder { inner: scheduler, rec: rec.clone() }, shuttle_config());
    let program = Arc::new(program.clone());
    let sink = Arc::new(Sink::default());
    let count = Arc::new(AtomicUsize::new(0));
    let (s, c) = (sink.clone(), count.clone());
    let outcome = catch_unwind(AssertUnwindSafe(move || {
        runner.run(move || {
            c.fetch_add(1, Ordering::SeqCst);
            s.reset();
            sim::run_into(&program, &run, &s);
        })
    }));
    let iterations = count.load(Ordering::SeqCst);
    match outcome {
        Ok(_) => Ok((iterations, None)),
        Err(payload) => {
            let msg = panic_message(payload.as_ref());
            let v = sink.take().or_else(|| from_tool_panic("shuttle", &msg)).ok_or(msg)?;
            let schedule = rec.lock().unwrap_or_else(|e| e.into_inner()).current.clone();
            Ok((iterations, Some((v, schedule))))
        }
    }
}

/// Runs a shuttle campaign on `program`.
pub fn check(program: &Program, campaign: Campaign) -> Result<ShuttleReport, String> {
    let run = RunConfig::shuttle();
    let (iterations, found) = match campaign.scheduler {
        SchedulerKind::Random => {
            drive(program, RandomScheduler::new_from_seed(campaign.seed, campaign.iterations), run)?
        }
        SchedulerKind::Pct { depth } => {
            drive(program, PctScheduler::new_from_seed(campaign.seed, depth, campaign.iterations), run)?
        }
    };
    let verdict = match found {
        Some((violation, schedule)) => ShuttleVerdict::Violation { violation, iteration: iterations, schedule },
        None => ShuttleVerdict::Incomplete { iterations },
    };
    Ok(ShuttleReport { verdict, campaign })
}

/// Replays a recorded schedule; the violation it reaches, if any.
pub fn replay(program: &Program, schedule: &RecordedSchedule) -> Result<Option<Violation>, String> {
    let replayer = ReplayScheduler::new_from_schedule(schedule.to_shuttle());
    Ok(drive(program, replayer, RunConfig::shuttle())?.1.map(|(v, _)| v))
}

/// A committed counterexample of the shuttle engine: the case, the broken rule and the
/// schedule, as a readable text file of `key value` lines (`#` starts a comment).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleFile {
    /// The protocol.
    pub protocol: String,
    /// The mutant, if any.
    pub mutant: Option<String>,
    /// Number of devices.
    pub devices: usize,
    /// Back-to-back invocations.
    pub repeat: u32,
    /// The rule the schedule breaks.
    pub rule: Rule,
    /// The scheduler and iteration that found it, for the record.
    pub found_by: String,
    /// The violation message when it was found.
    pub message: String,
    /// The schedule.
    pub schedule: RecordedSchedule,
}

impl ScheduleFile {
    /// The file's text, with the command that replays it.
    pub fn to_text(&self, path: &str) -> String {
        let mutant = self.mutant.as_deref().unwrap_or("-");
        let flag = self.mutant.as_deref().map_or(String::new(), |m| format!(" --mutant {m}"));
        format!(
            "# semcheck shuttle schedule, format 1\n\
             # violation: {}\n\
             # found by shuttle {}\n\
             # replay: semcheck check {}{flag} --devices {} --repeat {} --engine shuttle --replay {path}\n\
             # replayed by CI: cargo test --release --test shuttle committed_schedules_replay\n\
             protocol {}\nmutant {mutant}\ndevices {}\nrepeat {}\nrule {}\nseed {}\nsteps {}\n",
            self.message.replace('\n', " "),
            self.found_by,
            self.protocol,
            self.devices,
            self.repeat,
            self.protocol,
            self.devices,
            self.repeat,
            self.rule,
            self.schedule.seed,
            self.schedule.steps_text(),
        )
    }

    /// Parses a file written by [`ScheduleFile::to_text`].
    pub fn parse(text: &str) -> Result<ScheduleFile, String> {
        let mut f = ScheduleFile {
            protocol: String::new(),
            mutant: None,
            devices: 0,
            repeat: 1,
            rule: Rule::Race,
            found_by: String::new(),
            message: String::new(),
            schedule: RecordedSchedule::default(),
        };
        let (mut have_rule, mut have_steps) = (false, false);
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if let Some(c) = line.strip_prefix("# found by shuttle ") {
                f.found_by = c.to_string();
            }
            if let Some(c) = line.strip_prefix("# violation: ") {
                f.message = c.to_string();
            }
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            let bad = |what: &str| format!("line {}: {what} `{value}`", i + 1);
            match key {
                "protocol" => f.protocol = value.to_string(),
                "mutant" => f.mutant = (value != "-").then(|| value.to_string()),
                "devices" => f.devices = value.parse().map_err(|_| bad("bad device count"))?,
                "repeat" => f.repeat = value.parse().map_err(|_| bad("bad repeat count"))?,
                "rule" => {
                    f.rule = Rule::from_name(value).ok_or_else(|| bad("unknown rule"))?;
                    have_rule = true;
                }
                "seed" => f.schedule.seed = value.parse().map_err(|_| bad("bad seed"))?,
                "steps" => {
                    have_steps = true;
                    for w in value.split_whitespace() {
                        f.schedule.steps.push(if w == "r" {
                            None
                        } else {
                            Some(w.parse().map_err(|_| format!("line {}: bad step `{w}`", i + 1))?)
                        });
                    }
                }
                _ => return Err(format!("line {}: unknown key `{key}`", i + 1)),
            }
        }
        if f.protocol.is_empty() || f.devices == 0 || !have_rule || !have_steps {
            return Err("a schedule file needs `protocol`, `devices`, `rule` and `steps` lines".to_string());
        }
        Ok(f)
    }

    /// Reads and parses a file.
    pub fn read(path: &Path) -> Result<ScheduleFile, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        ScheduleFile::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}
