//! The processes semcheck starts (the Python export of a kernel file, the managed
//! environment's `python -m venv` and `pip`), each in a process group of its own, so that
//! whatever they start in turn (a child process of the user's script) can be counted and
//! ended with them.
//!
//! * [`spawn`] starts a command as the leader of a new process group
//!   (`process_group(0)`) and registers the group.
//! * [`wait`] waits for the leader without reaping it first: once it has exited, the rest
//!   of its group (a background child the script left) is killed, then the leader is
//!   reaped. Until then the leader's pid stays taken, so the group id cannot name another
//!   process's group.
//! * [`kill_all`] kills every registered group (`killpg(SIGKILL)`), then every process
//!   still descended from semcheck: [`crate::cleanup`] calls it on every end of semcheck,
//!   a budget stop, a signal or a panic included.
//! * [`resident_bytes`] sums the resident memory of every process of the registered
//!   groups and every process descended from semcheck (read from `/proc/*/stat`), for the
//!   memory budget.
//!
//! A process that leaves its group on purpose (`setsid`, `setpgid`: a daemon) is still
//! reached: on Linux semcheck is a child subreaper ([`become_subreaper`]), so such a
//! process, once the parent it left behind has died, becomes a child of semcheck rather
//! than of `init`, stays in semcheck's process tree, is counted in the memory budget and
//! is killed when semcheck ends. Only a process started by something outside that tree
//! (a service manager asked over a socket) escapes.

use std::io::{self, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// The process groups started and not yet ended, by group id (the leader's pid).
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn groups() -> MutexGuard<'static, Vec<i32>> {
    GROUPS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Makes this process a child subreaper (Linux's `PR_SET_CHILD_SUBREAPER`; nothing
/// elsewhere; calling it again changes nothing): a process descended from it whose parent dies becomes its child,
/// not `init`'s, so that it stays within reach of [`kill_all`] and [`resident_bytes`]
/// even when it left its process group; one that has ended is reaped whenever a group
/// starts or ends. The `semcheck` command calls it first thing; a program that uses this
/// library calls it if it wants the same for its own process (it then has every orphan of
/// its descendants to reap, its own children's included: a child it waits for itself
/// must be started with [`spawn`]).
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system call that sets a flag of this process.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } == 0 {
        SUBREAPER.store(true, Ordering::SeqCst);
    }
}

/// Whether [`become_subreaper`] made this process a subreaper: only then does semcheck
/// answer for every process descended from it (count, kill and reap them), not only for
/// the groups it started.
static SUBREAPER: AtomicBool = AtomicBool::new(false);

fn is_subreaper() -> bool {
    SUBREAPER.load(Ordering::SeqCst)
}

/// The last 64 KiB of a child's output file (a script may print without bound: its
/// stderr is read for the end of what it said, never whole).
pub fn read_tail(path: &std::path::Path) -> String {
    use std::io::{Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else { return String::new() };
    let len = f.metadata().map_or(0, |m| m.len());
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(64 << 10)));
    let mut bytes = Vec::new();
    let _ = f.take(64 << 10).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Set by [`kill_all`]: semcheck is ending, and [`spawn`] starts nothing any more.
static ENDING: AtomicBool = AtomicBool::new(false);

/// The parent's pid a process [`spawn`] starts finds in this variable of its environment
/// (semcheck's pid): the front end's export and server run nothing of the user's when
/// their parent is another process (semcheck ended while they were starting: they were
/// reparented).
pub const PARENT_PID: &str = "SEMCHECK_PARENT_PID";

/// Starts `cmd` as the leader of a new process group, registered until [`wait`] or
/// [`kill_all`] ends it; with [`PARENT_PID`] set in its environment. An error once
/// [`kill_all`] has run (semcheck is ending: another thread's `exit` ran it while this one
/// was about to start a process, which would otherwise outlive semcheck).
pub fn spawn(cmd: &mut Command) -> io::Result<Child> {
    crate::cleanup::install();
    reap_orphans();
    // Registered under the locks, so that `kill_all` never misses a started group and
    // `reap_orphans` never reaps the child before its `Child` does.
    let mut all = groups();
    let mut unreaped = unreaped();
    if ENDING.load(Ordering::SeqCst) {
        return Err(io::Error::other("semcheck is ending: it starts no process any more"));
    }
    let child = cmd.process_group(0).env(PARENT_PID, std::process::id().to_string()).spawn()?;
    all.push(child.id() as i32);
    unreaped.push(child.id() as i32);
    Ok(child)
}

