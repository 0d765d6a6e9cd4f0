//! Why a counterexample breaks its rule, in the few events without which it would not:
//! a backward slice of the run over its [`causes`](super::causes), from the event that
//! breaks the rule.
//!
//! **Seeds.** The breaking event, and what the violation names: for a race the access
//! (`read` or `write`) and the start of the DMA still in flight (`dma-in-flight`); for a
//! DMA or a signal outside the kernel the start of that DMA and, when the target has
//! already left, its `exit`; for a leak the increments no wait consumed (`left-over`) or
//! the DMA still outstanding; for a deadlock each stuck device (`blocked`, not an event of
//! the schedule: its wait never happens).
//!
//! **Following causes back.** From a device's step, the *gate*: the last wait before it on
//! its device that synchronised with another device (a local DMA's own completion does not
//! count, unless it was the wrong one), or a re-entry into the kernel; from a wait, the
//! events whose increments it consumed (`satisfied-by`, the wrong one marked: a later DMA's
//! bytes consumed while an earlier DMA on the same semaphore was still in flight, a signal
//! of another invocation); from a DMA's completion, its start (`dma-start`). Each gate is
//! one hop back; the slice follows two (one if that would make more than
//! [`MAX_POINTS`] points).
//!
//! **Summarised.** Barriers and handshakes that only order the rest (the entry barrier, a
//! wait satisfied by the signals of other devices in the same invocation) are not followed:
//! one `summary` line says who passed them ("every device passed its waits on barrier,
//! second (events 1-14)"). A gate of the breaking event itself is always shown.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use semcheck_model::ir::{Loc, SemKind};
use semcheck_model::program::{CellId, ComputeKind, Op, SemSlot};
use semcheck_model::{DeviceId, DmaKey, Event, Program, Rule, Violation};

use super::causes::{causes, Causes, Why};
use super::names::Namer;
use super::render::step_op;
use super::run::{Ending, TracedRun};

/// The most points an explanation aims for: with more, the slice follows one hop fewer.
pub const MAX_POINTS: usize = 12;

/// How many gates back the slice follows at most.
const MAX_HOPS: usize = 2;

/// What a point of an explanation does in the story.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// The racing access reads the cell.
    Read,
    /// The racing access writes the cell.
    Write,
    /// The start of the DMA still in flight when the rule breaks.
    DmaInFlight,
    /// The event that breaks a rule other than a race.
    Breaks,
    /// A wait that let a device through.
    Wait,
    /// An event whose increment a wait of the explanation consumed.
    SatisfiedBy,
    /// The start of a DMA whose completion is part of the explanation.
    DmaStart,
    /// A device leaving the kernel.
    Exit,
    /// A device entering the kernel again (a later invocation).
    Reenter,
    /// An increment no wait consumed (what leaves a semaphore non-zero).
    LeftOver,
    /// A device stuck at the end of a deadlock (not an event: its wait never happens).
    Blocked,
    /// Barriers and handshakes that only order the rest, in one line.
    Summary,
}

impl Role {
    /// The role's name in JSON and in the text report.
    pub fn name(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Write => "write",
            Role::DmaInFlight => "dma-in-flight",
            Role::Breaks => "breaks",
            Role::Wait => "wait",
            Role::SatisfiedBy => "satisfied-by",
            Role::DmaStart => "dma-start",
            Role::Exit => "exit",
            Role::Reenter => "re-enter",
            Role::LeftOver => "left-over",
            Role::Blocked => "blocked",
            Role::Summary => "summary",
        }
    }
}

/// One point of an explanation: an event of the run, a stuck device, or the summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    /// The event's 0-based index in the run (for the summary, the last event it covers); `None` for
    /// a device stuck at the end of a deadlock.
    pub index: Option<usize>,
    /// The device it happens on (`None` for the summary).
    pub device: Option<DeviceId>,
    /// What it does in the story.
    pub role: Role,
    /// The event's name (for a stuck device, its operation; for the summary, the line).
    pub text: String,
    /// Why it matters, in words (`satisfies the wait of event 30: the wrong one ...`).
    pub note: Option<String>,
    /// Whether it is the wrong increment: a later DMA's bytes, or a signal of another
    /// invocation, consumed by a wait meant for another.
    pub wrong: bool,
    /// The kernel source line it comes from.
    pub loc: Option<Loc>,
}

