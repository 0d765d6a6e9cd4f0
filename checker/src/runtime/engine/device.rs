//! The shared world and the device threads that interpret the kernel IR, one thread per
//! device.
//!
//! Every operation and every DMA event takes effect in one step (see `semaphore.rs`), and
//! its model [`Event`] is logged at that moment into the run's [`Sink`] when the sink
//! records events (shuttle): shuttle runs one thread at a time and switches only at its own
//! primitives, none of which is reached between an effect and its log entry, so the log is
//! the order in which the effects happened, a schedule the model can replay.

use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::Arc;

use semcheck_model::ir::SemKind;
use semcheck_model::program::{CellId, ComputeKind, Op, SemSlot};
use semcheck_model::{DeviceId, DmaKey, DmaOrder, Event, Program, Rule, ValueId, Violation};

use super::dma::{engine_loop, spawn_completions, DmaQueue, FifoGate, Job};
use super::memory::Memory;
use super::semaphore::{EntryGate, Interrupted, Semaphore, Watch};
use super::sync;
use crate::runtime::checks::{deadlock, Lifecycle, Sink, VIOLATION_PANIC};
use crate::runtime::numeric::Reference;
use crate::runtime::{DmaMode, OnViolation, RunConfig};

/// Everything the device and DMA threads of one run share.
#[derive(Debug)]
pub(super) struct World {
    pub(super) program: Arc<Program>,
    pub(super) config: RunConfig,
    reference: Reference,
    pub(super) memory: Memory,
    pub(super) sems: Vec<Semaphore>,
    gate: EntryGate,
    pub(super) queues: Vec<DmaQueue>,
    /// The landing order of `--dma-order pair-fifo` under `DmaMode::PerEvent`.
    pub(super) fifo: Option<FifoGate>,
    pub(super) dma_threads: std::sync::Mutex<Vec<sync::thread::JoinHandle<()>>>,
    pub(super) lifecycle: Vec<Lifecycle>,
    /// Per device, the DMAs it started that are not yet sent (a local copy: not done).
    /// Plain `std`: changed inside a start's or a completion's one step.
    pub(super) unsent: Vec<std::sync::Mutex<Vec<DmaKey>>>,
    finished: AtomicU32,
    /// Device threads that have stopped (finished or not), to close shared DMA queues.
    done: AtomicU32,
    pub(super) sink: Arc<Sink>,
    /// Per device, `pc + 1` of the wait it is blocked at (0: not blocked). Deadlock
    /// detection under loom and shuttle.
    pub(super) blocked: Vec<AtomicU32>,
    /// Per device, whether its thread has stopped.
    stopped: Vec<AtomicBool>,
    /// DMA completion events (`sent`, `received`, `done`) not yet taken effect.
    pub(super) pending: AtomicU32,
}

impl World {
    fn new(program: Arc<Program>, config: &RunConfig, sink: Arc<Sink>) -> World {
        let reference = Reference::new(config.elems, config.seed);
        let n = program.num_devices();
        let queues = match config.dma {
            DmaMode::PerIssuer => (0..n).map(|_| DmaQueue::default()).collect(),
            DmaMode::ByKind => (0..2).map(|_| DmaQueue::default()).collect(),
            DmaMode::PerEvent => Vec::new(),
        };
        World {
            memory: Memory::new(&program, &reference),
            sems: (0..program.num_sems()).map(|_| Semaphore::default()).collect(),
            gate: EntryGate::new(program.invocations()),
            queues,
            fifo: FifoGate::of(&program, config.dma),
            dma_threads: std::sync::Mutex::new(Vec::new()),
            lifecycle: (0..n).map(|_| Lifecycle::new()).collect(),
            unsent: (0..n).map(|_| std::sync::Mutex::new(Vec::new())).collect(),
            finished: AtomicU32::new(0),
            done: AtomicU32::new(0),
            sink,
            blocked: (0..n).map(|_| AtomicU32::new(0)).collect(),
            stopped: (0..n).map(|_| AtomicBool::new(false)).collect(),
            pending: AtomicU32::new(0),
            reference,
            config: *config,
            program,
        }
    }

