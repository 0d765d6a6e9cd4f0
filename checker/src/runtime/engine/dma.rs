//! DMAs in flight and the engines that complete them (see `DmaMode` for which orders each
//! mode can produce).

use std::collections::VecDeque;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;

use semcheck_model::program::Op;
use semcheck_model::{DmaKey, Event, Violation};

use super::device::World;
use super::sync;
use crate::runtime::checks::Sink;

/// A started DMA: which one, and its payload once the source has been read.
#[derive(Debug)]
pub(super) struct Job {
    key: DmaKey,
    /// Instrumentation-free bookkeeping: whichever completion event comes first reads the
    /// source; taking this plain `std` lock is no scheduling point (the backends run one
    /// thread at a time, and no scheduling point is reached while it is held).
    payload: std::sync::Mutex<Option<Vec<Box<[f32]>>>>,
}

impl Job {
    pub(super) fn new(key: DmaKey) -> Job {
        Job { key, payload: std::sync::Mutex::new(None) }
    }
}

/// The queue, whether it is closed, and whether the engine is blocked on it.
type Jobs = (VecDeque<Arc<Job>>, bool, bool);

/// A DMA engine's queue of started DMAs, completed in order.
#[derive(Debug, Default)]
pub struct DmaQueue {
    jobs: sync::Mutex<Jobs>,
    cv: sync::Condvar,
}

impl DmaQueue {
    pub(super) fn push(&self, job: Arc<Job>) {
        let mut q = self.jobs.lock().expect("lock poisoned");
        q.0.push_back(job);
        let waiting = q.2;
        drop(q);
        if waiting {
            self.cv.notify_all();
        }
    }

    /// No more DMAs will be started: the engine stops once the queue is empty.
    pub(super) fn close(&self) {
        let mut q = self.jobs.lock().expect("lock poisoned");
        q.1 = true;
        let waiting = q.2;
        drop(q);
        if waiting {
            self.cv.notify_all();
        }
    }

    fn pop(&self, sink: &Sink) -> Option<Arc<Job>> {
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

    /// `sent`: a remote copy's source has been read; the issuer's `send_sem += bytes`.
    fn sent(&self, job: &Job) -> Result<(), Violation> {
        let Op::RemoteDma { send_sem, bytes, .. } = self.program.dma_op(job.key) else {
            unreachable!("sent of a remote copy")
        };
        self.sems[send_sem.0 as usize].signal_after(bytes, || {
            self.effect(Event::Sent(job.key), || {
                self.payload(job);
                self.unsent[job.key.issuer.index()].fetch_sub(1, SeqCst);
                self.pending.fetch_sub(1, SeqCst);
                Ok(())
            })
        })
    }

    /// `received` (`done` for a local copy): the destination has been written; the
    /// target's `recv_sem` (or the local copy's `sem`) `+= bytes`.
    fn landed(&self, job: &Job) -> Result<(), Violation> {
        let p = &self.program;
        let key = job.key;
        let (dst, sem, bytes, target, local) = match p.dma_op(key) {
            Op::LocalDma { dst, sem, bytes, .. } => (dst, sem, bytes, key.issuer, true),
            Op::RemoteDma { dst, recv_sem, bytes, target, .. } => (dst, recv_sem, bytes, target, false),
            _ => unreachable!("landing of a DMA"),
        };
        let event = if local { Event::Done(key) } else { Event::Received(key) };
        self.sems[sem.0 as usize].signal_after(bytes, || {
            self.effect(event, || {
                let inv = p.invocation_of(key.issuer, key.pc);
                self.lifecycle[target.index()]
                    .inside(inv)
                    .map_err(|why| p.landing_outside_kernel(key, target, &why))?;
                let payload = self.payload(job);
                let cells = p.span(dst);
                for (c, v) in cells.iter().zip(&payload) {
                    self.memory.write(*c, v);
                }
                self.memory.end_write(cells);
                if local {
                    self.unsent[key.issuer.index()].fetch_sub(1, SeqCst);
                }
                self.pending.fetch_sub(1, SeqCst);
                Ok(())
            })
        })
    }

    /// After a DMA event: stops the run on its violation, or if it left the system stuck.
    fn after_event(&self, result: Result<(), Violation>) -> Result<(), ()> {
        match result.map(|()| self.deadlocked()) {
            Err(v) | Ok(Some(v)) => {
                self.fail(v);
                Err(())
            }
            Ok(None) => Ok(()),
        }
    }

    /// Completes `job` in one engine thread: `sent` then `received` (or `done`).
    fn complete_in_order(&self, job: &Job) -> Result<(), ()> {
        if matches!(self.program.dma_op(job.key), Op::RemoteDma { .. }) {
            self.after_event(self.sent(job))?;
        }
        self.after_event(self.landed(job))
    }

    /// The number of completion events of the DMA started by `op` (2 for a remote copy).
    pub(super) fn completion_events(op: &Op) -> u32 {
        if matches!(op, Op::RemoteDma { .. }) {
            2
        } else {
            1
        }
    }
}

/// The engine thread of queue `q` (`DmaMode::PerIssuer`, `DmaMode::ByKind`).
pub(super) fn engine_loop(world: &World, q: usize) {
    while let Some(job) = world.queues[q].pop(&world.sink) {
        if world.complete_in_order(&job).is_err() {
            return;
        }
    }
}

/// Spawns the completion threads of a DMA just started (`DmaMode::PerEvent`).
pub(super) fn spawn_completions(world: &Arc<World>, job: Arc<Job>) {
    // Spawning is a scheduling point: never hold the (std) list's lock across it.
    let mut spawned = Vec::new();
    if matches!(world.program.dma_op(job.key), Op::RemoteDma { .. }) {
        let (w, j) = (world.clone(), job.clone());
        spawned.push(sync::thread::spawn(move || {
            let _ = w.after_event(w.sent(&j));
        }));
    }
    let w = world.clone();
    spawned.push(sync::thread::spawn(move || {
        let _ = w.after_event(w.landed(&job));
    }));
    world.dma_threads.lock().expect("lock poisoned").extend(spawned);
}