/// The causal core of a counterexample.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Explanation {
    /// The points: the summary first (if any), then the events in schedule order, then
    /// the stuck devices of a deadlock.
    pub points: Vec<Point>,
    /// How many gates back the slice followed.
    pub hops: usize,
}

impl Explanation {
    /// The explanation as lines of text for a person: one line per event (`17. d0 (0)
    /// start ...`), its role and note on the next; the summary and stuck devices marked
    /// `-`.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for p in &self.points {
            let number = match (p.role, p.index) {
                (Role::Summary, _) | (_, None) => "    -".to_string(),
                (_, Some(i)) => format!("{:>4}.", i + 1),
            };
            out.push(format!("{number} {}", p.text));
            if p.role != Role::Summary {
                let role =
                    if p.wrong { format!("{}, the wrong one", p.role.name()) } else { p.role.name().to_string() };
                match &p.note {
                    Some(note) => out.push(format!("        [{role}] {note}")),
                    None => out.push(format!("        [{role}]")),
                }
            }
        }
        out
    }

    /// The 0-based indices of the run's events the explanation shows (the summary's
    /// included).
    pub fn indices(&self) -> BTreeSet<usize> {
        self.points.iter().filter(|p| p.role != Role::Summary).filter_map(|p| p.index).collect()
    }
}

/// The explanation of `run`'s violation (empty for a run that breaks no rule).
pub fn explain(program: &Program, run: &TracedRun) -> Explanation {
    let Some(violation) = run.ending.violation() else { return Explanation::default() };
    let slicer = Slicer::new(program, run, violation);
    let mut best = slicer.slice(MAX_HOPS);
    for hops in (1..MAX_HOPS).rev() {
        if best.points.len() <= MAX_POINTS {
            break;
        }
        best = slicer.slice(hops);
    }
    best
}

/// The cells an operation reads and writes.
fn accesses(program: &Program, op: Op) -> (Vec<CellId>, Vec<CellId>) {
    match op {
        Op::LocalDma { src, dst, .. } | Op::RemoteDma { src, dst, .. } => {
            (program.span(src).to_vec(), program.span(dst).to_vec())
        }
        Op::Compute { kind, dst, src } => {
            let mut reads = program.span(src).to_vec();
            if kind == ComputeKind::Add {
                reads.extend_from_slice(program.span(dst));
            }
            (reads, program.span(dst).to_vec())
        }
        _ => (Vec::new(), Vec::new()),
    }
}

/// The semaphore an event increments, if any.
fn increment(program: &Program, state: &[u32], event: Event) -> Option<SemSlot> {
    match (event, event_dma(event).map(|k| program.dma_op(k))) {
        (Event::Step(_), _) => match step_op(program, state, event) {
            Some((_, _, Op::Signal { sem, .. })) => Some(sem),
            _ => None,
        },
        (Event::Sent(_), Some(Op::RemoteDma { send_sem, .. })) => Some(send_sem),
        (Event::Received(_) | Event::CellLanded(..), Some(Op::RemoteDma { recv_sem, .. })) => Some(recv_sem),
        (Event::Done(_) | Event::CellLanded(..), Some(Op::LocalDma { sem, .. })) => Some(sem),
        _ => None,
    }
}

/// The DMA of a DMA event.
fn event_dma(event: Event) -> Option<DmaKey> {
    match event {
        Event::Step(_) => None,
        Event::Sent(k) | Event::Received(k) | Event::Done(k) | Event::CellLanded(k, _) => Some(k),
    }
}

/// What a gate is.
enum Gate {
    /// A wait that synchronised with another device.
    Wait(usize),
    /// The implicit entry barrier.
    EntryBarrier(usize),
    /// The `enter` of a later invocation.
    Reenter(usize),
}