    /// Runs `f`, the effect of `event`, and logs the event (also when it breaks a rule,
    /// then as the last event, with the violation recorded before any other thread runs).
    /// Callers run it where the effect is one step: under the lock of the primitive it
    /// changes, or with no scheduling point inside.
    pub(super) fn effect<R>(&self, event: Event, f: impl FnOnce() -> Result<R, Violation>) -> Result<R, Violation> {
        let result = f();
        self.sink.log(event);
        if let Err(v) = &result {
            self.sink.record(v.clone());
        }
        result
    }

    /// Records a violation and stops: under `OnViolation::Panic` by panicking (loom keeps
    /// the failing schedule), under `OnViolation::Stop` at a scheduling point where the
    /// scheduler ends the execution, under `OnViolation::Abort` by letting every thread
    /// stop at its next operation.
    pub(super) fn fail(&self, v: Violation) {
        let text = v.to_string();
        self.sink.record(v);
        match self.config.on_violation {
            OnViolation::Panic => panic!("{VIOLATION_PANIC}: {text}"),
            OnViolation::Stop => sync::thread::yield_now(),
            OnViolation::Abort => {}
        }
    }

    /// Under loom and shuttle (one thread at a time), the deadlock of a system where every
    /// device has stopped or is blocked at a wait its semaphore (or the entry barrier)
    /// cannot pass, no DMA event is pending, and some device has not stopped. Checked by
    /// every thread that could make the system stuck: a device about to block, a device
    /// stopping, a DMA event done.
    pub(super) fn deadlocked(&self) -> Option<Violation> {
        if sync::TIMED_WAITS || self.pending.load(SeqCst) > 0 {
            return None;
        }
        let p = &*self.program;
        let n = p.num_devices() as u32;
        let (mut stuck, mut why) = (Vec::new(), Vec::new());
        for d in p.mesh.devices() {
            if self.stopped[d.index()].load(SeqCst) {
                continue;
            }
            let pc = self.blocked[d.index()].load(SeqCst).checked_sub(1)?;
            let what = match p.devices[d.index()].ops[pc as usize] {
                Op::Wait { sem, amount } => {
                    let have = self.sems[sem.0 as usize].value();
                    if have >= amount {
                        return None;
                    }
                    format!("waits for {} >= {amount} (it is {have})", p.sem_full_name(sem))
                }
                Op::EntryBarrier => {
                    let have = self.gate.entered(p.devices[d.index()].info[pc as usize].invocation);
                    if have >= n {
                        return None;
                    }
                    format!("waits for every device to enter ({have} of {n} have)")
                }
                _ => return None,
            };
            why.push(format!("`{}` {what}", p.describe_op(d, pc)));
            stuck.push(d);
        }
        (!stuck.is_empty()).then(|| deadlock(format!("{}; nothing else can run", why.join("; ")), stuck))
    }

    fn interrupted(&self, d: DeviceId, pc: u32, why: Interrupted) {
        match why {
            Interrupted::Aborted => {}
            Interrupted::Deadlock(v) => self.fail(v),
            Interrupted::TimedOut(have) => {
                let what = match self.program.devices[d.index()].ops[pc as usize] {
                    Op::Wait { sem, amount } => {
                        format!("waits for {} >= {amount} (it is {have})", self.program.sem_full_name(sem))
                    }
                    _ => format!("waits for every device to enter ({have} have)"),
                };
                let after = self.config.deadlock_after.map_or(0.0, |t| t.as_secs_f64());
                self.fail(deadlock(
                    format!("`{}` {what}, still blocked after {after} s", self.program.describe_op(d, pc)),
                    vec![d],
                ));
            }
        }
    }