/// The children [`spawn`] started that their `Child` has not reaped yet, by pid:
/// [`reap_orphans`] leaves them alone.
static UNREAPED: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn unreaped() -> MutexGuard<'static, Vec<i32>> {
    UNREAPED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Reaps the children of semcheck that have ended and that no `Child` of [`spawn`] waits
/// for: processes reparented to semcheck, a subreaper, when their parent died (what a
/// script started, once its group is killed). Called whenever a group is started or
/// ended, so that they do not hold their pids until semcheck ends (a script that starts
/// processes, run at every size of `--sizes 2..256`, could otherwise use up a container's
/// pid limit).
fn reap_orphans() {
    if !is_subreaper() {
        return;
    }
    let owned = unreaped();
    for pid in crate::memory::ended_children() {
        if !owned.contains(&pid) {
            // SAFETY: plain system call on a child of ours that has ended; no status is read.
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        }
    }
}

/// Registers the group `pgid` of a process semcheck did not spawn itself but that a
/// process it spawned made for it (a child the export server forked: it leads a group of
/// its own): [`kill_all`] kills it and [`resident_bytes`] counts it, until [`forget`].
pub fn adopt(pgid: i32) {
    let mut all = groups();
    if pgid > 1 && !all.contains(&pgid) {
        all.push(pgid);
    }
}

/// The groups whose leader [`resident_bytes`] leaves out: the export server, whose
/// memory (Python and JAX imported once) every child it forks shares copy-on-write and
/// counts in its own resident memory already: counting both counted it twice (a 256 MiB
/// budget was over before the script ran).
static UNCOUNTED: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Leaves the leader of group `pgid` (a process [`spawn`]ed) out of [`resident_bytes`];
/// the rest of its group still counts, and [`kill_all`] still kills it.
pub fn uncounted_leader(pgid: i32) {
    let mut all = UNCOUNTED.lock().unwrap_or_else(|e| e.into_inner());
    if !all.contains(&pgid) {
        all.push(pgid);
    }
}

/// Unregisters a group [`adopt`]ed earlier, once whoever made it has ended it.
pub fn forget(pgid: i32) {
    groups().retain(|&g| g != pgid);
}

/// Whether the leader `pid` has exited, without reaping it (`waitid` with `WNOWAIT`).
fn has_exited(pid: i32) -> io::Result<bool> {
    // SAFETY: `waitid` writes only into `info`, a zeroed `siginfo_t` we own.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    // SAFETY: plain system call on our own child.
    if unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `si_pid` is set by `waitid` (0 when no child changed state).
    Ok(unsafe { info.si_pid() } != 0)
}

/// Reaps `child` (started by [`spawn`]), then the orphans that have ended.
fn reaped(child: &mut Child) -> io::Result<ExitStatus> {
    let status = child.wait();
    unreaped().retain(|&p| p != child.id() as i32);
    reap_orphans();
    status
}

/// Sends SIGKILL to every process of group `pgid`.
fn kill_group(pgid: i32) {
    if pgid > 1 {
        // SAFETY: plain system call; a group that no longer exists gives ESRCH.
        unsafe { libc::killpg(pgid, libc::SIGKILL) };
    }
}

/// Waits for `child`, started by [`spawn`], polling every few milliseconds. `Err` when
/// the group was ended meanwhile by [`kill_all`] (the command is stopping). Once the
/// leader exits, what is left of its group is killed.
pub fn wait(child: &mut Child) -> io::Result<ExitStatus> {
    wait_until(child, None, &|| false).map(|status| status.expect("no deadline"))
}

/// [`wait`] for at most `seconds`: `Ok(None)` when the time ran out, the whole group then
/// killed and the leader reaped.
pub fn wait_for(child: &mut Child, seconds: f64) -> io::Result<Option<ExitStatus>> {
    let deadline = std::time::Instant::now() + Duration::from_secs_f64(seconds.clamp(0.0, 1e9));
    wait_until(child, Some(deadline), &|| false)
}