/// The run, its causes and what the slice needs about every event.
struct Slicer<'a> {
    program: &'a Program,
    run: &'a TracedRun,
    violation: &'a Violation,
    namer: Namer<'a>,
    causes: Causes,
    /// The semaphore each event increments.
    incs: Vec<Option<SemSlot>>,
}

/// The points of one slice being built: event index -> (role, note, wrong).
#[derive(Default)]
struct Core {
    points: BTreeMap<usize, (Role, Option<String>, bool)>,
    queue: VecDeque<(usize, usize)>,
    /// Waits and entry barriers summarised instead of followed.
    summarised: BTreeSet<usize>,
    blocked: Vec<Point>,
}

impl Core {
    fn add(&mut self, i: usize, role: Role, note: Option<String>, wrong: bool, hop: usize) {
        if let std::collections::btree_map::Entry::Vacant(v) = self.points.entry(i) {
            v.insert((role, note, wrong));
            self.queue.push_back((i, hop));
        }
    }
}

impl<'a> Slicer<'a> {
    fn new(program: &'a Program, run: &'a TracedRun, violation: &'a Violation) -> Slicer<'a> {
        let incs = run.events.iter().enumerate().map(|(i, &e)| increment(program, &run.states[i], e)).collect();
        Slicer { program, run, violation, namer: Namer::new(program), causes: causes(program, run), incs }
    }

    fn op_at(&self, i: usize) -> Option<(DeviceId, u32, Op)> {
        step_op(self.program, &self.run.states[i], self.run.events[i])
    }

    fn breaking(&self) -> Option<usize> {
        match self.run.ending {
            Ending::Violation { at, .. } => Some(at),
            _ => None,
        }
    }

    fn started(&self, k: DmaKey) -> Option<usize> {
        self.causes.started.get(&k).copied()
    }

    /// The previous step of the same device.
    fn prev_step(&self, i: usize) -> Option<usize> {
        self.causes.of[i].iter().find(|c| c.why == Why::Program).map(|c| c.from)
    }

    /// The events whose increments wait `w` consumed; of a copy landing cell by cell, only
    /// its last cell.
    fn satisfiers(&self, w: usize) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        let consumed = self.causes.consumed(w);
        for (n, &j) in consumed.iter().enumerate() {
            let same_dma_later = event_dma(self.run.events[j])
                .is_some_and(|k| consumed[n + 1..].iter().any(|&l| event_dma(self.run.events[l]) == Some(k)));
            if !same_dma_later && !out.contains(&j) {
                out.push(j);
            }
        }
        out
    }

    /// The device whose operation an increment comes from: the signaller, or the issuer of
    /// the DMA.
    fn source_device(&self, j: usize) -> DeviceId {
        match self.run.events[j] {
            Event::Step(d) => d,
            e => event_dma(e).expect("a DMA event").issuer,
        }
    }

    /// Why increment `j` is the wrong one for wait `w`, if it is.
    fn wrong(&self, j: usize, w: usize) -> Option<String> {
        let (wd, wpc, Op::Wait { sem, .. }) = self.op_at(w)? else { return None };
        let winv = self.program.invocation_of(wd, wpc);
        match self.run.events[j] {
            Event::Step(_) => {
                let (sd, spc, _) = self.op_at(j)?;
                let sinv = self.program.invocation_of(sd, spc);
                (sinv != winv).then(|| {
                    format!("the wrong one: a signal of {sd}'s invocation {sinv} counted for {wd}'s invocation {winv}")
                })
            }
            e => {
                let x = event_dma(e)?;
                let sx = self.started(x)?;
                // An earlier DMA that counts into the same semaphore and had not, by the
                // wait, delivered its increment.
                let mut earlier: Vec<(usize, DmaKey)> = self
                    .causes
                    .started
                    .iter()
                    .filter(|&(&y, &sy)| y != x && sy < sx && sy < w && self.counts_into(y, sem))
                    .filter(|&(&y, _)| {
                        !(0..w).any(|t| event_dma(self.run.events[t]) == Some(y) && self.incs[t] == Some(sem))
                    })
                    .map(|(&y, &sy)| (sy, y))
                    .collect();
                earlier.sort_unstable_by_key(|&(sy, y)| (sy, y.issuer, y.pc));
                let &(sy, y) = earlier.first()?;
                let sem_name = self.program.sem_full_name(sem);
                Some(if Some(y) == self.violation.dma {
                    format!(
                        "the wrong one: these are a later DMA's bytes; the DMA of event {} (started earlier, \
                         still in flight) also counts into {sem_name} and was the one to wait for",
                        sy + 1
                    )
                } else {
                    format!(
                        "out of order: the DMA of event {}, started earlier, also counts into {sem_name} and had \
                         not landed yet",
                        sy + 1
                    )
                })
            }
        }
    }

