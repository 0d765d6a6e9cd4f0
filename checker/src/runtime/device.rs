// Included by `runtime::os` and `runtime::sim`: the shared world and the device threads
// that interpret the kernel IR, one thread per device.

/// Everything the device and DMA threads of one run share.
#[derive(Debug)]
pub struct World {
    program: std::sync::Arc<Program>,
    config: RunConfig,
    reference: Reference,
    memory: Memory,
    sems: Vec<Semaphore>,
    gate: EntryGate,
    queues: Vec<DmaQueue>,
    dma_threads: std::sync::Mutex<Vec<sync::thread::JoinHandle<()>>>,
    lifecycle: Vec<Lifecycle>,
    unsent: Vec<AtomicU32>,
    finished: AtomicU32,
    /// Device threads that have stopped (finished or not), to close shared DMA queues.
    done: AtomicU32,
    sink: std::sync::Arc<Sink>,
}

impl World {
    fn new(program: std::sync::Arc<Program>, config: &RunConfig, sink: std::sync::Arc<Sink>) -> World {
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
            gate: EntryGate::new(program.repeat),
            queues,
            dma_threads: std::sync::Mutex::new(Vec::new()),
            lifecycle: (0..n).map(|_| Lifecycle::new()).collect(),
            unsent: (0..n).map(|_| AtomicU32::new(0)).collect(),
            finished: AtomicU32::new(0),
            done: AtomicU32::new(0),
            sink,
            reference,
            config: *config,
            program,
        }
    }

    /// Records a violation; under `OnViolation::Panic` also stops the execution by
    /// panicking, so that loom or shuttle records the failing schedule.
    fn fail(&self, v: Violation) {
        let text = v.to_string();
        self.sink.record(v);
        if self.config.on_violation == OnViolation::Panic {
            panic!("{VIOLATION_PANIC}: {text}");
        }
    }

    fn interrupted(&self, d: DeviceId, pc: u32, why: Interrupted) {
        if let Interrupted::TimedOut(have) = why {
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

    /// Runs device `d`'s program to its end, or until a violation.
    fn run_device(this: &std::sync::Arc<World>, d: DeviceId) {
        let n = this.program.num_devices();
        for pc in 0..this.program.devices[d.index()].len() as u32 {
            if sync::TIMED_WAITS && this.sink.aborted() {
                break;
            }
            if let Err(v) = World::run_op(this, d, pc) {
                match v {
                    Stop::Violation(v) => this.fail(v),
                    Stop::Interrupted(why) => this.interrupted(d, pc, why),
                }
                break;
            }
        }
        let last = this.done.fetch_add(1, SeqCst) + 1 == n as u32;
        match this.config.dma {
            DmaMode::PerIssuer => this.queues[d.index()].close(),
            DmaMode::ByKind if last => this.queues.iter().for_each(DmaQueue::close),
            _ => {}
        }
    }

    fn run_op(this: &std::sync::Arc<World>, d: DeviceId, pc: u32) -> Result<(), Stop> {
        let p = &*this.program;
        let dp = &p.devices[d.index()];
        let inv = dp.info[pc as usize].invocation;
        match dp.ops[pc as usize] {
            Op::Enter => {
                // Semaphores start at 0: only later invocations need the reset.
                let first = d.index() * p.sems_per_device;
                for i in (0..p.sems_per_device).filter(|_| inv > 0) {
                    let slot = SemSlot((first + i) as u32);
                    if p.sem_kind(slot) != SemKind::Barrier {
                        this.sems[slot.0 as usize].reset();
                    }
                }
                for &(cell, v) in &dp.reset {
                    this.memory.write(cell, &this.reference.concrete(p, v));
                }
                this.lifecycle[d.index()].enter(inv);
                this.gate.arrive(inv);
            }
            Op::EntryBarrier => {
                let watch = Watch::new(&this.sink, this.config.deadlock_after);
                this.gate.wait(inv, p.num_devices() as u32, &watch).map_err(Stop::Interrupted)?;
            }
            Op::Exit => this.exit(d, pc, inv)?,
            Op::Signal { target, sem, inc } => {
                if p.sem_kind(sem) != SemKind::Barrier {
                    this.lifecycle[target.index()]
                        .inside(inv)
                        .map_err(|why| Stop::Violation(p.signal_outside_kernel(d, pc, target, sem, &why)))?;
                }
                this.sems[sem.0 as usize].signal(inc);
            }
            Op::Wait { sem, amount } => {
                let watch = Watch::new(&this.sink, this.config.deadlock_after);
                this.sems[sem.0 as usize].wait(amount, &watch).map_err(Stop::Interrupted)?;
            }
            Op::LocalDma { src, dst, .. } | Op::RemoteDma { src, dst, .. } => {
                let (s, t) = (p.span(src), p.span(dst));
                this.race(this.memory.check(p, s, t, &p.describe_op(d, pc), d))?;
                let key = DmaKey { issuer: d, pc };
                this.memory.start_dma(s, t, (d.0 as u64) << 32 | pc as u64);
                this.unsent[d.index()].fetch_add(1, SeqCst);
                let job = std::sync::Arc::new(Job::new(key));
                match this.config.dma {
                    DmaMode::PerIssuer => this.queues[d.index()].push(job),
                    DmaMode::ByKind => {
                        this.queues[matches!(dp.ops[pc as usize], Op::RemoteDma { .. }) as usize].push(job)
                    }
                    DmaMode::PerEvent => spawn_completions(this, job),
                }
            }
            Op::Compute { kind, dst, src } => {
                let (dcells, scells) = (p.span(dst), p.span(src));
                let who = p.describe_op(d, pc);
                if kind == ComputeKind::Add {
                    this.race(this.memory.check(p, dcells, dcells, &who, d))?;
                }
                this.race(this.memory.check(p, scells, dcells, &who, d))?;
                let elems = this.reference.elems();
                // A formula may read its own destination: read every source cell first.
                let formula_src: Vec<Box<[f32]>> = match kind {
                    ComputeKind::Formula(_) => scells.iter().map(|&s| this.memory.read(s)).collect(),
                    _ => Vec::new(),
                };
                for (i, &c) in dcells.iter().enumerate() {
                    let s = scells.get(i).map(|&s| this.memory.read(s));
                    let v: Box<[f32]> = match (kind, s) {
                        (ComputeKind::Zero, _) => vec![0.0; elems].into(),
                        (ComputeKind::Copy, Some(s)) => s,
                        (ComputeKind::Add, Some(s)) => {
                            this.memory.read(c).iter().zip(s.iter()).map(|(a, b)| a + b).collect()
                        }
                        (ComputeKind::Apply(f), Some(s)) => s.iter().map(|&x| Reference::apply(f, x)).collect(),
                        (ComputeKind::Formula(k), _) => {
                            p.formulas[k as usize].eval_numeric(i, &formula_src, elems, Reference::apply)
                        }
                        (_, None) => vec![f32::NAN; elems].into(),
                    };
                    this.memory.write(c, &v);
                }
            }
        }
        Ok(())
    }

    /// A race stops the device, or is noted (`stop_on_race == false`).
    fn race(&self, check: Result<(), Violation>) -> Result<(), Stop> {
        match check {
            Err(v) if self.config.stop_on_race => Err(Stop::Violation(v)),
            Err(v) => {
                self.sink.note_race(v);
                Ok(())
            }
            Ok(()) => Ok(()),
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
        if let Some(v) = self.wrong_result(&wrong, last, p.repeat - 1) {
            self.fail(v);
        }
    }

    /// The checks at a device's exit, in the model's order: outputs, DMAs still being read,
    /// semaphores, and once every device has finished, the barrier semaphores.
    fn exit(&self, d: DeviceId, pc: u32, inv: u32) -> Result<(), Stop> {
        let p = &*self.program;
        let n = p.num_devices() as u32;
        let dp = &p.devices[d.index()];
        let mut wrong: Vec<(CellId, ValueId, Box<[f32]>)> = Vec::new();
        for &(cell, want) in &dp.expected {
            let got = self.memory.read(cell);
            if !self.reference.matches(p, want, &got) {
                wrong.push((cell, want, got));
            }
        }
        if let Some(v) = self.wrong_result(&wrong, d, inv) {
            return Err(Stop::Violation(v));
        }
        let pending = self.unsent[d.index()].load(SeqCst);
        if pending > 0 {
            return Err(Stop::Violation(Violation::new(
                Rule::SemaphoreLeak,
                vec![d],
                format!("{d} exits (invocation {inv}) while {pending} DMA(s) it started are not yet sent (or not done)"),
            )));
        }
        let first = d.index() * p.sems_per_device;
        for i in 0..p.sems_per_device {
            let slot = SemSlot((first + i) as u32);
            let v = self.sems[slot.0 as usize].value();
            if v != 0 && p.sem_kind(slot) != SemKind::Barrier {
                return Err(Stop::Violation(p.semaphore_leak(d, pc, slot, v)));
            }
        }
        self.lifecycle[d.index()].exit(inv);
        let last_exit = pc as usize + 1 == dp.len();
        if last_exit && self.finished.fetch_add(1, SeqCst) + 1 == n {
            for slot in (0..p.num_sems()).map(|s| SemSlot(s as u32)) {
                let v = self.sems[slot.0 as usize].value();
                if v != 0 && p.sem_kind(slot) == SemKind::Barrier {
                    return Err(Stop::Violation(p.barrier_leak(slot, v)));
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

/// Runs `program` once with one thread per device (and the DMA threads of `config.dma`),
/// and returns the first violation, if any. Under loom and shuttle, call it inside the
/// tool's model closure with `OnViolation::Panic`.
pub fn run(program: &std::sync::Arc<Program>, config: &RunConfig) -> Option<Violation> {
    let sink = std::sync::Arc::new(Sink::default());
    run_into(program, config, &sink);
    sink.take()
}

/// Like [`run`], recording the violation in `sink`, which outlives a run that a
/// violation stopped by panicking (`OnViolation::Panic`).
pub fn run_into(program: &std::sync::Arc<Program>, config: &RunConfig, sink: &std::sync::Arc<Sink>) {
    let world = std::sync::Arc::new(World::new(program.clone(), config, sink.clone()));
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
    // The last device runs on the calling thread: one thread fewer for loom's limit.
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