/// [`wait`] until `stopped` says to stop (asked every few milliseconds): `Ok(None)` then,
/// the whole group killed and the leader reaped.
pub fn wait_unless(child: &mut Child, stopped: &dyn Fn() -> bool) -> io::Result<Option<ExitStatus>> {
    wait_until(child, None, stopped)
}

fn wait_until(
    child: &mut Child,
    deadline: Option<std::time::Instant>,
    stopped: &dyn Fn() -> bool,
) -> io::Result<Option<ExitStatus>> {
    let pgid = child.id() as i32;
    let end = |child: &mut Child| {
        let mut all = groups();
        kill_group(pgid);
        all.retain(|&g| g != pgid);
        drop(all);
        UNCOUNTED.lock().unwrap_or_else(|e| e.into_inner()).retain(|&g| g != pgid);
        reaped(child)
    };
    loop {
        if !groups().contains(&pgid) {
            let _ = reaped(child);
            return Err(io::Error::other("stopped"));
        }
        if has_exited(pgid)? {
            return end(child).map(Some);
        }
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) || stopped() {
            end(child)?;
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The groups led by a semcheck of semcheck's own (a `bench` or `mutate` case): ended
/// with `SIGTERM` first, so that it ends the processes it started in turn (in groups of
/// their own, out of this process's reach), then with the rest.
static SEMCHECKS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// How long [`kill_all`] waits for the semchecks it started to end on `SIGTERM`.
const SEMCHECK_GRACE: Duration = Duration::from_secs(2);

/// Runs a semcheck command (`cmd` names this binary) to its end in a group of its own and
/// returns its output, like [`Command::output`]; ended on every end of this semcheck, with
/// `SIGTERM` first so that it ends what it started too.
pub fn semcheck_output(cmd: &mut Command) -> io::Result<std::process::Output> {
    use std::process::Stdio;
    let mut child = {
        let mut semchecks = SEMCHECKS.lock().unwrap_or_else(|e| e.into_inner());
        let child = spawn(cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()))?;
        semchecks.push(child.id() as i32);
        child
    };
    let (out, err) =
        (read_in_background(child.stdout.take(), u64::MAX), read_in_background(child.stderr.take(), u64::MAX));
    let status = wait(&mut child);
    SEMCHECKS.lock().unwrap_or_else(|e| e.into_inner()).retain(|&g| g != child.id() as i32);
    let status = status?;
    Ok(std::process::Output { status, stdout: out.recv().unwrap_or_default(), stderr: err.recv().unwrap_or_default() })
}

/// Reads at most `cap` bytes of a child's `pipe` on a thread of its own (so that a child
/// printing much cannot block on a full pipe while it is waited for); the bytes come on
/// the returned channel once the pipe ends or the cap is reached (the pipe is then closed).
pub fn read_in_background(pipe: Option<impl Read + Send + 'static>, cap: u64) -> std::sync::mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(pipe) = pipe {
            let _ = pipe.take(cap).read_to_end(&mut bytes);
        }
        let _ = tx.send(bytes);
    });
    rx
}