    /// Whether DMA `y` increments `sem` at one of its events.
    fn counts_into(&self, y: DmaKey, sem: SemSlot) -> bool {
        match self.program.dma_op(y) {
            Op::RemoteDma { send_sem, recv_sem, .. } => send_sem == sem || recv_sem == sem,
            Op::LocalDma { sem: s, .. } => s == sem,
            _ => false,
        }
    }

    /// Whether wait `w` synchronised with another device, or was satisfied by a wrong
    /// increment.
    fn synchronises(&self, w: usize) -> bool {
        let (d, _, _) = self.op_at(w).expect("a step");
        self.satisfiers(w).iter().any(|&j| self.source_device(j) != d || self.wrong(j, w).is_some())
    }

    /// Whether wait `w` only orders: every increment it consumed is a signal of another
    /// device in the same invocation.
    fn handshake(&self, w: usize) -> bool {
        let (d, _, _) = self.op_at(w).expect("a step");
        let from = self.satisfiers(w);
        !from.is_empty()
            && from.iter().all(|&j| {
                matches!(self.op_at(j), Some((s, _, Op::Signal { .. })) if s != d) && self.wrong(j, w).is_none()
            })
    }

    /// The gate of the step at `i` (searching from `i` itself when `inclusive`).
    fn gate(&self, i: usize, inclusive: bool) -> Option<Gate> {
        let mut at = if inclusive { Some(i) } else { self.prev_step(i) };
        while let Some(p) = at {
            match self.op_at(p) {
                Some((_, _, Op::Wait { .. })) if self.synchronises(p) => return Some(Gate::Wait(p)),
                Some((_, _, Op::EntryBarrier)) => return Some(Gate::EntryBarrier(p)),
                Some((d, pc, Op::Enter)) if self.program.invocation_of(d, pc) > 0 => return Some(Gate::Reenter(p)),
                _ => {}
            }
            at = self.prev_step(p);
        }
        None
    }

    /// Adds the gate of step `i` at `hop`, unless it is a handshake (summarised).
    fn follow_gate(&self, core: &mut Core, i: usize, hop: usize, inclusive: bool) {
        let Some(gate) = self.gate(i, inclusive) else { return };
        match gate {
            Gate::Wait(w) if self.handshake(w) && Some(i) != self.breaking() => {
                core.summarised.insert(w);
            }
            Gate::Wait(w) => {
                let note = match self.breaking() {
                    Some(b) if b == i => format!("the last wait before event {}: it let it through", i + 1),
                    _ if inclusive => "the last wait it passed".to_string(),
                    _ => format!("the last wait before event {}", i + 1),
                };
                core.add(w, Role::Wait, Some(note), false, hop);
            }
            Gate::EntryBarrier(e) => {
                core.summarised.insert(e);
            }
            Gate::Reenter(e) => {
                let (d, pc, _) = self.op_at(e).expect("a step");
                let note = format!("{d} enters the kernel again (invocation {})", self.program.invocation_of(d, pc));
                core.add(e, Role::Reenter, Some(note), false, hop);
            }
        }
    }

