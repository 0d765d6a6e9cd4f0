//! Semaphores and the entry barrier as counters behind the backend's mutex, with blocking
//! waits on its condition variable.
//!
//! Every change of a counter, and whatever the operation does with it (its checks, the cells
//! a DMA writes, the model event it records), happens while the counter's lock is held: under
//! loom and shuttle, which switch threads only at their own primitives, the operation is one
//! step, as in the model.

use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::SeqCst;

use semcheck_model::{DeviceId, Violation};

use super::device::World;
use super::sync;

/// One semaphore: a counter with a blocking `wait(n)`.
///
/// The counter and the number of blocked waiters live behind the backend's mutex; the
/// condition variable is notified only when somebody waits, and a plain-`std` mirror of
/// the count lets the exit checks read it without adding a scheduling point.
#[derive(Debug, Default)]
pub struct Semaphore {
    count: sync::Mutex<(u32, u32)>,
    cv: sync::Condvar,
    mirror: AtomicU32,
}

/// Why a blocking wait gave up.
#[derive(Debug)]
pub(super) enum Interrupted {
    /// Another thread recorded a violation (`std`).
    Aborted,
    /// The deadline passed: the run is taken to be deadlocked (`std`).
    TimedOut(u32),
    /// Every device is finished or blocked and no DMA event is pending (loom, shuttle).
    Deadlock(Violation),
}

impl Semaphore {
    /// Runs `step` under the lock and, if it succeeds, adds `inc` and wakes the waiters:
    /// `semaphore_signal`, and the signal at the end of a DMA event, as one step.
    pub(super) fn signal_after<R>(
        &self,
        inc: u32,
        step: impl FnOnce() -> Result<R, Violation>,
    ) -> Result<R, Violation> {
        let mut c = self.count.lock().expect("lock poisoned");
        let result = step();
        if result.is_ok() {
            c.0 += inc;
            self.mirror.store(c.0, SeqCst);
        }
        let waiting = c.1 > 0;
        drop(c);
        if waiting && result.is_ok() {
            self.cv.notify_all();
        }
        result
    }

    /// The current value (read from the mirror: no scheduling point).
    pub fn value(&self) -> u32 {
        self.mirror.load(SeqCst)
    }

    /// Sets the value to 0 (kernel entry).
    pub fn reset(&self) {
        let mut c = self.count.lock().expect("lock poisoned");
        c.0 = 0;
        self.mirror.store(0, SeqCst);
    }

    /// `semaphore_wait`: blocks until the value is `>= amount`, then subtracts it and runs
    /// `passed`, under the lock.
    pub(super) fn wait(&self, amount: u32, watch: &Watch<'_>, passed: impl FnOnce()) -> Result<(), Interrupted> {
        let mut c = self.count.lock().expect("lock poisoned");
        while c.0 < amount {
            watch.before_blocking(c.0)?;
            c.1 += 1;
            c = sync::wait(&self.cv, c);
            c.1 -= 1;
            watch.woken();
        }
        c.0 -= amount;
        self.mirror.store(c.0, SeqCst);
        passed();
        Ok(())
    }
}

/// The implicit entry barrier: how many devices have entered each invocation.
#[derive(Debug)]
pub struct EntryGate {
    /// Devices entered per invocation, and the number of blocked waiters.
    entered: sync::Mutex<(Vec<u32>, u32)>,
    cv: sync::Condvar,
    /// A plain-`std` mirror of the counts, for deadlock detection.
    mirror: Vec<AtomicU32>,
}

impl EntryGate {
    /// A gate for `repeat` invocations.
    pub fn new(repeat: u32) -> EntryGate {
        EntryGate {
            entered: sync::Mutex::new((vec![0; repeat as usize], 0)),
            cv: sync::Condvar::new(),
            mirror: (0..repeat).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// A device has entered invocation `inv`.
    pub fn arrive(&self, inv: u32) {
        let mut e = self.entered.lock().expect("lock poisoned");
        e.0[inv as usize] += 1;
        self.mirror[inv as usize].store(e.0[inv as usize], SeqCst);
        let waiting = e.1 > 0;
        drop(e);
        if waiting {
            self.cv.notify_all();
        }
    }

    /// Devices that have entered invocation `inv` (from the mirror: no scheduling point).
    pub fn entered(&self, inv: u32) -> u32 {
        self.mirror[inv as usize].load(SeqCst)
    }

    /// Blocks until `n` devices have entered invocation `inv`, then runs `passed` under the
    /// lock.
    pub(super) fn wait(&self, inv: u32, n: u32, watch: &Watch<'_>, passed: impl FnOnce()) -> Result<(), Interrupted> {
        let mut e = self.entered.lock().expect("lock poisoned");
        while e.0[inv as usize] < n {
            watch.before_blocking(e.0[inv as usize])?;
            e.1 += 1;
            e = sync::wait(&self.cv, e);
            e.1 -= 1;
            watch.woken();
        }
        passed();
        Ok(())
    }
}

/// What a device does each time it is about to block: on `std`, give up if a violation was
/// recorded elsewhere or its deadline passed; under loom and shuttle, say where it blocks and
/// give up if that leaves the whole system stuck (see [`World::deadlocked`]).
pub(super) struct Watch<'a> {
    world: &'a World,
    device: DeviceId,
    pc: u32,
    deadline: Option<std::time::Instant>,
}

impl<'a> Watch<'a> {
    /// The watch of device `device` blocking at `pc`.
    pub(super) fn new(world: &'a World, device: DeviceId, pc: u32) -> Watch<'a> {
        let after = world.config.deadlock_after;
        let deadline = if sync::TIMED_WAITS { after.map(|a| std::time::Instant::now() + a) } else { None };
        Watch { world, device, pc, deadline }
    }

    fn before_blocking(&self, have: u32) -> Result<(), Interrupted> {
        if !sync::TIMED_WAITS {
            self.world.blocked[self.device.index()].store(self.pc + 1, SeqCst);
            return match self.world.deadlocked() {
                Some(v) => {
                    self.woken();
                    Err(Interrupted::Deadlock(v))
                }
                None => Ok(()),
            };
        }
        if self.world.sink.aborted() {
            return Err(Interrupted::Aborted);
        }
        match self.deadline {
            Some(t) if std::time::Instant::now() >= t => Err(Interrupted::TimedOut(have)),
            _ => Ok(()),
        }
    }

    fn woken(&self) {
        if !sync::TIMED_WAITS {
            self.world.blocked[self.device.index()].store(0, SeqCst);
        }
    }
}
