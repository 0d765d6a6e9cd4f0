//! One front-end process for a whole command: `python -m semcheck.frontend serve`
//! (`python/semcheck/frontend/server.py`) imports JAX once, without starting a backend, and
//! forks **workers** (`worker.py`), each serving the exports of one script in turn: it
//! starts a backend with the request's device count, exports, ends the backend and puts
//! back what the script changed, so each document is the one a fresh
//! `python -m semcheck.frontend export` writes (`python/tests/test_server.py` compares
//! them), without paying for Python and JAX's imports, the fork's copied pages and JAX's
//! first-call costs again. Up to one worker per core runs at once, so the sizes of
//! `--devices 2-8` or `--sizes` that [`super::prefetch`] asks for ahead are traced in
//! parallel. A worker retires (and a fresh one is forked) when it cannot promise a fresh
//! process's document, and after 16 exports.
//!
//! Process hygiene: the server runs in a process group of its own ([`crate::children`]);
//! each worker leads a group of its own, which the server announces (`started`) for each
//! export and this module registers ([`crate::children::adopt`]) so that its memory is
//! counted and it is killed when semcheck stops; a worker whose script left a process
//! running retires, and the server kills its group; a worker dies with the server. The
//! server's own memory is not counted ([`crate::children::uncounted_leader`]): each
//! worker shares it and counts it already. A server idle for [`IDLE_SECONDS`] exits; the
//! next export starts a new one.
//!
//! `SEMCHECK_EXPORT=process` turns the server off: one `python -m semcheck.frontend
//! export` process per export, as before.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

use super::env::PythonEnv;

/// How long the server waits, with nothing to do, before it exits.
pub const IDLE_SECONDS: u32 = 3;

/// Whether exports go through the server (`SEMCHECK_EXPORT` is not `process`).
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("SEMCHECK_EXPORT").map_or(true, |v| v != "process"))
}

/// A running server.
pub(crate) struct Server {
    stdin: Mutex<Option<ChildStdin>>,
    state: Mutex<State>,
    changed: Condvar,
}

/// What the server has reported.
#[derive(Default)]
struct State {
    /// The ended exports, by request id.
    done: HashMap<u64, Ended>,
    /// The process group of each running export, by request id.
    groups: HashMap<u64, i32>,
    /// The server has ended: no more reports will come.
    ended: bool,
}

/// How an export ended.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ended {
    /// Its exit status.
    pub(crate) status: ExitStatus,
    /// Its wall-clock seconds, from the moment a worker took it to its end (not the time
    /// it queued for a core).
    pub(crate) seconds: f64,
    /// Its peak resident memory, in bytes.
    pub(crate) max_rss_bytes: u64,
}

/// One export sent to a server.
pub(crate) struct Request {
    server: Arc<Server>,
    id: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The server of this process, started if there is none or the last one ended.
fn current(py: &PythonEnv, pythonpath: &std::ffi::OsStr) -> std::io::Result<Arc<Server>> {
    static CURRENT: Mutex<Option<Arc<Server>>> = Mutex::new(None);
    let mut slot = lock(&CURRENT);
    if let Some(s) = slot.as_ref().filter(|s| !lock(&s.state).ended) {
        return Ok(s.clone());
    }
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut cmd = Command::new(&py.python);
    cmd.args(["-m", "semcheck.frontend", "serve", "--jobs", &jobs.to_string()])
        .args(["--idle-seconds", &IDLE_SECONDS.to_string()])
        .env("PYTHONPATH", pythonpath)
        .env("SEMCHECK_API_CHILD", "1")
        .env(super::env::EXPORTING, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(dir) = super::xla_cache() {
        cmd.env("SEMCHECK_XLA_CACHE", dir);
    }
    let mut child = crate::children::spawn(&mut cmd)?;
    crate::children::uncounted_leader(child.id() as i32);
    let stdin = child.stdin.take();
    let stdout = child.stdout.take().ok_or_else(|| std::io::Error::other("no pipe from the export server"))?;
    let server = Arc::new(Server { stdin: Mutex::new(stdin), state: Mutex::default(), changed: Condvar::new() });
    let reader = server.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            reader.report(&line);
        }
        // The server has ended (idle, killed, or failed): whatever it ran is gone.
        let _ = crate::children::wait(&mut child);
        let mut state = lock(&reader.state);
        for (_, g) in state.groups.drain() {
            crate::children::forget(g);
        }
        state.ended = true;
        reader.changed.notify_all();
    });
    *slot = Some(server.clone());
    Ok(server)
}