    /// The seeds: what the violation itself names.
    fn seeds(&self, core: &mut Core) {
        let v = self.violation;
        let dma_start = v.dma.and_then(|k| self.started(k));
        match self.run.ending {
            Ending::Violation { at, .. } => {
                match (v.rule, v.dma, self.op_at(at)) {
                    (Rule::Race, Some(k), Some((_, _, op))) => {
                        let (role, cell, dma_writes) = self.race_roles(op, k);
                        let cell = cell.map(|c| self.program.cell_full_name(c)).unwrap_or_else(|| "the cell".into());
                        let other =
                            dma_start.map_or_else(|| "a DMA".to_string(), |s| format!("the DMA of event {}", s + 1));
                        let (access, what) = if role == Role::Read {
                            ("reads", "writing")
                        } else {
                            ("writes", if dma_writes { "writing" } else { "reading" })
                        };
                        core.add(at, role, Some(format!("{access} {cell} while {other} is still {what} it")), false, 0);
                        if let Some(s) = dma_start {
                            let what = if dma_writes { "writes" } else { "reads" };
                            let note = format!("its copy {what} {cell} and is still in flight at event {}", at + 1);
                            core.add(s, Role::DmaInFlight, Some(note), false, 0);
                        }
                    }
                    _ => core.add(at, Role::Breaks, Some(self.breaks_note(at)), false, 0),
                }
                if v.rule != Rule::Race {
                    if let Some(s) = dma_start {
                        let note = match v.rule {
                            Rule::SemaphoreLeak => "starts the DMA still outstanding at exit".to_string(),
                            _ => "starts the DMA that breaks the rule".to_string(),
                        };
                        core.add(s, Role::DmaStart, Some(note), false, 0);
                    }
                }
                if v.rule == Rule::OutsideKernel {
                    self.exits_of_targets(core, at);
                }
                if v.rule == Rule::SemaphoreLeak && v.dma.is_none() {
                    self.left_over(core, at);
                }
            }
            Ending::Deadlock(_) => self.stuck(core),
            Ending::Clean => {}
        }
    }

    /// What the breaking event (of a rule other than a race) does wrong.
    fn breaks_note(&self, at: usize) -> String {
        let v = self.violation;
        let state = &self.run.states[at];
        let event = self.run.events[at];
        let outside = |issuer: DeviceId, pc: u32, target: DeviceId| {
            let inv = self.program.invocation_of(issuer, pc);
            self.program.inside_kernel_at(self.program.pc(state, target), target, inv).err()
        };
        match (v.rule, event) {
            (Rule::OutsideKernel, Event::Step(d)) => match self.op_at(at) {
                Some((_, pc, Op::Signal { target, sem, .. })) => match outside(d, pc, target) {
                    Some(why) => format!("signals {} on {target}, which {why}", self.program.sem_name(sem)),
                    None => format!("breaks {}", v.rule),
                },
                _ => format!("breaks {}", v.rule),
            },
            (Rule::OutsideKernel, e) => {
                let k = event_dma(e).expect("a DMA event");
                let target = self.namer.device_of(e);
                match outside(k.issuer, k.pc, target) {
                    Some(why) => format!("lands in {target}, which {why}"),
                    None => format!("breaks {}", v.rule),
                }
            }
            (Rule::SemaphoreLeak, _) => match (v.dma.and_then(|k| self.started(k)), self.leaking_slot(at)) {
                (Some(s), _) => format!("exits while the DMA of event {} is still outstanding", s + 1),
                (None, Some(slot)) => format!(
                    "exits while {} is {}, not 0",
                    self.program.sem_full_name(slot),
                    self.program.sem_value(state, slot)
                ),
                _ => format!("breaks {}", v.rule),
            },
            _ => format!("breaks {}", v.rule),
        }
    }

