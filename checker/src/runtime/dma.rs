// Included by `runtime::os` and `runtime::sim`: DMAs in flight and the engines that
// complete them (see `DmaMode` for which orders each mode can produce).

/// A started DMA: which one, and its payload once the source has been read.
#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) key: DmaKey,
    /// Instrumentation-free bookkeeping: whichever completion event comes first reads the
    /// source; taking this plain `std` lock is no scheduling point (the backends run one
    /// thread at a time, and no scheduling point is reached while it is held).
    payload: std::sync::Mutex<Option<Vec<Box<[f32]>>>>,
}

impl Job {
    pub(crate) fn new(key: DmaKey) -> Job {
        Job { key, payload: std::sync::Mutex::new(None) }
    }
}

/// A DMA engine's queue of started DMAs, completed in order.
#[derive(Debug, Default)]
pub struct DmaQueue {
    /// The queue, whether it is closed, and whether the engine is blocked on it.
    jobs: sync::Mutex<(std::collections::VecDeque<std::sync::Arc<Job>>, bool, bool)>,
    cv: sync::Condvar,
}

impl DmaQueue {
    pub(crate) fn push(&self, job: std::sync::Arc<Job>) {
        let mut q = self.jobs.lock().expect("lock poisoned");
        q.0.push_back(job);
        let waiting = q.2;
        drop(q);
        if waiting {
            self.cv.notify_all();
        }
    }

    /// No more DMAs will be started: the engine stops once the queue is empty.
    pub(crate) fn close(&self) {
        let mut q = self.jobs.lock().expect("lock poisoned");
        q.1 = true;
        let waiting = q.2;
        drop(q);
        if waiting {
            self.cv.notify_all();
        }
    }

    fn pop(&self, sink: &Sink) -> Option<std::sync::Arc<Job>> {
        let mut q = self.jobs.lock().expect("lock poisoned");
        loop {
            if let Some(j) = q.0.pop_front() {
                return Some(j);
            }
            if q.1 || (sync::TIMED_WAITS && sink.aborted()) {
                return None;
            }
            q.2 = true;
            q = sync::wait(&self.cv, q);
            q.2 = false;
        }
    }
}

impl World {
    /// The source values, read at the first of `sent`/`received` (`done` for a local copy).
    fn payload(&self, job: &Job) -> Vec<Box<[f32]>> {
        let mut p = job.payload.lock().expect("lock poisoned");
        if p.is_none() {
            let src = match self.program.dma_op(job.key) {
                Op::LocalDma { src, .. } | Op::RemoteDma { src, .. } => self.program.span(src),
                _ => unreachable!("a DMA job is a DMA"),
            };
            *p = Some(src.iter().map(|&c| self.memory.read(c)).collect());
            self.memory.end_read(src);
        }
        p.clone().expect("payload just read")
    }

    /// A remote copy's source has been read: the issuer's `send_sem += bytes`.
    pub(crate) fn sent(&self, job: &Job) {
        let Op::RemoteDma { send_sem, bytes, .. } = self.program.dma_op(job.key) else {
            unreachable!("sent of a remote copy")
        };
        self.payload(job);
        self.unsent[job.key.issuer.index()].fetch_sub(1, SeqCst);
        self.sems[send_sem.0 as usize].signal(bytes);
    }

    /// A DMA's destination has been written: `recv_sem` (or the local copy's `sem`)
    /// `+= bytes` on the target.
    pub(crate) fn landed(&self, job: &Job) -> Result<(), Violation> {
        let p = &self.program;
        let key = job.key;
        let (dst, sem, bytes, target, local) = match p.dma_op(key) {
            Op::LocalDma { dst, sem, bytes, .. } => (dst, sem, bytes, key.issuer, true),
            Op::RemoteDma { dst, recv_sem, bytes, target, .. } => (dst, recv_sem, bytes, target, false),
            _ => unreachable!("landing of a DMA"),
        };
        let inv = p.invocation_of(key.issuer, key.pc);
        self.lifecycle[target.index()].inside(inv).map_err(|why| p.landing_outside_kernel(key, target, &why))?;
        let payload = self.payload(job);
        let cells = p.span(dst);
        for (c, v) in cells.iter().zip(&payload) {
            self.memory.write(*c, v);
        }
        self.memory.end_write(cells);
        if local {
            self.unsent[key.issuer.index()].fetch_sub(1, SeqCst);
        }
        self.sems[sem.0 as usize].signal(bytes);
        Ok(())
    }

    /// Completes `job` in one engine thread: `sent` then `received` (or `done`).
    fn complete_in_order(&self, job: &Job) -> Result<(), Violation> {
        if matches!(self.program.dma_op(job.key), Op::RemoteDma { .. }) {
            self.sent(job);
        }
        self.landed(job)
    }
}

/// The engine thread of queue `q` (`DmaMode::PerIssuer`, `DmaMode::ByKind`).
pub(crate) fn engine_loop(world: &World, q: usize) {
    while let Some(job) = world.queues[q].pop(&world.sink) {
        if let Err(v) = world.complete_in_order(&job) {
            world.fail(v);
            return;
        }
    }
}

/// Spawns the completion threads of a DMA just started (`DmaMode::PerEvent`).
pub(crate) fn spawn_completions(world: &std::sync::Arc<World>, job: std::sync::Arc<Job>) {
    // Spawning is a scheduling point: never hold the (std) list's lock across it.
    let mut spawned = Vec::new();
    if matches!(world.program.dma_op(job.key), Op::RemoteDma { .. }) {
        let (w, j) = (world.clone(), job.clone());
        spawned.push(sync::thread::spawn(move || w.sent(&j)));
    }
    let w = world.clone();
    spawned.push(sync::thread::spawn(move || {
        if let Err(v) = w.landed(&job) {
            w.fail(v);
        }
    }));
    world.dma_threads.lock().expect("lock poisoned").extend(spawned);
}
