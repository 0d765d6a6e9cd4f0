//! The rule checks of the threaded runtime, with the model's rule names and wording.
//!
//! The runtime does not re-run the model's step function: it observes the real execution
//! (lifecycle words, in-flight access counters, semaphore values, output numbers) and
//! reports a [`Violation`] of the same [`Rule`] the explorer would, described with the
//! [`Program`]'s own names (`describe_op`, `cell_full_name`, `sem_full_name`).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;

use semcheck_model::{DeviceId, DmaKey, Event, Program, Rule, Violation};

/// What a run reports (instrumentation: plain `std`): its first violation and, for a sink
/// that records them, the model events in the order they took effect.
#[derive(Debug, Default)]
pub struct Sink {
    first: Mutex<Option<Violation>>,
    abort: AtomicBool,
    /// Races observed but not stopped at (`RunConfig::stop_on_race == false`).
    races: Mutex<Option<Violation>>,
    /// Whether `events` is kept.
    recording: bool,
    /// The model events of the run, in the order they took effect.
    events: Mutex<Vec<Event>>,
}

impl Sink {
    /// A sink that also records the model events of the run (see [`Sink::events`]).
    pub fn recording() -> Sink {
        Sink { recording: true, ..Sink::default() }
    }

    /// Logs a model event that has just taken effect (a no-op unless recording). The
    /// runtime logs each event within the step that applies it, so that under a backend
    /// that runs one thread at a time (loom, shuttle) the log is a schedule of the model.
    pub fn log(&self, event: Event) {
        if self.recording {
            self.events.lock().unwrap_or_else(|e| e.into_inner()).push(event);
        }
    }

    /// The model events logged so far.
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Records `v` if it is the first violation of the run, and asks every thread to stop.
    pub fn record(&self, v: Violation) {
        let mut first = self.first.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some(v);
        }
        self.abort.store(true, Ordering::SeqCst);
    }

    /// Whether a violation has been recorded.
    pub fn aborted(&self) -> bool {
        self.abort.load(Ordering::SeqCst)
    }

    /// Notes a race and lets the run go on (so that its numbers can still be compared).
    pub fn note_race(&self, v: Violation) {
        self.races.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(v);
    }

    /// The first race noted with [`Sink::note_race`], if any.
    pub fn take_race(&self) -> Option<Violation> {
        self.races.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Forgets the violation and events of a previous run (one sink serves many shuttle iterations).
    pub fn reset(&self) {
        *self.first.lock().unwrap_or_else(|e| e.into_inner()) = None;
        *self.races.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.events.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.abort.store(false, Ordering::SeqCst);
    }

    /// The first violation, if any.
    pub fn take(&self) -> Option<Violation> {
        self.first.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// A device's place in its life, packed in one word: `invocation << 2 | phase`.
#[derive(Debug)]
pub(crate) struct Lifecycle(AtomicU32);

const BEFORE: u32 = 0;
const INSIDE: u32 = 1;
const AFTER: u32 = 2;

impl Lifecycle {
    pub(crate) fn new() -> Lifecycle {
        Lifecycle(AtomicU32::new(BEFORE))
    }

    pub(crate) fn enter(&self, inv: u32) {
        self.0.store(inv << 2 | INSIDE, Ordering::SeqCst);
    }

    pub(crate) fn exit(&self, inv: u32) {
        self.0.store(inv << 2 | AFTER, Ordering::SeqCst);
    }

    /// `Ok` if the device has entered invocation `from` and not yet left invocation `to`
    /// (the same one, unless a kernel of a program hands a semaphore on), else why not
    /// (the model's wording, [`Program::inside_kernels_at`]).
    pub(crate) fn inside(&self, from: u32, to: u32, program: &Program) -> Result<(), String> {
        let w = self.0.load(Ordering::SeqCst);
        let (inv, phase) = (w >> 2, w & 3);
        let name = |k: u32| program.invocation_name(k);
        match phase {
            INSIDE if from <= inv && inv <= to => Ok(()),
            AFTER if from <= inv && inv < to => Ok(()),
            BEFORE if inv == from => Err(format!("has not entered {}", name(from))),
            AFTER if inv + 1 == from => Err(format!("has not entered {} (it is still in {})", name(from), name(inv))),
            _ if inv < from => Err(format!("has not entered {} (it is still in {})", name(from), name(inv))),
            _ => Err(format!("has already left {}", name(to))),
        }
    }
}

/// The in-flight DMA accesses of one cell (instrumentation for the race rule, behind a
/// plain `std` lock: no scheduling point).
#[derive(Debug, Default)]
pub(crate) struct Tracking {
    pub(crate) inflight: Mutex<Inflight>,
}

/// The DMAs in flight on one cell.
#[derive(Debug, Default)]
pub(crate) struct Inflight {
    /// DMAs that have yet to read the cell (their source).
    pub(crate) readers: Vec<DmaKey>,
    /// DMAs that have yet to write the cell (their destination).
    pub(crate) writers: Vec<DmaKey>,
}

pub(crate) fn race(
    program: &Program,
    cell: u32,
    who: &str,
    access: &str,
    what: &str,
    other: DmaKey,
    d: DeviceId,
) -> Violation {
    program.race_violation(semcheck_model::program::CellId(cell), d, who, access, what, other)
}

pub(crate) fn deadlock(message: String, devices: Vec<DeviceId>) -> Violation {
    Violation::new(Rule::Deadlock, devices, format!("deadlock: {message}"))
}

/// The violation a tool's own panic stands for: loom's and shuttle's deadlock detection
/// is `deadlock`, loom's `UnsafeCell` causality check is `race`; any other panic is not a
/// rule of the model and yields `None`.
pub fn from_tool_panic(tool: &str, message: &str) -> Option<Violation> {
    let rule = if message.contains("deadlock") {
        Rule::Deadlock
    } else if message.contains("Causality violation") {
        Rule::Race
    } else {
        return None;
    };
    let first = message.lines().next().unwrap_or(message);
    Some(Violation::new(rule, Vec::new(), format!("{tool} detected it: {first}")))
}

/// The text of a panic payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}

/// The panic message with which a violation stops a loom or shuttle execution.
pub const VIOLATION_PANIC: &str = "semcheck violation";