    /// For a rule broken on a device that has left the kernel: that device's exit.
    fn exits_of_targets(&self, core: &mut Core, at: usize) {
        for &d in self.violation.devices.iter().skip(1) {
            let last_exit = (0..at).rev().find(|&i| matches!(self.op_at(i), Some((e, _, Op::Exit)) if e == d));
            if let Some(x) = last_exit {
                let (_, pc, _) = self.op_at(x).expect("a step");
                let entered_again = (x + 1..at).any(|i| matches!(self.op_at(i), Some((e, _, Op::Enter)) if e == d));
                if !entered_again {
                    let inv = self.program.invocation_of(d, pc);
                    core.add(x, Role::Exit, Some(format!("{d} leaves the kernel (invocation {inv})")), false, 0);
                }
            }
        }
    }

    /// The semaphore a leak found at event `at` is about: the first non-zero semaphore of
    /// the exiting device (the one the model reports), else the first non-zero barrier
    /// semaphore.
    fn leaking_slot(&self, at: usize) -> Option<SemSlot> {
        let state = &self.run.states[at];
        let slots = || (0..self.program.num_sems() as u32).map(SemSlot);
        slots()
            .find(|&s| {
                self.violation.devices.contains(&self.program.sem_device(s))
                    && self.program.sem_value(state, s) != 0
                    && self.program.sem_kind(s) != SemKind::Barrier
            })
            .or_else(|| slots().find(|&s| self.program.sem_value(state, s) != 0))
    }

    /// For a leak found at exit: the increments of the leaking semaphore no wait consumed.
    fn left_over(&self, core: &mut Core, at: usize) {
        let Some(slot) = self.leaking_slot(at) else { return };
        let name = self.program.sem_full_name(slot);
        for &i in self.causes.left.get(slot.0 as usize).into_iter().flatten().filter(|&&i| i < at) {
            core.add(i, Role::LeftOver, Some(format!("its increment of {name} is never waited for")), false, 0);
        }
    }

    /// For a deadlock: every device that has not finished, at the operation it is stuck at.
    fn stuck(&self, core: &mut Core) {
        let state = self.run.states.last().expect("a final state");
        let p = self.program;
        for d in p.mesh.devices() {
            let pc = p.pc(state, d);
            if pc as usize >= p.devices[d.index()].len() {
                continue;
            }
            let why = match p.devices[d.index()].ops[pc as usize] {
                Op::Wait { sem, amount } => {
                    let who: Vec<String> = p
                        .mesh
                        .devices()
                        .filter(|&e| {
                            let dp = &p.devices[e.index()];
                            (p.pc(state, e)..dp.len() as u32).any(|q| match dp.ops[q as usize] {
                                Op::Signal { sem: s, .. } | Op::LocalDma { sem: s, .. } => s == sem,
                                Op::RemoteDma { send_sem, recv_sem, .. } => send_sem == sem || recv_sem == sem,
                                _ => false,
                            })
                        })
                        .map(|e| e.to_string())
                        .collect();
                    let have = p.sem_value(state, sem);
                    let full = p.sem_full_name(sem);
                    if who.is_empty() {
                        format!("waits for {full} >= {amount} (it is {have}): no remaining operation increments it")
                    } else {
                        format!(
                            "waits for {full} >= {amount} (it is {have}): only {} would increment it, and is stuck too",
                            who.join(", ")
                        )
                    }
                }
                Op::EntryBarrier => "waits at the entry barrier for a device that has not entered".to_string(),
                _ => "cannot move".to_string(),
            };
            core.blocked.push(Point {
                index: None,
                device: Some(d),
                role: Role::Blocked,
                text: self.namer.op(d, pc),
                note: Some(format!("{d} is stuck here: {why}")),
                wrong: false,
                loc: self.namer.op_loc(d, pc).cloned(),
            });
            // How far it got: the last wait that let it through.
            if let Some(last) = (0..self.run.events.len()).rev().find(|&i| self.run.events[i] == Event::Step(d)) {
                self.follow_gate(core, last, 1, true);
            }
        }
    }