    /// Runs device `d`'s program to its end, or until a violation.
    fn run_device(this: &Arc<World>, d: DeviceId) {
        let n = this.program.num_devices();
        for pc in 0..this.program.devices[d.index()].len() as u32 {
            if sync::TIMED_WAITS && this.sink.aborted() {
                break;
            }
            if let Err(stop) = World::run_op(this, d, pc) {
                match stop {
                    Stop::Violation(v) => this.fail(v),
                    Stop::Interrupted(why) => this.interrupted(d, pc, why),
                }
                break;
            }
        }
        this.stopped[d.index()].store(true, SeqCst);
        let last = this.done.fetch_add(1, SeqCst) + 1 == n as u32;
        match this.config.dma {
            DmaMode::PerIssuer => this.queues[d.index()].close(),
            DmaMode::ByKind if last => this.queues.iter().for_each(DmaQueue::close),
            _ => {}
        }
        if let Some(v) = this.deadlocked() {
            this.fail(v);
        }
    }

    fn run_op(this: &Arc<World>, d: DeviceId, pc: u32) -> Result<(), Stop> {
        let p = &*this.program;
        let dp = &p.devices[d.index()];
        let inv = dp.info[pc as usize].invocation;
        let step = Event::Step(d);
        match dp.ops[pc as usize] {
            Op::Enter => {
                // Semaphores start at 0: only later runs need the reset (a later kernel of a
                // program of several kernels finds what the earlier ones left).
                let first = d.index() * p.sems_per_device;
                let reset = p.starts_run(inv);
                for i in (0..p.sems_per_device).filter(|_| inv > 0 && reset) {
                    let slot = SemSlot((first + i) as u32);
                    if p.sem_kind(slot) != SemKind::Barrier {
                        this.sems[slot.0 as usize].reset();
                    }
                }
                this.effect(step, || {
                    for &(cell, v) in dp.reset.iter().filter(|_| reset) {
                        this.memory.write(cell, &this.reference.concrete(p, v));
                    }
                    this.lifecycle[d.index()].enter(inv);
                    Ok(())
                })?;
                this.gate.arrive(inv);
            }
            Op::EntryBarrier => {
                let watch = Watch::new(this, d, pc);
                this.gate.wait(inv, p.num_devices() as u32, &watch, || this.sink.log(step))?;
            }
            Op::Exit => this.effect(step, || this.exit(d, pc, inv))?,
            Op::Signal { target, sem, inc } => {
                this.sems[sem.0 as usize].signal_after(inc, || {
                    this.effect(step, || {
                        if p.sem_kind(sem) == SemKind::Barrier {
                            return Ok(());
                        }
                        this.lifecycle[target.index()]
                            .inside(inv, p.alive_until(sem, inv), p)
                            .map_err(|why| p.signal_outside_kernel(d, pc, target, sem, &why))
                    })
                })?;
            }
            Op::Wait { sem, amount } => {
                let watch = Watch::new(this, d, pc);
                this.sems[sem.0 as usize].wait(amount, &watch, || this.sink.log(step))?;
            }
            ref op @ (Op::LocalDma { src, dst, .. } | Op::RemoteDma { src, dst, .. }) => {
                let key = DmaKey { issuer: d, pc };
                let job = this.effect(step, || {
                    let (s, t) = (p.span(src), p.span(dst));
                    let fifo = (p.semantics.dma_order == DmaOrder::PairFifo).then_some(key);
                    this.race(this.memory.check(p, s, t, &p.describe_op(d, pc), d, fifo))?;
                    this.memory.start_dma(s, t, key);
                    this.unsent[d.index()].lock().unwrap_or_else(|e| e.into_inner()).push(key);
                    this.pending.fetch_add(this.completion_events(op), SeqCst);
                    let turn = this.fifo.as_ref().map(|g| g.ticket(p, key));
                    Ok(Arc::new(Job::new(key, s.len(), turn)))
                })?;
                match this.config.dma {
                    DmaMode::PerIssuer => this.queues[d.index()].push(job),
                    DmaMode::ByKind => this.queues[matches!(op, Op::RemoteDma { .. }) as usize].push(job),
                    DmaMode::PerEvent => spawn_completions(this, job),
                }
            }
            Op::Compute { kind, dst, src } => this.effect(step, || this.compute(d, pc, kind, dst, src))?,
        }
        Ok(())
    }

