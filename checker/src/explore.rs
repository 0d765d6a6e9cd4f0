//! The exhaustive explicit-state explorer.
//!
//! **Breadth-first, level by level, on every thread.** The states of one BFS level (the
//! *frontier*) are cut into chunks that worker threads take in turn; each expands its
//! states into the shared [`Store`]. A state first reached in the level keeps the smallest
//! `(position of the parent, event index)` it was reached with, and the next frontier is
//! the level's new states sorted by that key: the order one thread would have found them
//! in. A violation found in the level is the one with the smallest key, and the counts it
//! reports are those a single thread would have had when it found it. So the verdict, the
//! state and transition counts and the counterexample do not depend on the number of
//! threads or on their timing (`tests/model/modes.rs` compares them).
//!
//! **Depth-first** exploration runs on one thread.
//!
//! **Symmetry.** With [`Symmetry::Auto`] and a rotation-symmetric program, each successor
//! is replaced by the representative of its orbit ([`semcheck_model::symmetry`]) before it
//! is stored. A counterexample is rebuilt as a concrete schedule: the explorer recomputes
//! which event and rotation led from each state of the path to the next, composes the
//! rotations, and replays the schedule on the program to report the violation in the
//! program's own devices and cells.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Barrier, Mutex, RwLock};
use std::time::Instant;

use semcheck_model::reduction::PorScratch;
use semcheck_model::symmetry::{CanonScratch, Symmetry as Rotations};
use semcheck_model::{Event, Program, Rule, StepOutcome, Violation};
use tracing::{debug, info, info_span, trace};

use crate::config::{Config, Reduction, Strategy, Symmetry, Threads};
use crate::control::{Control, Progress};
use crate::counterexample::Namer;
use crate::outcome::{Counterexample, EngineRun, Outcome, Stats, StopReason, Verdict};
use crate::store::{Codec, Inserted, Store, NO_PARENT};
use crate::values::{LocalValues, SharedValues};

/// How often (in microseconds) the time and memory budgets are sampled.
const SAMPLE_MICROS: u64 = 50_000;
/// New states between two samples of the budgets, at most (see [`SAMPLE_MICROS`]).
const SAMPLE_STATES: u64 = 512;
/// Transitions a worker makes between two polls of the budgets, at most (with 64
/// expansions, whichever comes first).
const POLL_TRANSITIONS: u64 = 1024;
/// How often (in microseconds) progress is reported.
const PROGRESS_MICROS: u64 = 250_000;
/// How often (in microseconds) progress is logged.
const LOG_MICROS: u64 = 10_000_000;
/// With [`Threads::Auto`], levels smaller than this are expanded by one thread
/// ([`Threads::Exactly`] shares every level of two states or more), unless expanding them
/// is expected to take [`PARALLEL_WORK_NANOS`] or more.
const PARALLEL_MIN: usize = 256;
/// With [`Threads::Auto`], a level of two states or more whose expansion is expected (at
/// the cost per state of the level before) to take at least this many nanoseconds is
/// shared too: waking the helpers costs tens of microseconds, and the states of a large
/// kernel take hundreds each (the fused reduce-scatter GMM at N = 8: levels of about seven
/// states, 0.4 ms each).
const PARALLEL_WORK_NANOS: u64 = 500_000;
/// Most states per chunk of a level.
const CHUNK: usize = 512;
/// The most words of rotation tables (the source of every pc, semaphore and cell of each
/// of the N images of a state) symmetry reduction builds: 256 MiB.
const MAX_ROTATION_WORDS: usize = 1 << 26;

/// The rotations the explorer stores the states of `program` modulo under `config`, or
/// why it stores every state as it is (symmetry off, a kernel that is not
/// rotation-symmetric, a ring too large for the rotation tables).
pub fn rotation_symmetry(program: &Program, config: &Config) -> Result<Rotations, String> {
    if config.symmetry == Symmetry::Off {
        return Err("symmetry reduction is off".to_string());
    }
    let n = program.num_devices();
    let words = n.saturating_mul(n + program.num_sems() + program.cells.len());
    if words > MAX_ROTATION_WORDS {
        return Err(format!("the rotation tables of {n} devices would take {} MiB", (words * 4) >> 20));
    }
    let rotations = Rotations::of(program).map_err(|why| format!("not rotation-symmetric: {why}"))?;
    if rotations.order() <= 1 {
        return Err("a single device has no other rotation".to_string());
    }
    Ok(rotations)
}