    /// The role of the racing access, the cell, and whether the DMA in flight writes it.
    fn race_roles(&self, op: Op, dma: DmaKey) -> (Role, Option<CellId>, bool) {
        let (reads, writes) = accesses(self.program, op);
        let (src, dst) = match self.program.dma_op(dma) {
            Op::LocalDma { src, dst, .. } | Op::RemoteDma { src, dst, .. } => {
                (self.program.span(src).to_vec(), self.program.span(dst).to_vec())
            }
            _ => (Vec::new(), Vec::new()),
        };
        let first = |mine: &[CellId], theirs: &[CellId]| mine.iter().copied().find(|c| theirs.contains(c));
        if let Some(c) = first(&writes, &dst) {
            (Role::Write, Some(c), true)
        } else if let Some(c) = first(&reads, &dst) {
            (Role::Read, Some(c), true)
        } else if let Some(c) = first(&writes, &src) {
            (Role::Write, Some(c), false)
        } else {
            (Role::Read, None, true)
        }
    }

    /// Follows the causes of every point added, up to `hops` gates back.
    fn expand(&self, core: &mut Core, hops: usize) {
        while let Some((i, hop)) = core.queue.pop_front() {
            let event = self.run.events[i];
            if let Some(k) = event_dma(event) {
                if let Some(s) = self.started(k) {
                    let role = core.points[&i].0;
                    if role != Role::DmaInFlight {
                        core.add(s, Role::DmaStart, Some(format!("starts the DMA of event {}", i + 1)), false, hop);
                    }
                }
                continue;
            }
            match self.op_at(i) {
                Some((_, _, Op::Wait { .. })) => {
                    for j in self.satisfiers(i) {
                        let wrong = self.wrong(j, i);
                        let mut note = format!("satisfies the wait of event {}", i + 1);
                        if let Some(w) = &wrong {
                            note.push_str(": ");
                            note.push_str(w);
                        }
                        core.add(j, Role::SatisfiedBy, Some(note), wrong.is_some(), hop);
                    }
                }
                Some(_) if hop < hops => self.follow_gate(core, i, hop + 1, false),
                _ => {}
            }
        }
    }

    /// The one line of the barriers and handshakes summarised: every entry barrier of the
    /// run (when one was summarised), and every handshake wait on a semaphore of the
    /// handshakes summarised or passed before them.
    fn summary(&self, core: &Core) -> Option<Point> {
        let &last = core.summarised.iter().next_back()?;
        let end = self.breaking().unwrap_or(self.run.events.len());
        let mut names: BTreeSet<String> = BTreeSet::new();
        let mut entry = false;
        for i in 0..=last {
            match self.op_at(i) {
                Some((_, _, Op::Wait { sem, .. })) if core.summarised.contains(&i) || self.handshake(i) => {
                    names.insert(self.program.sem_name(sem));
                }
                Some((_, _, Op::EntryBarrier)) if core.summarised.contains(&i) => entry = true,
                _ => {}
            }
        }
        let mut covered: Vec<usize> = Vec::new();
        let mut devices: BTreeSet<DeviceId> = BTreeSet::new();
        for i in (0..end).filter(|i| !core.points.contains_key(i)) {
            match self.op_at(i) {
                Some((d, _, Op::EntryBarrier)) if entry => {
                    devices.insert(d);
                    covered.push(i);
                }
                Some((d, _, Op::Wait { sem, .. }))
                    if names.contains(&self.program.sem_name(sem)) && self.handshake(i) =>
                {
                    devices.insert(d);
                    covered.push(i);
                    covered.extend(self.satisfiers(i));
                }
                _ => {}
            }
        }
        covered.sort_unstable();
        covered.dedup();
        let (&first, &last) = (covered.first()?, covered.last()?);
        let names: Vec<String> = names.into_iter().collect();
        let all = devices.len() == self.program.num_devices();
        let who = if all {
            "every device".to_string()
        } else {
            devices.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
        };
        let its = if all || devices.len() == 1 { "its" } else { "their" };
        let what = match (entry, names.is_empty()) {
            (true, true) => "the entry barrier".to_string(),
            (false, _) => format!("{its} waits on {}", names.join(", ")),
            (true, false) => format!("the entry barrier and {its} waits on {}", names.join(", ")),
        };
        let events =
            if first == last { format!("event {}", last + 1) } else { format!("events {}-{}", first + 1, last + 1) };
        Some(Point {
            index: Some(last),
            device: None,
            role: Role::Summary,
            text: format!("{who} passed {what} ({events})"),
            note: Some(format!("{} events that only order the rest", covered.len())),
            wrong: false,
            loc: None,
        })
    }

