// Included by `runtime::os` and `runtime::sim`: semaphores and the entry barrier as
// counters behind the backend's mutex, with blocking waits on its condition variable.

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

/// Why a blocking wait gave up (only plain `std` waits give up).
#[derive(Debug)]
pub(crate) enum Interrupted {
    /// Another thread recorded a violation.
    Aborted,
    /// The deadline passed: the run is taken to be deadlocked.
    TimedOut(u32),
}

impl Semaphore {
    /// `semaphore_signal`: adds `inc` and wakes the waiter.
    pub fn signal(&self, inc: u32) {
        let mut c = self.count.lock().expect("lock poisoned");
        c.0 += inc;
        self.mirror.store(c.0, SeqCst);
        let waiting = c.1 > 0;
        drop(c);
        if waiting {
            self.cv.notify_all();
        }
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

    /// `semaphore_wait`: blocks until the value is `>= amount`, then subtracts it.
    pub(crate) fn wait(&self, amount: u32, watch: &Watch<'_>) -> Result<(), Interrupted> {
        let mut c = self.count.lock().expect("lock poisoned");
        while c.0 < amount {
            watch.poll(c.0)?;
            c.1 += 1;
            c = sync::wait(&self.cv, c);
            c.1 -= 1;
        }
        c.0 -= amount;
        self.mirror.store(c.0, SeqCst);
        Ok(())
    }
}

/// The implicit entry barrier: how many devices have entered each invocation.
#[derive(Debug)]
pub struct EntryGate {
    /// Devices entered per invocation, and the number of blocked waiters.
    entered: sync::Mutex<(Vec<u32>, u32)>,
    cv: sync::Condvar,
}

impl EntryGate {
    /// A gate for `repeat` invocations.
    pub fn new(repeat: u32) -> EntryGate {
        EntryGate { entered: sync::Mutex::new((vec![0; repeat as usize], 0)), cv: sync::Condvar::new() }
    }

    /// A device has entered invocation `inv`.
    pub fn arrive(&self, inv: u32) {
        let mut e = self.entered.lock().expect("lock poisoned");
        e.0[inv as usize] += 1;
        let waiting = e.1 > 0;
        drop(e);
        if waiting {
            self.cv.notify_all();
        }
    }

    /// Blocks until `n` devices have entered invocation `inv`.
    pub(crate) fn wait(&self, inv: u32, n: u32, watch: &Watch<'_>) -> Result<(), Interrupted> {
        let mut e = self.entered.lock().expect("lock poisoned");
        while e.0[inv as usize] < n {
            watch.poll(e.0[inv as usize])?;
            e.1 += 1;
            e = sync::wait(&self.cv, e);
            e.1 -= 1;
        }
        Ok(())
    }
}

/// What a blocked `std` thread checks each time it wakes up: a violation elsewhere, or its
/// deadline. Under loom and shuttle waits never time out.
pub(crate) struct Watch<'a> {
    sink: &'a Sink,
    deadline: Option<std::time::Instant>,
}

impl<'a> Watch<'a> {
    pub(crate) fn new(sink: &'a Sink, after: Option<std::time::Duration>) -> Watch<'a> {
        let deadline = if sync::TIMED_WAITS { after.map(|a| std::time::Instant::now() + a) } else { None };
        Watch { sink, deadline }
    }

    fn poll(&self, have: u32) -> Result<(), Interrupted> {
        if !sync::TIMED_WAITS {
            return Ok(());
        }
        if self.sink.aborted() {
            return Err(Interrupted::Aborted);
        }
        match self.deadline {
            Some(t) if std::time::Instant::now() >= t => Err(Interrupted::TimedOut(have)),
            _ => Ok(()),
        }
    }
}