/// Explores every reachable state of `program` under `config`.
pub fn explore(program: &Program, config: &Config) -> Outcome {
    explore_with(program, config, Control::default())
}

/// [`explore`], with a way to stop it early and to watch its progress.
pub fn explore_with(program: &Program, config: &Config, control: Control<'_>) -> Outcome {
    let _span = info_span!("explore", kernel = %program.kernel, devices = program.num_devices()).entered();
    let rotations = match rotation_symmetry(program, config) {
        Ok(r) => Some(r),
        Err(why) => {
            debug!(%why, "every state is stored as it is");
            None
        }
    };
    let threads = match config.strategy {
        Strategy::Bfs => config.threads.count(),
        Strategy::Dfs => 1,
    };
    let ex = Explorer {
        program,
        config,
        control,
        rotations,
        store: Store::new(program),
        values: SharedValues::new(program.values.clone()),
        start: Instant::now(),
        states: AtomicU64::new(0),
        transitions: AtomicU64::new(0),
        depth: AtomicU64::new(0),
        peak_memory: AtomicU64::new(0),
        last_sample: AtomicU64::new(0),
        last_sample_states: AtomicU64::new(0),
        last_progress: AtomicU64::new(0),
        last_log: AtomicU64::new(0),
        stopping: AtomicBool::new(false),
        stop: Mutex::new(None),
    };
    let (verdict, mut stats) = match config.strategy {
        Strategy::Bfs => ex.bfs(threads),
        Strategy::Dfs => ex.dfs(),
    };
    stats.seconds = ex.start.elapsed().as_secs_f64();
    stats.memory_bytes = ex.peak_memory.load(Relaxed).max(ex.store.memory_bytes());
    stats.symmetry = ex.rotations.as_ref().map_or(1, |r| r.order() as u64);
    stats.threads = threads as u64;
    info!(
        kernel = %program.kernel,
        verdict = verdict.name(),
        states = stats.states,
        transitions = stats.transitions,
        seconds = stats.seconds,
        "exploration finished"
    );
    Outcome { verdict, stats, run: EngineRun::Explore(*config) }
}

struct Explorer<'a> {
    program: &'a Program,
    config: &'a Config,
    control: Control<'a>,
    rotations: Option<Rotations>,
    store: Store,
    values: SharedValues,
    start: Instant,
    /// States stored so far (for the state budget and progress).
    states: AtomicU64,
    /// Events applied so far (for progress; `Stats` counts exactly).
    transitions: AtomicU64,
    depth: AtomicU64,
    peak_memory: AtomicU64,
    /// Microseconds since `start` of the last budget sample and progress report, and the
    /// states stored then.
    last_sample: AtomicU64,
    last_sample_states: AtomicU64,
    last_progress: AtomicU64,
    last_log: AtomicU64,
    stopping: AtomicBool,
    stop: Mutex<Option<StopReason>>,
}

/// What expanding one state found.
enum Expanded {
    /// Every successor was stored; `finished` when the state is final.
    Done { finished: bool },
    /// A rule breaks: at the event with this index (or, for a deadlock, at the state).
    Broke { event: Option<(u32, Event)>, violation: Violation },
}

/// A violation found in a BFS level, with its key.
struct Found {
    key: u64,
    slot: u32,
    event: Option<Event>,
    violation: Violation,
}

/// What one chunk of a level did, up to its first violation.
struct ChunkResult {
    start: usize,
    transitions: u64,
    finished: u64,
    found: Option<Found>,
}

/// The level being expanded, shared by the workers.
struct Level {
    frontier: RwLock<Vec<u32>>,
    next_chunk: AtomicUsize,
    chunk: AtomicUsize,
    results: Mutex<Vec<ChunkResult>>,
    /// The smallest key of a violation found so far in this level.
    best: AtomicU64,
    done: AtomicBool,
    barrier: Barrier,
}

/// One thread's buffers and value replica.
struct Worker<'e> {
    ex: &'e Explorer<'e>,
    values: LocalValues<'e>,
    codec: Codec,
    state: Vec<u32>,
    next: Vec<u32>,
    canon: Vec<u32>,
    enabled: Vec<Event>,
    chosen: Vec<Event>,
    por: PorScratch,
    canon_scratch: CanonScratch,
    /// Events applied by this worker, and how many of them `poll` has counted.
    transitions: u64,
    flushed: u64,
    expanded: u64,
    /// Names events for `trace`-level logging; built only when that level is on.
    namer: Option<Namer<'e>>,
}