    /// The slice following at most `hops` gates back.
    fn slice(&self, hops: usize) -> Explanation {
        let mut core = Core::default();
        self.seeds(&mut core);
        self.expand(&mut core, hops);
        let mut points: Vec<Point> = core
            .points
            .iter()
            .map(|(&i, (role, note, wrong))| {
                let event = self.run.events[i];
                Point {
                    index: Some(i),
                    device: Some(self.namer.device_of(event)),
                    role: *role,
                    text: self.run.names[i].clone(),
                    note: note.clone(),
                    wrong: *wrong,
                    loc: self.namer.event_loc(&self.run.states[i], event).cloned(),
                }
            })
            .collect();
        if let Some(summary) = self.summary(&core) {
            points.insert(0, summary);
        }
        points.extend(core.blocked);
        Explanation { points, hops }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counterexample::counterexample;
    use crate::{explore, Config, Verdict};
    use semcheck_model::dsl::trace;
    use semcheck_model::ir::MemorySpace;
    use semcheck_model::{compile, Mesh, Notation, Spec};

    /// A 2-ring kernel whose reader waits for the wrong semaphore's signal: the
    /// neighbour signals `ready` right after starting its copy, before the copy lands.
    fn early_signal() -> (Program, TracedRun) {
        let kernel = trace("early_signal", |k| {
            let x = k.input("x", MemorySpace::Vmem, &[]);
            let y = k.scratch("y", MemorySpace::Vmem, &[]);
            let o = k.output("o", MemorySpace::Vmem, &[]);
            let (send, recv) = (k.dma_semaphore("send"), k.dma_semaphore("recv"));
            let ready = k.regular_semaphore("ready");
            let right = (k.axis_index("x") + 1) % 2;
            let dma = k.make_async_remote_copy(&x, &y, &send, &recv, right.clone());
            dma.start();
            k.semaphore_signal(&ready, 1, right);
            k.semaphore_wait(&ready, 1);
            o.assign(&y);
            dma.wait_send();
            dma.wait_recv();
        })
        .unwrap();
        let spec = Spec { notation: Notation::Plain, outputs: vec![] };
        let program = compile(&kernel, &Mesh::ring(2).unwrap(), &spec, 1).unwrap();
        let Verdict::Violation(cex) = explore(&program, &Config::default()).verdict else { panic!("no race") };
        let found = counterexample(&program, &cex, true).unwrap();
        (program, found.run)
    }

    #[test]
    fn a_race_is_the_access_the_dma_in_flight_and_the_wait_that_let_it_through() {
        let (program, run) = early_signal();
        let e = explain(&program, &run);
        let roles: Vec<Role> = e.points.iter().map(|p| p.role).collect();
        let last = e.points.last().unwrap();
        assert_eq!(last.role, Role::Read, "{e:#?}");
        assert_eq!(last.index, Some(run.events.len() - 1));
        assert!(roles.contains(&Role::DmaInFlight), "{e:#?}");
        // The wait on `ready` is the reader's gate, shown although only a signal satisfied it.
        let wait = e.points.iter().find(|p| p.role == Role::Wait).expect("the reader's wait");
        assert!(wait.text.contains("wait ready"), "{}", wait.text);
        let by = e.points.iter().find(|p| p.role == Role::SatisfiedBy).expect("what satisfied it");
        assert!(by.text.contains("signal ready"), "{}", by.text);
        assert!(e.points.len() <= MAX_POINTS);
    }
}