    /// A compute operation: reads `src`, writes `dst`.
    fn compute(
        &self,
        d: DeviceId,
        pc: u32,
        kind: ComputeKind,
        dst: semcheck_model::program::CellSpan,
        src: semcheck_model::program::CellSpan,
    ) -> Result<(), Violation> {
        let p = &*self.program;
        let (dcells, scells) = (p.span(dst), p.span(src));
        let who = p.describe_op(d, pc);
        if kind == ComputeKind::Add {
            self.race(self.memory.check(p, dcells, dcells, &who, d, None))?;
        }
        self.race(self.memory.check(p, scells, dcells, &who, d, None))?;
        let elems = self.reference.elems();
        // A formula may read its own destination: read every source cell first.
        let formula_src: Vec<Box<[f32]>> = match kind {
            ComputeKind::Formula(_) => scells.iter().map(|&s| self.memory.read(s)).collect(),
            _ => Vec::new(),
        };
        for (i, &c) in dcells.iter().enumerate() {
            let s = scells.get(i).map(|&s| self.memory.read(s));
            let v: Box<[f32]> = match (kind, s) {
                (ComputeKind::Zero, _) => vec![0.0; elems].into(),
                (ComputeKind::Copy, Some(s)) => s,
                (ComputeKind::Add, Some(s)) => self.memory.read(c).iter().zip(s.iter()).map(|(a, b)| a + b).collect(),
                (ComputeKind::Apply(f), Some(s)) => s.iter().map(|&x| Reference::apply(f, x)).collect(),
                (ComputeKind::Formula(k), _) => {
                    p.formulas[k as usize].eval_numeric(i, &formula_src, elems, Reference::apply)
                }
                (_, None) => vec![f32::NAN; elems].into(),
            };
            self.memory.write(c, &v);
        }
        Ok(())
    }

    /// A race breaks the rule, or is noted (`stop_on_race == false`) and the run goes on.
    fn race(&self, check: Result<(), Violation>) -> Result<(), Violation> {
        match check {
            Err(v) if !self.config.stop_on_race => {
                self.sink.note_race(v);
                Ok(())
            }
            other => other,
        }
    }

    fn wrong_result(&self, wrong: &[(CellId, ValueId, Box<[f32]>)], d: DeviceId, inv: u32) -> Option<Violation> {
        let p = &*self.program;
        let (cell, want, got) = wrong.first()?;
        let (w, _) = self.reference.eval(p, *want);
        let got = format!("{:?}", &got[..got.len().min(2)]);
        let want = format!("{} = {:?}", p.values.display(*want, p.spec.notation), &w[..w.len().min(2)]);
        Some(p.wrong_result(d, inv, *cell, &got, &want, wrong.len()))
    }

    /// The shared outputs, checked by the main thread once every device thread has been
    /// joined (so that reading them is ordered after every write, also for loom). With
    /// `repeat > 1` this checks the last invocation's shared outputs only.
    fn check_shared(&self) {
        let p = &*self.program;
        let mut wrong = Vec::new();
        for &(cell, want) in &p.shared_expected {
            let got = self.memory.read(cell);
            if !self.reference.matches(p, want, &got) {
                wrong.push((cell, want, got));
            }
        }
        let last = DeviceId(p.num_devices() as u16 - 1);
        if let Some(v) = self.wrong_result(&wrong, last, p.invocations() - 1) {
            self.fail(v);
        }
    }