impl<'e> Worker<'e> {
    fn new(ex: &'e Explorer<'e>) -> Worker<'e> {
        Worker {
            ex,
            values: ex.values.replica(),
            codec: Codec::default(),
            state: Vec::new(),
            next: Vec::new(),
            canon: Vec::new(),
            enabled: Vec::new(),
            chosen: Vec::new(),
            por: PorScratch::default(),
            canon_scratch: CanonScratch::default(),
            transitions: 0,
            flushed: 0,
            expanded: 0,
            namer: tracing::enabled!(tracing::Level::TRACE).then(|| Namer::new(ex.program)),
        }
    }

    /// The events explored from `self.state`, in `self.enabled`.
    fn events(&mut self) {
        let program = self.ex.program;
        self.enabled.clear();
        program.enabled(&self.state, &mut self.enabled);
        if self.ex.config.reduction == Reduction::PartialOrder && !self.enabled.is_empty() {
            program.persistent_set(&self.state, &self.enabled, &mut self.por, &mut self.chosen);
            std::mem::swap(&mut self.enabled, &mut self.chosen);
        }
    }

    /// Encodes the representative of `self.next` into `self.codec`; returns the rotation.
    fn encode_next(&mut self) -> usize {
        let Worker { ex, values, codec, next, canon, canon_scratch, .. } = self;
        match &ex.rotations {
            None => {
                ex.store.encode(next, codec);
                0
            }
            Some(r) => {
                let k = values.with(|t| r.canonicalise(ex.program, next, t, canon_scratch, canon));
                ex.store.encode(canon, codec);
                k
            }
        }
    }

    /// Expands the state in `slot`; `key` is its position in the BFS level (none in DFS).
    /// New successors are passed to `new`.
    fn expand(&mut self, slot: u32, key: Option<u64>, mut new: impl FnMut(u32)) -> Expanded {
        let ex = self.ex;
        let program = ex.program;
        ex.store.get(slot, &mut self.codec, &mut self.state);
        self.expanded += 1;
        self.events();
        if self.enabled.is_empty() {
            if program.is_final(&self.state) {
                return Expanded::Done { finished: true };
            }
            return Expanded::Broke { event: None, violation: program.deadlock(&self.state) };
        }
        for j in 0..self.enabled.len() {
            let event = self.enabled[j];
            self.transitions += 1;
            if let Some(namer) = &self.namer {
                trace!(event = %namer.event(&self.state, event), "step");
            }
            let Worker { values, state, next, .. } = self;
            match values.with(|t| program.step(state, event, t, next)) {
                StepOutcome::Next => {
                    self.encode_next();
                    let key = key.map(|pos| (pos << 32) | j as u64);
                    if let Inserted::New(child) = ex.store.insert(&self.codec.bytes, slot, key) {
                        ex.states.fetch_add(1, Relaxed);
                        new(child);
                    }
                }
                StepOutcome::Violation(v) => return Expanded::Broke { event: Some((j as u32, event)), violation: v },
            }
        }
        Expanded::Done { finished: false }
    }

    /// The event, and the rotation of its successor, that lead from the representative in
    /// `parent` to the one in `child`: the first in exploration order.
    fn edge(&mut self, parent: u32, child: u32) -> (Event, usize) {
        let ex = self.ex;
        ex.store.get(parent, &mut self.codec, &mut self.state);
        self.events();
        for j in 0..self.enabled.len() {
            let event = self.enabled[j];
            let Worker { values, state, next, .. } = self;
            if values.with(|t| ex.program.step(state, event, t, next)) == StepOutcome::Next {
                let k = self.encode_next();
                if ex.store.holds(child, &self.codec.bytes) {
                    return (event, k);
                }
            }
        }
        panic!("internal error: a stored state is not a successor of its parent")
    }

    /// Whether it is time to poll: every 64 expansions, or sooner when they produced many
    /// transitions (a state with hundreds of successors, each of them stored, can outgrow
    /// a memory budget within 64 expansions).
    fn due(&self) -> bool {
        self.expanded % 64 == 0 || self.transitions - self.flushed >= POLL_TRANSITIONS
    }

    /// Flushes this worker's counters into the explorer's and polls the budgets.
    fn poll(&mut self) -> bool {
        self.ex.transitions.fetch_add(self.transitions - self.flushed, Relaxed);
        self.flushed = self.transitions;
        self.ex.poll()
    }

    /// Expands chunks of `level` until none is left, then records what it did.
    fn run_level(&mut self, level: &Level) {
        let frontier = level.frontier.read().expect("a worker panicked");
        let size = level.chunk.load(Relaxed);
        self.values.refresh();
        loop {
            let start = level.next_chunk.fetch_add(1, Relaxed) * size;
            if start >= frontier.len() || self.ex.stopping.load(Relaxed) {
                return;
            }
            if level.best.load(Relaxed) < (start as u64) << 32 {
                continue; // a violation earlier in the level ends it before this chunk
            }
            let mut result = ChunkResult { start, transitions: 0, finished: 0, found: None };
            let before = self.transitions;
            for (pos, &slot) in frontier.iter().enumerate().skip(start).take(size) {
                if self.due() && self.poll() {
                    break;
                }
                match self.expand(slot, Some(pos as u64), |_| {}) {
                    Expanded::Done { finished } => result.finished += u64::from(finished),
                    Expanded::Broke { event, violation } => {
                        let key = ((pos as u64) << 32) | event.map_or(0, |(j, _)| j as u64);
                        level.best.fetch_min(key, Relaxed);
                        result.found = Some(Found { key, slot, event: event.map(|(_, e)| e), violation });
                        break;
                    }
                }
            }
            result.transitions = self.transitions - before;
            level.results.lock().expect("a worker panicked").push(result);
        }
    }
}