impl Server {
    /// Reads one line of the server's reports.
    fn report(&self, line: &str) {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else { return };
        let Some(id) = msg.get("id").and_then(serde_json::Value::as_u64) else { return };
        let mut state = lock(&self.state);
        if let Some(pid) = msg.get("started").and_then(serde_json::Value::as_i64) {
            crate::children::adopt(pid as i32);
            state.groups.insert(id, pid as i32);
        }
        if let Some(raw) = msg.get("status").and_then(serde_json::Value::as_i64) {
            if let Some(g) = state.groups.remove(&id) {
                crate::children::forget(g);
            }
            let seconds = msg.get("seconds").and_then(serde_json::Value::as_f64).unwrap_or(0.0);
            let kib = msg.get("max_rss_kib").and_then(serde_json::Value::as_u64).unwrap_or(0);
            if let Some(why) = msg.get("retired").and_then(serde_json::Value::as_str) {
                tracing::debug!("the export worker of request {id} retired: {why}");
            }
            let ended = Ended { status: ExitStatus::from_raw(raw as i32), seconds, max_rss_bytes: kib * 1024 };
            state.done.insert(id, ended);
            self.changed.notify_all();
        }
    }

    /// Sends one request line; `false` when the server is gone.
    fn send(&self, line: &str) -> bool {
        let mut stdin = lock(&self.stdin);
        match stdin.as_mut() {
            Some(pipe) => pipe.write_all(line.as_bytes()).and_then(|()| pipe.flush()).is_ok(),
            None => false,
        }
    }
}

/// Asks a server to run the export `job` describes: its script at its devices, the
/// document into its `out` file and its stderr into its `err_path`, tracing for its TPU,
/// recording values in JAX's TPU interpret mode if asked, the script given its arguments.
/// `None` when no server could take it.
pub(crate) fn submit(job: &super::Job) -> Option<Request> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let line = serde_json::json!({
        "id": id,
        "file": job.path,
        "devices": job.devices,
        "out": job.out,
        "err": job.err_path,
        "tpu": job.tpu,
        "interpret_values": job.interpret,
        "argv": job.args,
    })
    .to_string()
        + "\n";
    // A server that went idle between our look and our request is replaced once.
    for _ in 0..2 {
        let server = current(&job.py, &job.pythonpath).ok()?;
        if server.send(&line) {
            return Some(Request { server, id });
        }
        lock(&server.state).ended = true;
    }
    None
}

impl Request {
    /// How the export ended (or that the server ended first: it was killed, or went
    /// idle before it read the request), unless `stopped` says to stop (asked every 20 ms): then the
    /// server is told to cancel the export (it kills the worker running it, or drops it
    /// from its queue), and its report is awaited for a moment, so that nothing of it
    /// runs on.
    pub(crate) fn wait_unless(&self, stopped: &dyn Fn() -> bool) -> Waited {
        let poll = std::time::Duration::from_millis(20);
        let mut state = lock(&self.server.state);
        let mut cancelled: Option<std::time::Instant> = None;
        loop {
            if let Some(ended) = state.done.remove(&self.id) {
                return if cancelled.is_some() { Waited::Stopped } else { Waited::Ended(ended) };
            }
            if state.ended {
                return if cancelled.is_some() { Waited::Stopped } else { Waited::ServerGone };
            }
            match cancelled {
                None if stopped() => {
                    drop(state);
                    let line = serde_json::json!({"cancel": self.id}).to_string() + "\n";
                    if !self.server.send(&line) {
                        return Waited::Stopped;
                    }
                    cancelled = Some(std::time::Instant::now());
                    state = lock(&self.server.state);
                    continue;
                }
                Some(at) if at.elapsed() >= CANCEL_WAIT => return Waited::Stopped,
                _ => {}
            }
            state = self.server.changed.wait_timeout(state, poll).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

/// How long a cancelled export's end is awaited (the server kills its worker at once).
const CANCEL_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// How waiting for an export ended.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Waited {
    /// The export ended by itself.
    Ended(Ended),
    /// The server ended first (it was killed, or went idle before it read the request).
    ServerGone,
    /// The wait was stopped and the export cancelled.
    Stopped,
}
