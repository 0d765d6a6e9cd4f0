//! DMAs in flight and the engines that complete them (see `DmaMode` for which orders each
//! mode can produce), under the program's hardware assumptions:
//!
//! * `--dma-landing cells`: a copy of several cells lands by one `CellLanded` event per
//!   cell, each writing its cell and adding its share of the bytes. With a thread per
//!   completion event (shuttle) every cell is a thread, so every order can happen; the
//!   ordered engines (loom, stress) land a copy's cells in one order drawn from the run's
//!   seed (a sample of the orders).
//! * `--dma-order pair-fifo`: a queue (one issuer's remote copies to one target, or one
//!   device's local copies) lands in start order. The ordered engines never reorder a
//!   queue; with a thread per event, a landing waits for its turn at the [`FifoGate`].

use std::collections::VecDeque;
use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;

use semcheck_model::program::Op;
use semcheck_model::{DmaKey, DmaOrder, Event, Program, Violation};

use super::device::World;
use super::sync;
use crate::runtime::checks::Sink;
use crate::runtime::DmaMode;

/// A started DMA: which one, the source values it has read, its cells still to land, and
/// its turn in its queue under `--dma-order pair-fifo` with a thread per event.
#[derive(Debug)]
pub(super) struct Job {
    key: DmaKey,
    /// Instrumentation-free bookkeeping: each source cell is read by the first event that
    /// needs it (`sent` reads them all, a landing its own cells); taking this plain `std`
    /// lock is no scheduling point (the backends run one thread at a time, and no
    /// scheduling point is reached while it is held).
    payload: std::sync::Mutex<Vec<Option<Box<[f32]>>>>,
    /// Cells still to land (plain `std`: changed inside a landing's one step).
    left: AtomicU32,
    /// `(queue, position)` at the [`FifoGate`], if there is one.
    turn: Option<(usize, u32)>,
}