impl Explorer<'_> {
    /// Samples the budgets and reports progress when it is time; true once the
    /// exploration must stop.
    fn poll(&self) -> bool {
        if self.stopping.load(Relaxed) {
            return true;
        }
        let b = &self.config.budget;
        if let Some(reason) = self.control.stop.and_then(|s| s.requested()) {
            return self.halt(reason);
        }
        let states = self.states.load(Relaxed);
        if b.max_states.is_some_and(|m| states >= m) {
            return self.halt(StopReason::States);
        }
        let now = self.start.elapsed().as_micros() as u64;
        let last = self.last_sample.load(Relaxed);
        // Sampled every SAMPLE_MICROS, and every SAMPLE_STATES new states: states of many
        // cells can outgrow a memory budget between two ticks of the clock.
        let grown = states.saturating_sub(self.last_sample_states.load(Relaxed)) >= SAMPLE_STATES;
        if (now.saturating_sub(last) < SAMPLE_MICROS && !grown)
            || self.last_sample.compare_exchange(last, now, Relaxed, Relaxed).is_err()
        {
            return false;
        }
        self.last_sample_states.store(states, Relaxed);
        let memory = self.store.memory_bytes();
        self.peak_memory.fetch_max(memory, Relaxed);
        let clock = self.control.since.unwrap_or(self.start).elapsed().as_secs_f64();
        if b.max_seconds.is_some_and(|m| clock >= m) {
            return self.halt(StopReason::Time);
        }
        if b.max_memory_bytes.is_some_and(|m| memory >= m) {
            return self.halt(StopReason::Memory);
        }
        let progress = Progress {
            states,
            transitions: self.transitions.load(Relaxed),
            depth: self.depth.load(Relaxed),
            seconds: now as f64 / 1e6,
            memory_bytes: memory,
        };
        let logged = self.last_log.load(Relaxed);
        if now.saturating_sub(logged) >= LOG_MICROS {
            self.last_log.store(now, Relaxed);
            info!(states, transitions = progress.transitions, seconds = progress.seconds, "exploring");
        }
        if let Some(report) = self.control.progress {
            let last = self.last_progress.load(Relaxed);
            if now.saturating_sub(last) >= PROGRESS_MICROS {
                self.last_progress.store(now, Relaxed);
                report(&progress);
            }
        }
        false
    }

    fn halt(&self, reason: StopReason) -> bool {
        self.stop.lock().expect("a worker panicked").get_or_insert(reason);
        self.stopping.store(true, Relaxed);
        true
    }

    /// The incomplete verdict after a budget or an interrupt stopped the exploration.
    fn incomplete(&self, stats: &mut Stats) -> Verdict {
        let reason = self.stop.lock().expect("a worker panicked").unwrap_or(StopReason::Interrupted);
        let b = &self.config.budget;
        let states = self.states.load(Relaxed);
        stats.states = states;
        let memory = self.store.memory_bytes();
        self.peak_memory.fetch_max(memory, Relaxed);
        let mut limit = b.limit(reason);
        if reason == StopReason::Time && self.control.since.is_some() {
            limit.push_str(" (compiling included)");
        }
        Verdict::Incomplete {
            reason,
            detail: format!(
                "stopped by {limit}: {states} states stored, {} transitions, depth {}, {:.1} s, {} MiB of stored states; nothing was proved",
                stats.transitions,
                stats.max_depth,
                self.start.elapsed().as_secs_f64(),
                memory >> 20
            ),
        }
    }

    /// Stores the initial state (its representative); returns its slot.
    fn insert_initial(&self, w: &mut Worker<'_>, key: Option<u64>) -> u32 {
        w.next = self.program.initial_state();
        w.encode_next();
        let Inserted::New(slot) = self.store.insert(&w.codec.bytes, NO_PARENT, key) else {
            unreachable!("the store starts empty")
        };
        self.states.fetch_add(1, Relaxed);
        slot
    }

    fn bfs(&self, threads: usize) -> (Verdict, Stats) {
        let mut stats = Stats::default();
        let mut w = Worker::new(self);
        self.insert_initial(&mut w, Some(0));
        let mut sorted = Vec::new();
        self.store.end_level(&mut sorted);
        let level = Level {
            frontier: RwLock::new(sorted.iter().map(|&(_, s)| s).collect()),
            next_chunk: AtomicUsize::new(0),
            chunk: AtomicUsize::new(CHUNK),
            results: Mutex::new(Vec::new()),
            best: AtomicU64::new(u64::MAX),
            done: AtomicBool::new(false),
            barrier: Barrier::new(threads),
        };
        let mut stored = 1u64; // states in the levels expanded so far and the frontier
        let mut depth = 0u64;
        let mut nanos_per_state = 0u64; // of the level before, counted on every thread
        let verdict = std::thread::scope(|scope| {
            let mut helpers = false;
            let verdict = loop {
                let width = level.frontier.read().expect("a worker panicked").len();
                if width == 0 {
                    break None;
                }
                stats.max_depth = depth;
                self.depth.store(depth, Relaxed);
                debug!(depth, states = stored, width, "bfs level");
                level.next_chunk.store(0, Relaxed);
                level.best.store(u64::MAX, Relaxed);
                let parallel = threads > 1
                    && width >= 2
                    && (self.config.threads != Threads::Auto
                        || width >= PARALLEL_MIN
                        || width as u64 * nanos_per_state >= PARALLEL_WORK_NANOS);
                let began = Instant::now();
                level.chunk.store(if parallel { (width / (threads * 8)).clamp(1, CHUNK) } else { CHUNK }, Relaxed);
                if parallel {
                    if !helpers {
                        helpers = true;
                        for _ in 1..threads {
                            let level = &level;
                            scope.spawn(move || {
                                let mut w = Worker::new(self);
                                loop {
                                    level.barrier.wait();
                                    if level.done.load(Relaxed) {
                                        break;
                                    }
                                    w.run_level(level);
                                    w.poll();
                                    level.barrier.wait();
                                }
                            });
                        }
                    }
                    level.barrier.wait();
                    w.run_level(&level);
                    level.barrier.wait();
                } else {
                    w.run_level(&level);
                }
                let spent = began.elapsed().as_nanos() as u64 * if parallel { threads as u64 } else { 1 };
                nanos_per_state = spent / width as u64;
                w.poll();
                let mut results = std::mem::take(&mut *level.results.lock().expect("a worker panicked"));
                results.sort_by_key(|r| r.start);
                let first = results.iter().position(|r| r.found.is_some());
                for r in &results[..first.map_or(results.len(), |i| i + 1)] {
                    stats.transitions += r.transitions;
                    stats.finished_states += r.finished;
                }
                sorted.clear();
                self.store.end_level(&mut sorted);
                if let Some(i) = first {
                    let found = results.swap_remove(i).found.expect("a violation was found here");
                    stats.states = stored + sorted.iter().take_while(|(k, _)| *k < found.key).count() as u64;
                    break Some(self.counterexample(&mut w, found.slot, found.event, found.violation));
                }
                if self.stopping.load(Relaxed) {
                    break Some(self.incomplete(&mut stats));
                }
                stored += sorted.len() as u64;
                let mut frontier = level.frontier.write().expect("a worker panicked");
                frontier.clear();
                frontier.extend(sorted.iter().map(|&(_, s)| s));
                depth += 1;
            };
            if helpers {
                level.done.store(true, Relaxed);
                level.barrier.wait();
            }
            verdict.unwrap_or_else(|| {
                stats.states = stored;
                self.finished(&stats)
            })
        });
        (verdict, stats)
    }

    fn dfs(&self) -> (Verdict, Stats) {
        let mut stats = Stats::default();
        let mut w = Worker::new(self);
        let initial = self.insert_initial(&mut w, None);
        let mut stack: Vec<(u32, u64)> = vec![(initial, 0)];
        let mut children = Vec::new();
        while let Some((slot, depth)) = stack.pop() {
            stats.max_depth = stats.max_depth.max(depth);
            self.depth.store(depth, Relaxed);
            if w.due() && w.poll() {
                return (self.incomplete(&mut stats), stats);
            }
            children.clear();
            let before = w.transitions;
            let expanded = w.expand(slot, None, |c| children.push(c));
            stats.transitions += w.transitions - before;
            match expanded {
                Expanded::Done { finished } => stats.finished_states += u64::from(finished),
                Expanded::Broke { event, violation } => {
                    stats.states = self.states.load(Relaxed);
                    return (self.counterexample(&mut w, slot, event.map(|(_, e)| e), violation), stats);
                }
            }
            stack.extend(children.iter().rev().map(|&c| (c, depth + 1)));
        }
        stats.states = self.states.load(Relaxed);
        (self.finished(&stats), stats)
    }

    /// The verdict of an exploration that ran out of states to expand.
    fn finished(&self, stats: &Stats) -> Verdict {
        if stats.finished_states == 0 {
            // Cannot happen for a finite acyclic graph without deadlocks; kept as a guard so
            // an explorer that explores nothing can never report `proved`.
            return Verdict::Violation(Counterexample {
                violation: Violation::new(Rule::Deadlock, Vec::new(), "no execution finishes"),
                schedule: Vec::new(),
                engine_schedule: None,
            });
        }
        Verdict::Proved
    }

    /// The concrete schedule from the initial state to the state in `slot`, then `last`.
    fn counterexample(&self, w: &mut Worker<'_>, slot: u32, last: Option<Event>, violation: Violation) -> Verdict {
        let mut path = vec![slot];
        while let Some(&s) = path.last() {
            match self.store.parent(s) {
                NO_PARENT => break,
                p => path.push(p),
            }
        }
        path.reverse();
        w.values.refresh();
        let Some(rotations) = &self.rotations else {
            let mut schedule: Vec<Event> = path.windows(2).map(|pair| w.edge(pair[0], pair[1]).0).collect();
            schedule.extend(last);
            return Verdict::Violation(Counterexample { violation, schedule, engine_schedule: None });
        };
        // The path holds representatives: `rep_{i+1} = g^k(step(rep_i, e))`. The concrete
        // state is `g^h(rep_i)`, so the concrete event is `g^h(e)`, and h drops by k.
        let n = rotations.order();
        w.next = self.program.initial_state();
        let mut h = (n - w.encode_next()) % n;
        let mut schedule = Vec::with_capacity(path.len());
        for pair in path.windows(2) {
            let (e, k) = w.edge(pair[0], pair[1]);
            schedule.push(rotations.rotation(h).event(e));
            h = (h + n - k) % n;
        }
        schedule.extend(last.map(|e| rotations.rotation(h).event(e)));
        let concrete = self.replay(w, &schedule, last.is_some());
        assert_eq!(
            concrete.rule, violation.rule,
            "internal error: the counterexample found under symmetry does not replay on the program"
        );
        Verdict::Violation(Counterexample { violation: concrete, schedule, engine_schedule: None })
    }

    /// Runs a concrete schedule on the program and returns the violation it ends with.
    fn replay(&self, w: &mut Worker<'_>, schedule: &[Event], ends_with_event: bool) -> Violation {
        let program = self.program;
        let Worker { values, state, next, .. } = w;
        *state = program.initial_state();
        for (i, &event) in schedule.iter().enumerate() {
            assert!(program.is_enabled(state, event), "internal error: the concrete schedule is not enabled");
            match values.with(|t| program.step(state, event, t, next)) {
                StepOutcome::Next => std::mem::swap(state, next),
                StepOutcome::Violation(v) if i + 1 == schedule.len() && ends_with_event => return v,
                StepOutcome::Violation(v) => panic!("internal error: the concrete schedule breaks {} early", v.rule),
            }
        }
        program.deadlock(state)
    }
}
