//! The synchronisation primitives of the threaded runtime: the single place where the
//! backend is chosen.
//!
//! The runtime's engine code (`engine/memory.rs`, `semaphore.rs`, `dma.rs`, `device.rs`)
//! is written once against a module named `sync` and mounted twice as real modules (with
//! `#[path]`, so rustfmt and rust-analyzer see them):
//!
//! * [`os`] backs [`crate::runtime::os`]: `std` threads and locks normally, **loom**'s
//!   with the `loom` feature (so `cargo test` under loom model-checks the very same code);
//! * [`shuttle`] (feature `shuttle`) backs [`crate::runtime::sim`]: shuttle's controlled
//!   threads and locks.
//!
//! Only the modelled system goes through these primitives: semaphores, the entry barrier,
//! the DMA engines' queues and the cells. The runtime's own bookkeeping (lifecycle,
//! in-flight access counters, the violation sink) is instrumentation on plain `std`
//! atomics, so it adds no scheduling points to loom's or shuttle's search.

/// A cell with loom's `with`/`with_mut` API over `std::cell::UnsafeCell`, for the
/// backends that do not track causality themselves (`std`, shuttle).
#[derive(Debug)]
pub struct StdCell<T>(std::cell::UnsafeCell<T>);

// SAFETY: the runtime only accesses a cell from the thread that the protocol under test
// says owns it at that moment; an unsynchronised access is exactly the bug being looked
// for, and it is reported by the runtime's race rule (and by loom with the `loom` feature).
unsafe impl<T: Send> Sync for StdCell<T> {}

impl<T> StdCell<T> {
    /// A cell holding `value`.
    pub fn new(value: T) -> StdCell<T> {
        StdCell(std::cell::UnsafeCell::new(value))
    }

    /// Reads through a shared pointer.
    pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Writes through a mutable pointer.
    pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// `std` (or loom with the `loom` feature).
pub mod os {
    #[cfg(feature = "loom")]
    pub use loom::cell::UnsafeCell;
    #[cfg(feature = "loom")]
    pub use loom::sync::{Condvar, Mutex, MutexGuard};
    #[cfg(feature = "loom")]
    pub use loom::thread;
    #[cfg(not(feature = "loom"))]
    pub use std::sync::{Condvar, Mutex, MutexGuard};
    #[cfg(not(feature = "loom"))]
    pub use std::thread;

    #[cfg(not(feature = "loom"))]
    pub use super::StdCell as UnsafeCell;

    /// Whether blocking waits time out (so that plain `std` runs can detect a deadlock and
    /// a violation elsewhere can stop them). Under loom they block: loom detects deadlocks.
    pub const TIMED_WAITS: bool = !cfg!(feature = "loom");

    /// Blocks on `cv`; on `std` wakes up at the latest after a few milliseconds.
    pub fn wait<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        #[cfg(feature = "loom")]
        {
            cv.wait(guard).expect("lock poisoned")
        }
        #[cfg(not(feature = "loom"))]
        {
            cv.wait_timeout(guard, std::time::Duration::from_millis(5)).expect("lock poisoned").0
        }
    }

    /// The backend's name, for reports.
    pub const NAME: &str = if cfg!(feature = "loom") { "loom" } else { "std" };
}

/// shuttle's controlled threads and locks.
#[cfg(feature = "shuttle")]
pub mod shuttle {
    pub use shuttle::sync::{Condvar, Mutex, MutexGuard};
    pub use shuttle::thread;

    pub use super::StdCell as UnsafeCell;

    /// Waits block: shuttle detects deadlocks.
    pub const TIMED_WAITS: bool = false;

    /// Blocks on `cv`.
    pub fn wait<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        cv.wait(guard).expect("lock poisoned")
    }

    /// The backend's name, for reports.
    pub const NAME: &str = "shuttle";
}