impl Job {
    pub(super) fn new(key: DmaKey, cells: usize, turn: Option<(usize, u32)>) -> Job {
        Job { key, payload: std::sync::Mutex::new(vec![None; cells]), left: AtomicU32::new(cells as u32), turn }
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

/// The landing order of `--dma-order pair-fifo` when every completion event is a thread of
/// its own: per queue, the DMAs started and the DMAs landed; a landing waits until every
/// DMA started before it in its queue has landed.
#[derive(Debug)]
pub(super) struct FifoGate {
    /// Per queue, DMAs started (plain `std`: taken inside the start's one step).
    started: Vec<AtomicU32>,
    /// Per queue, DMAs landed; and the number of blocked landings.
    landed: sync::Mutex<(Vec<u32>, u32)>,
    cv: sync::Condvar,
}

impl FifoGate {
    /// The gate of `program`'s queues, when its DMAs complete on a thread per event under
    /// pair-fifo; `None` otherwise (the other modes never reorder a queue).
    pub(super) fn of(program: &Program, mode: DmaMode) -> Option<FifoGate> {
        let queues = program.num_devices() * (program.num_devices() + 1);
        (mode == DmaMode::PerEvent && program.semantics.dma_order == DmaOrder::PairFifo).then(|| FifoGate {
            started: (0..queues).map(|_| AtomicU32::new(0)).collect(),
            landed: sync::Mutex::new((vec![0; queues], 0)),
            cv: sync::Condvar::new(),
        })
    }

    /// The queue and position of a DMA being started.
    pub(super) fn ticket(&self, program: &Program, key: DmaKey) -> (usize, u32) {
        let n = program.num_devices();
        let queue = key.issuer.index() * (n + 1) + program.dma_queue(key).map_or(n, |t| t.index());
        (queue, self.started[queue].fetch_add(1, SeqCst))
    }

    /// Blocks until every earlier DMA of the queue has landed.
    fn wait_turn(&self, (queue, position): (usize, u32)) {
        let mut l = self.landed.lock().expect("lock poisoned");
        while l.0[queue] < position {
            l.1 += 1;
            l = sync::wait(&self.cv, l);
            l.1 -= 1;
        }
    }

    /// A DMA of the queue has finished landing.
    fn advance(&self, (queue, _): (usize, u32)) {
        let mut l = self.landed.lock().expect("lock poisoned");
        l.0[queue] += 1;
        let waiting = l.1 > 0;
        drop(l);
        if waiting {
            self.cv.notify_all();
        }
    }
}

/// The order in which the ordered engines land the cells of a copy: a permutation of
/// `0..cells` drawn from the run's seed and the DMA (splitmix64 and Fisher-Yates).
fn cell_order(seed: u64, key: DmaKey, cells: usize) -> Vec<usize> {
    let mut state = seed ^ ((key.issuer.0 as u64) << 32 | key.pc as u64);
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut order: Vec<usize> = (0..cells).collect();
    for i in (1..cells).rev() {
        order.swap(i, (next() % (i as u64 + 1)) as usize);
    }
    order
}

impl World {
    /// The number of cells a DMA lands one by one (`--dma-landing cells`, a copy of several
    /// cells), or `None` when it lands whole.
    pub(super) fn cells_by_one(&self, op: &Op) -> Option<usize> {
        let (Op::LocalDma { src, .. } | Op::RemoteDma { src, .. }) = op else { return None };
        self.program.lands_by_cells(src.len as usize).then_some(src.len as usize)
    }

    /// The source values of cells `which` of `job`, each read (and its read ended) by the
    /// first event that needs it.
    fn payload(&self, job: &Job, which: impl Iterator<Item = usize>) -> Vec<(usize, Box<[f32]>)> {
        let src = match self.program.dma_op(job.key) {
            Op::LocalDma { src, .. } | Op::RemoteDma { src, .. } => self.program.span(src),
            _ => unreachable!("a DMA job is a DMA"),
        };
        let mut p = job.payload.lock().expect("lock poisoned");
        which
            .map(|i| {
                let v = p[i].get_or_insert_with(|| {
                    let v = self.memory.read(src[i]);
                    self.memory.end_read(&src[i..=i], job.key);
                    v
                });
                (i, v.clone())
            })
            .collect()
    }

    /// `sent`: a remote copy's source has been read; the issuer's `send_sem += bytes`.
    fn sent(&self, job: &Job) -> Result<(), Violation> {
        let Op::RemoteDma { send_sem, bytes, src, .. } = self.program.dma_op(job.key) else {
            unreachable!("sent of a remote copy")
        };
        self.sems[send_sem.0 as usize].signal_after(bytes, || {
            self.effect(Event::Sent(job.key), || {
                self.payload(job, 0..src.len as usize);
                self.unsent[job.key.issuer.index()].lock().unwrap_or_else(|e| e.into_inner()).retain(|&k| k != job.key);
                self.pending.fetch_sub(1, SeqCst);
                Ok(())
            })
        })
    }

    /// A landing of `job`: the whole copy (`cell: None`: `received`, or `done` for a local
    /// copy) or one of its cells (`CellLanded`). Writes the cells, adds their bytes to the
    /// target's `recv_sem` (the local copy's `sem`); returns whether the copy has now landed
    /// completely.
    fn land(&self, job: &Job, cell: Option<usize>) -> Result<bool, Violation> {
        let p = &self.program;
        let key = job.key;
        let (dst, sem, bytes, target, local) = match p.dma_op(key) {
            Op::LocalDma { dst, sem, bytes, .. } => (dst, sem, bytes, key.issuer, true),
            Op::RemoteDma { dst, recv_sem, bytes, target, .. } => (dst, recv_sem, bytes, target, false),
            _ => unreachable!("landing of a DMA"),
        };
        let (event, share, which) = match cell {
            Some(i) => (Event::CellLanded(key, i as u32), bytes / dst.len, i..i + 1),
            None if local => (Event::Done(key), bytes, 0..dst.len as usize),
            None => (Event::Received(key), bytes, 0..dst.len as usize),
        };
        self.sems[sem.0 as usize].signal_after(share, || {
            self.effect(event, || {
                let inv = p.invocation_of(key.issuer, key.pc);
                self.lifecycle[target.index()]
                    .inside(inv, p.alive_until(sem, inv), p)
                    .map_err(|why| p.landing_outside_kernel(key, target, &why))?;
                let cells = p.span(dst);
                for (i, v) in self.payload(job, which.clone()) {
                    self.memory.write(cells[i], &v);
                }
                self.memory.end_write(&cells[which.clone()], key);
                self.pending.fetch_sub(1, SeqCst);
                let complete = job.left.fetch_sub(which.len() as u32, SeqCst) == which.len() as u32;
                if complete && local {
                    self.unsent[key.issuer.index()].lock().unwrap_or_else(|e| e.into_inner()).retain(|&k| k != key);
                }
                Ok(complete)
            })
        })
    }

    /// After a DMA event: stops the run on its violation, or if it left the system stuck.
    fn after_event<R>(&self, result: Result<R, Violation>) -> Result<R, ()> {
        let result = result.map(|r| (r, self.deadlocked()));
        match result {
            Err(v) | Ok((_, Some(v))) => {
                self.fail(v);
                Err(())
            }
            Ok((r, None)) => Ok(r),
        }
    }

    /// Completes `job` in one engine thread: `sent`, then `received` (or `done`), or its
    /// cells in an order drawn from the run's seed.
    fn complete_in_order(&self, job: &Job) -> Result<(), ()> {
        let op = self.program.dma_op(job.key);
        if matches!(op, Op::RemoteDma { .. }) {
            self.after_event(self.sent(job))?;
        }
        match self.cells_by_one(&op) {
            Some(cells) => {
                for i in cell_order(self.config.seed, job.key, cells) {
                    self.after_event(self.land(job, Some(i)))?;
                }
                Ok(())
            }
            None => self.after_event(self.land(job, None)).map(|_| ()),
        }
    }

    /// The number of completion events of the DMA started by `op`: `sent` for a remote
    /// copy, and one landing, or one per cell.
    pub(super) fn completion_events(&self, op: &Op) -> u32 {
        let sent = u32::from(matches!(op, Op::RemoteDma { .. }));
        sent + self.cells_by_one(op).map_or(1, |c| c as u32)
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

/// One landing thread's work: its turn in its queue (pair-fifo), the landing, and the next
/// DMA's turn once the copy has landed completely.
fn land_in_turn(world: &World, job: &Job, cell: Option<usize>) {
    let gate = world.fifo.as_ref().zip(job.turn);
    if let Some((g, turn)) = gate {
        g.wait_turn(turn);
    }
    if let (Ok(true), Some((g, turn))) = (world.after_event(world.land(job, cell)), gate) {
        g.advance(turn);
    }
}

/// Spawns the completion threads of a DMA just started (`DmaMode::PerEvent`): `sent`, and
/// the landing or one landing per cell.
pub(super) fn spawn_completions(world: &Arc<World>, job: Arc<Job>) {
    // Spawning is a scheduling point: never hold the (std) list's lock across it.
    let mut spawned = Vec::new();
    let op = world.program.dma_op(job.key);
    if matches!(op, Op::RemoteDma { .. }) {
        let (w, j) = (world.clone(), job.clone());
        spawned.push(sync::thread::spawn(move || {
            let _ = w.after_event(w.sent(&j));
        }));
    }
    match world.cells_by_one(&op) {
        Some(cells) => {
            for i in 0..cells {
                let (w, j) = (world.clone(), job.clone());
                spawned.push(sync::thread::spawn(move || land_in_turn(&w, &j, Some(i))));
            }
        }
        None => {
            let w = world.clone();
            spawned.push(sync::thread::spawn(move || land_in_turn(&w, &job, None)));
        }
    }
    world.dma_threads.lock().expect("lock poisoned").extend(spawned);
}
