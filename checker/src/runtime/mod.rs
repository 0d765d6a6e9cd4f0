//! The threaded runtime: the kernel IR run by one thread per device.
//!
//! Semaphores are counters behind a mutex with blocking waits, buffers are shared cells
//! the devices and DMA engines read and write, and DMAs complete asynchronously on DMA
//! threads. The engine code (`runtime/engine/`: memory, semaphores, DMAs, devices) is
//! written once against a module named `sync` and mounted as real modules twice, once per
//! backend (see [`sync`]):
//!
//! * [`os`]: `std` threads normally (used by [`stress`]); **loom** with the `loom` feature
//!   (used by `loom_driver` and `tests/loom.rs`);
//! * [`sim`] (feature `shuttle`): shuttle's controlled threads (used by
//!   [`shuttle_engine`]).
//!
//! Each operation and each DMA event takes effect in one step for loom and shuttle (under
//! the lock of the semaphore it signals or waits on, or with no scheduling point inside),
//! and a recording [`checks::Sink`] logs its model [`semcheck_model::Event`] right there:
//! the shuttle engine's counterexamples are model schedules that replay on the model.
//!
//! The runtime checks the rules of the model with the model's names (see [`checks`]):
//! `race` from in-flight access counters on every cell (and, under loom, loom's own
//! `UnsafeCell` causality check), `wrong-result` by comparing real `f32` outputs with the
//! specification evaluated on the same random inputs ([`numeric`]), `deadlock` from the
//! tool's deadlock detection (loom, shuttle) or a timeout (`std`), `semaphore-leak` and
//! `outside-kernel` from the devices' lifecycle words and the real semaphore values.

pub mod checks;
#[cfg(feature = "loom")]
pub mod loom_driver;
pub mod numeric;
pub mod os;
pub mod schedule;
#[cfg(feature = "shuttle")]
pub mod shuttle_engine;
#[cfg(feature = "shuttle")]
pub mod sim;
pub mod stress;
pub mod sync;

use std::time::Duration;

/// How DMAs complete: the choice of orders the scheduler can explore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DmaMode {
    /// One engine thread per device completes the DMAs that device started, in start
    /// order, each `sent` before `received`. Orders *between* devices' DMAs, and between
    /// DMAs and every device's operations, are the scheduler's choice; two DMAs of one
    /// issuer never overtake each other. Uses `2N` threads (the last device runs on the
    /// calling thread). Used by `stress`.
    PerIssuer,
    /// Two engine threads shared by every device: one completes the local copies, the
    /// other the remote copies (`sent` then `received`), each in global start order. A
    /// local copy and a remote copy complete in either order, whoever issued them; two
    /// remote copies (or two local copies) never overtake each other. Uses `N + 2`
    /// threads with the last device on the calling thread: 4 at N = 2, within loom's 5.
    ByKind,
    /// Every completion event (`sent`, `received`, `done`) runs on a thread of its own:
    /// every order the model allows is a schedule.
    PerEvent,
}

/// How loom explores a case (see `loom_driver`, with the `loom` feature).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoomBound {
    /// Every interleaving (no preemption bound).
    Unbounded,
    /// At most this many preemptions per execution, explored to the end.
    Preemptions(usize),
    /// At most this many preemptions per execution, and stopped after this many seconds:
    /// a partial run that can find bugs but covers only part of even the bounded space.
    Partial {
        /// The preemption bound.
        preemptions: usize,
        /// The time after which loom stops.
        seconds: u64,
    },
}

impl LoomBound {
    /// Loom's preemption bound, if any.
    pub fn preemptions(self) -> Option<usize> {
        match self {
            LoomBound::Unbounded => None,
            LoomBound::Preemptions(k) | LoomBound::Partial { preemptions: k, .. } => Some(k),
        }
    }

    /// `exhaustive`, `bounded (preemption bound 1)`, `PARTIAL (preemption bound 1, stopped
    /// after 20 s)`.
    pub fn label(self) -> String {
        match self {
            LoomBound::Unbounded => "exhaustive".to_string(),
            LoomBound::Preemptions(k) => format!("bounded (preemption bound {k})"),
            LoomBound::Partial { preemptions, seconds } => {
                format!("PARTIAL (preemption bound {preemptions}, stopped after {seconds} s)")
            }
        }
    }
}

/// What a thread does when it finds a violation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnViolation {
    /// Record it and panic, so that loom stops and keeps the schedule.
    Panic,
    /// Record it and reach a scheduling point, where a scheduler that watches the run's
    /// [`checks::Sink`] ends the execution (shuttle; no panic, so nothing is printed).
    Stop,
    /// Record it and let every thread stop at its next operation or wake-up (`std`).
    Abort,
}

/// The configuration of one threaded run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunConfig {
    /// `f32` numbers per cell.
    pub elems: usize,
    /// Seed of the random inputs.
    pub seed: u64,
    /// How DMAs complete.
    pub dma: DmaMode,
    /// What a violation does.
    pub on_violation: OnViolation,
    /// Whether a race stops the run (else it is noted and the run goes on, so that a
    /// stress run can also say whether the numbers came out wrong).
    pub stop_on_race: bool,
    /// On `std`, a wait blocked this long is reported as a deadlock (ignored by loom and
    /// shuttle, which detect deadlocks themselves).
    pub deadlock_after: Option<Duration>,
}

impl RunConfig {
    /// The configuration for loom: one number per cell, local/remote DMA engines, panics.
    pub fn loom() -> RunConfig {
        RunConfig {
            elems: 1,
            seed: 1,
            dma: DmaMode::ByKind,
            on_violation: OnViolation::Panic,
            stop_on_race: true,
            deadlock_after: None,
        }
    }

    /// The configuration for shuttle: one number per cell, a thread per DMA event, stops
    /// at a violation.
    pub fn shuttle() -> RunConfig {
        RunConfig { dma: DmaMode::PerEvent, on_violation: OnViolation::Stop, ..RunConfig::loom() }
    }

    /// The configuration of a plain `std` stress run.
    pub fn stress(seed: u64) -> RunConfig {
        RunConfig {
            elems: 8,
            seed,
            dma: DmaMode::PerIssuer,
            on_violation: OnViolation::Abort,
            stop_on_race: false,
            deadlock_after: Some(Duration::from_secs(10)),
        }
    }
}
