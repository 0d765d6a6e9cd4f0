//! The threaded runtime: the kernel IR run by one thread per device.
//!
//! Semaphores are counters behind a mutex with blocking waits, buffers are shared cells
//! the devices and DMA engines read and write, and DMAs complete asynchronously on DMA
//! threads. The engine code is written once and compiled against two backends (see
//! [`sync`]):
//!
//! * [`os`]: `std` threads normally (used by [`stress`]); **loom** under `--cfg loom`
//!   (used by `tests/loom.rs`);
//! * [`sim`] (feature `shuttle`): shuttle's controlled threads (used by
//!   [`shuttle_engine`]).
//!
//! The runtime checks the rules of the model with the model's names (see [`checks`]):
//! `race` from in-flight access counters on every cell (and, under loom, loom's own
//! `UnsafeCell` causality check), `wrong-result` by comparing real `f32` outputs with the
//! specification evaluated on the same random inputs ([`numeric`]), `deadlock` from the
//! tool's deadlock detection (loom, shuttle) or a timeout (`std`), `semaphore-leak` and
//! `outside-kernel` from the devices' lifecycle words and the real semaphore values.

pub mod checks;
pub mod numeric;
#[cfg(feature = "shuttle")]
pub mod shuttle_engine;
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

/// What a thread does when it finds a violation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnViolation {
    /// Record it and panic, so that loom or shuttle stops and keeps the schedule.
    Panic,
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

    /// The configuration for shuttle: one number per cell, a thread per DMA event, panics.
    pub fn shuttle() -> RunConfig {
        RunConfig { dma: DmaMode::PerEvent, ..RunConfig::loom() }
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

macro_rules! engine_items {
    () => {
        use std::sync::atomic::AtomicU32;
        use std::sync::atomic::Ordering::SeqCst;

        use semcheck_model::ir::SemKind;
        use semcheck_model::program::{CellId, ComputeKind, Op, SemSlot};
        use semcheck_model::{DeviceId, DmaKey, Program, Rule, ValueId, Violation};

        use crate::runtime::checks::{deadlock, race, Lifecycle, Sink, Tracking, VIOLATION_PANIC};
        use crate::runtime::numeric::Reference;
        use crate::runtime::{DmaMode, OnViolation, RunConfig};

        include!("memory.rs");
        include!("semaphore.rs");
        include!("dma.rs");
        include!("device.rs");
    };
}

/// The runtime on `std` threads, or on loom's under `--cfg loom`.
pub mod os {
    use super::sync::os as sync;
    engine_items!();
}

/// The runtime on shuttle's controlled threads.
#[cfg(feature = "shuttle")]
pub mod sim {
    use super::sync::shuttle as sync;
    engine_items!();
}