    /// The checks at a device's exit, in the model's order: outputs, DMAs still being read,
    /// semaphores, and once every device has finished, the barrier semaphores.
    fn exit(&self, d: DeviceId, pc: u32, inv: u32) -> Result<(), Violation> {
        let p = &*self.program;
        let n = p.num_devices() as u32;
        let dp = &p.devices[d.index()];
        let mut wrong: Vec<(CellId, ValueId, Box<[f32]>)> = Vec::new();
        // Outputs are the program's: checked when its last kernel exits.
        for &(cell, want) in dp.expected.iter().filter(|_| p.ends_run(inv)) {
            let got = self.memory.read(cell);
            if !self.reference.matches(p, want, &got) {
                wrong.push((cell, want, got));
            }
        }
        if let Some(v) = self.wrong_result(&wrong, d, inv) {
            return Err(v);
        }
        let pending = self.unsent[d.index()]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|&&k| p.dma_checked_at_exit(k, inv))
            .count();
        if pending > 0 {
            return Err(Violation::new(
                Rule::SemaphoreLeak,
                vec![d],
                format!(
                    "{d} exits ({}) while {pending} DMA(s) it started are not yet sent (or not done)",
                    p.invocation_name(inv)
                ),
            ));
        }
        let first = d.index() * p.sems_per_device;
        for i in 0..p.sems_per_device {
            let slot = SemSlot((first + i) as u32);
            let v = self.sems[slot.0 as usize].value();
            if v != 0 && p.sem_kind(slot) != SemKind::Barrier && p.checked_at_exit(slot, inv) {
                return Err(p.semaphore_leak(d, pc, slot, v));
            }
        }
        self.lifecycle[d.index()].exit(inv);
        let last_exit = pc as usize + 1 == dp.len();
        if last_exit && self.finished.fetch_add(1, SeqCst) + 1 == n {
            for slot in (0..p.num_sems()).map(|s| SemSlot(s as u32)) {
                let v = self.sems[slot.0 as usize].value();
                if v != 0 && p.sem_kind(slot) == SemKind::Barrier {
                    return Err(p.barrier_leak(slot, v));
                }
            }
        }
        Ok(())
    }
}

/// Why a device stopped early.
enum Stop {
    Violation(Violation),
    Interrupted(Interrupted),
}

impl From<Violation> for Stop {
    fn from(v: Violation) -> Stop {
        Stop::Violation(v)
    }
}

impl From<Interrupted> for Stop {
    fn from(why: Interrupted) -> Stop {
        Stop::Interrupted(why)
    }
}

/// Runs `program` once with one thread per device (and the DMA threads of `config.dma`),
/// and returns the first violation, if any. Under loom, call it inside the model closure
/// with `OnViolation::Panic`.
pub fn run(program: &Arc<Program>, config: &RunConfig) -> Option<Violation> {
    let sink = Arc::new(Sink::default());
    run_into(program, config, &sink);
    sink.take()
}

/// Like [`run`], recording the violation (and, for a sink that records them, the model
/// events) in `sink`, which outlives a run that a violation stopped.
pub fn run_into(program: &Arc<Program>, config: &RunConfig, sink: &Arc<Sink>) {
    // Under loom, `World` holds loom's cells, which are not `Sync`: loom runs every model
    // thread on one OS thread and its `spawn` asks for no `Send`, so sharing is sound.
    #[cfg_attr(feature = "loom", allow(clippy::arc_with_non_send_sync))]
    let world = Arc::new(World::new(program.clone(), config, sink.clone()));
    let mut handles = Vec::new();
    let n = program.num_devices();
    for q in 0..world.queues.len() {
        let w = world.clone();
        handles.push(sync::thread::spawn(move || engine_loop(&w, q)));
    }
    for d in program.mesh.devices() {
        if d.index() + 1 < n {
            let w = world.clone();
            handles.push(sync::thread::spawn(move || World::run_device(&w, d)));
        }
    }
    // The last device runs on the calling thread: one thread fewer for loom's limit. A
    // spawned device's first step follows its thread's start, a scheduling point; this
    // yield gives the calling thread's device one too, so that the other devices (and
    // their DMAs) can act before it enters the kernel.
    sync::thread::yield_now();
    World::run_device(&world, DeviceId(n as u16 - 1));
    for h in handles {
        let _ = h.join();
    }
    loop {
        let more: Vec<_> = std::mem::take(&mut *world.dma_threads.lock().expect("lock poisoned"));
        if more.is_empty() {
            break;
        }
        for h in more {
            let _ = h.join();
        }
    }
    if !sink.aborted() && world.finished.load(SeqCst) == program.num_devices() as u32 {
        world.check_shared();
    }
}