/// Ends the semchecks semcheck started with `SIGTERM` and waits up to
/// [`SEMCHECK_GRACE`] for their groups to be gone.
fn end_semchecks() {
    let Ok(semchecks) = SEMCHECKS.try_lock().map(|g| g.clone()) else { return };
    if semchecks.is_empty() {
        return;
    }
    for &g in &semchecks {
        // SAFETY: plain system call; a group that no longer exists gives ESRCH.
        unsafe { libc::killpg(g, libc::SIGTERM) };
    }
    let start = std::time::Instant::now();
    // SAFETY: signal 0 only checks that the group exists.
    while start.elapsed() < SEMCHECK_GRACE && semchecks.iter().any(|&g| unsafe { libc::killpg(g, 0) } == 0) {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `cmd` (in a group of its own) to its end, like [`Command::status`].
pub fn status(cmd: &mut Command) -> io::Result<ExitStatus> {
    let mut child = spawn(cmd)?;
    wait(&mut child)
}

/// Kills every process group started and not yet ended, then every process still
/// descended from semcheck (one that left its group). Called as semcheck ends: from then
/// on [`spawn`] starts nothing (a thread still at work would otherwise start a process
/// after this ran, and it would outlive semcheck). Safe to call from any thread at any
/// time; it waits only for the semchecks it started (up to 2 s) to end on `SIGTERM`, not
/// for the rest.
pub fn kill_all() {
    ENDING.store(true, Ordering::SeqCst);
    end_semchecks();
    // `try_lock` a few times: called while exiting, a thread stuck holding the lock
    // must not hang the exit.
    for _ in 0..50 {
        match GROUPS.try_lock() {
            Ok(mut all) => {
                all.drain(..).for_each(kill_group);
                break;
            }
            Err(std::sync::TryLockError::Poisoned(e)) => {
                e.into_inner().drain(..).for_each(kill_group);
                break;
            }
            Err(std::sync::TryLockError::WouldBlock) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    kill_descendants();
}

/// How many times [`kill_descendants`] looks again for processes descended from semcheck
/// (a process may start another as it is killed, which then becomes semcheck's child).
const KILL_ROUNDS: usize = 100;

/// Kills every process descended from semcheck that still runs, looking again until none
/// is left (at most [`KILL_ROUNDS`] times, a millisecond apart); only in a subreaper.
fn kill_descendants() {
    // Without a child, no descendant: no scan of `/proc` at the end of every command.
    if !is_subreaper() || crate::memory::own_children().is_empty() {
        return;
    }
    for _ in 0..KILL_ROUNDS {
        let running = crate::memory::running_descendants();
        if running.is_empty() {
            return;
        }
        for pid in running {
            // SAFETY: plain system call; a process that has just ended gives ESRCH.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Whether a process group semcheck started is running now.
pub fn any_running() -> bool {
    !groups().is_empty()
}

/// The resident memory, in bytes, of every process of the groups semcheck started and
/// that still run, and, in a subreaper, of every other process descended from semcheck
/// (0 when none, or without `/proc`).
pub fn resident_bytes() -> u64 {
    static SAMPLER: Mutex<crate::memory::TreeSampler> = Mutex::new(crate::memory::TreeSampler::new());
    let wanted = groups().clone();
    let total = SAMPLER.lock().unwrap_or_else(|e| e.into_inner()).resident_bytes(&wanted, is_subreaper());
    let leaders: Vec<i32> = UNCOUNTED.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let left_out: u64 = leaders
        .iter()
        .filter(|g| wanted.contains(g))
        .filter_map(|&g| crate::memory::resident_bytes(Some(g as u32)))
        .sum();
    total.saturating_sub(left_out)
}

/// How a process ended, in words: `exit 1`, `killed by signal 11 (SIGSEGV)`.
pub fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(sig)) => format!("killed by signal {sig} ({})", signal_name(sig)),
        (None, None) => "ended in an unknown way".to_string(),
    }
}

/// The name of a signal (`SIGSEGV`), or `unknown signal`.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => "unknown signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_counted_while_it_runs_and_its_leftover_child_killed_at_its_end() {
        become_subreaper();
        // The leader starts a background child that would outlive it, then exits.
        let dir = std::env::temp_dir().join(format!("semcheck-children-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pid_file = dir.join("child.pid");
        let script = format!("sleep 30 & echo $! > {}; sleep 0.3", pid_file.display());
        let mut child = spawn(Command::new("sh").args(["-c", &script])).unwrap();
        std::thread::sleep(Duration::from_millis(150));
        assert!(resident_bytes() > 0, "the group's memory is counted");
        let status = wait(&mut child).unwrap();
        assert!(status.success());
        let orphan: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let state = std::fs::read_to_string(format!("/proc/{orphan}/stat")).unwrap_or_default();
        assert!(state.is_empty() || state.contains(") Z"), "the background child outlived its group: {state}");
        // Its parent gone, it was reparented to this process (a subreaper), which reaps it.
        reap_orphans();
        assert!(!std::path::Path::new(&format!("/proc/{orphan}")).exists(), "the orphan was not reaped");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn signals_are_named() {
        // Through `status`: in this process, a subreaper, `reap_orphans` may reap any
        // child it was not told about.
        let status = super::status(Command::new("sh").args(["-c", "kill -SEGV $$"])).unwrap();
        assert_eq!(describe(status), "killed by signal 11 (SIGSEGV)");
        let status = super::status(Command::new("sh").args(["-c", "exit 4"])).unwrap();
        assert_eq!(describe(status), "exit 4");
    }
}
