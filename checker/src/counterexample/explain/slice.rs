//! The slice itself: the run's causes, the gates, and following them back.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use semcheck_model::program::{CellId, ComputeKind, Op, SemSlot};
use semcheck_model::{DeviceId, DmaKey, Event, Program, Violation};

use super::{Explanation, Point, Role};
use crate::counterexample::causes::{causes, Causes, Why};
use crate::counterexample::names::Namer;
use crate::counterexample::render::step_op;
use crate::counterexample::run::{Ending, TracedRun};

/// The cells an operation reads and writes.
pub(super) fn accesses(program: &Program, op: Op) -> (Vec<CellId>, Vec<CellId>) {
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
pub(super) fn increment(program: &Program, state: &[u32], event: Event) -> Option<SemSlot> {
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
pub(super) fn event_dma(event: Event) -> Option<DmaKey> {
    match event {
        Event::Step(_) => None,
        Event::Sent(k) | Event::Received(k) | Event::Done(k) | Event::CellLanded(k, _) => Some(k),
    }
}

/// What a gate is.
pub(super) enum Gate {
    /// A wait that synchronised with another device.
    Wait(usize),
    /// The implicit entry barrier.
    EntryBarrier(usize),
    /// The `enter` of a later invocation.
    Reenter(usize),
}

/// The run, its causes and what the slice needs about every event.
pub(super) struct Slicer<'a> {
    pub(super) program: &'a Program,
    pub(super) run: &'a TracedRun,
    pub(super) violation: &'a Violation,
    pub(super) namer: Namer<'a>,
    pub(super) causes: Causes,
    /// The semaphore each event increments.
    pub(super) incs: Vec<Option<SemSlot>>,
}

/// The points of one slice being built: event index -> (role, note, wrong).
#[derive(Default)]
pub(super) struct Core {
    pub(super) points: BTreeMap<usize, (Role, Option<String>, bool)>,
    pub(super) queue: VecDeque<(usize, usize)>,
    /// Waits and entry barriers summarised instead of followed.
    pub(super) summarised: BTreeSet<usize>,
    pub(super) blocked: Vec<Point>,
}

impl Core {
    pub(super) fn add(&mut self, i: usize, role: Role, note: Option<String>, wrong: bool, hop: usize) {
        if let std::collections::btree_map::Entry::Vacant(v) = self.points.entry(i) {
            v.insert((role, note, wrong));
            self.queue.push_back((i, hop));
        }
    }
}

impl<'a> Slicer<'a> {
    pub(super) fn new(program: &'a Program, run: &'a TracedRun, violation: &'a Violation) -> Slicer<'a> {
        let incs = run.events.iter().enumerate().map(|(i, &e)| increment(program, &run.states[i], e)).collect();
        Slicer { program, run, violation, namer: Namer::new(program), causes: causes(program, run), incs }
    }

    pub(super) fn op_at(&self, i: usize) -> Option<(DeviceId, u32, Op)> {
        step_op(self.program, &self.run.states[i], self.run.events[i])
    }

    pub(super) fn breaking(&self) -> Option<usize> {
        match self.run.ending {
            Ending::Violation { at, .. } => Some(at),
            _ => None,
        }
    }

    pub(super) fn started(&self, k: DmaKey) -> Option<usize> {
        self.causes.started.get(&k).copied()
    }

    /// The previous step of the same device.
    pub(super) fn prev_step(&self, i: usize) -> Option<usize> {
        self.causes.of[i].iter().find(|c| c.why == Why::Program).map(|c| c.from)
    }

    /// The events whose increments wait `w` consumed; of a copy landing cell by cell, only
    /// its last cell.
    pub(super) fn satisfiers(&self, w: usize) -> Vec<usize> {
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
    pub(super) fn source_device(&self, j: usize) -> DeviceId {
        match self.run.events[j] {
            Event::Step(d) => d,
            e => event_dma(e).expect("a DMA event").issuer,
        }
    }

    /// Why increment `j` is the wrong one for wait `w`, if it is.
    pub(super) fn wrong(&self, j: usize, w: usize) -> Option<String> {
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
    pub(super) fn counts_into(&self, y: DmaKey, sem: SemSlot) -> bool {
        match self.program.dma_op(y) {
            Op::RemoteDma { send_sem, recv_sem, .. } => send_sem == sem || recv_sem == sem,
            Op::LocalDma { sem: s, .. } => s == sem,
            _ => false,
        }
    }

    /// Whether wait `w` synchronised with another device, or was satisfied by a wrong
    /// increment.
    pub(super) fn synchronises(&self, w: usize) -> bool {
        let (d, _, _) = self.op_at(w).expect("a step");
        self.satisfiers(w).iter().any(|&j| self.source_device(j) != d || self.wrong(j, w).is_some())
    }

    /// Whether wait `w` only orders: every increment it consumed is a signal (a barrier
    /// counts its device's own) of the same invocation.
    pub(super) fn handshake(&self, w: usize) -> bool {
        let from = self.satisfiers(w);
        !from.is_empty()
            && from
                .iter()
                .all(|&j| matches!(self.op_at(j), Some((_, _, Op::Signal { .. }))) && self.wrong(j, w).is_none())
    }

    /// The increments of wait `w` to show: all of them, except that of a handshake (the
    /// breaking event's gate) only the signals sent while the violation's DMA was in
    /// flight (signalled too early); the others only ordered what came before.
    fn shown_satisfiers(&self, w: usize) -> Vec<usize> {
        let all = self.satisfiers(w);
        if !self.handshake(w) {
            return all;
        }
        match self.violation.dma.and_then(|k| self.started(k)) {
            Some(s) => all.into_iter().filter(|&j| j > s).collect(),
            None => Vec::new(),
        }
    }

    /// The gate of the step at `i` (searching from `i` itself when `inclusive`).
    pub(super) fn gate(&self, i: usize, inclusive: bool) -> Option<Gate> {
        let mut at = if inclusive { Some(i) } else { self.prev_step(i) };
        while let Some(p) = at {
            match self.op_at(p) {
                Some((_, _, Op::Wait { .. })) if self.synchronises(p) => return Some(Gate::Wait(p)),
                Some((_, _, Op::EntryBarrier)) => return Some(Gate::EntryBarrier(p)),
                // Entering the next kernel of a program is program order, not a gate; a
                // new run of it (or of a kernel alone, with `--repeat`) is one.
                Some((d, pc, Op::Enter)) if self.new_run(d, pc) => return Some(Gate::Reenter(p)),
                _ => {}
            }
            at = self.prev_step(p);
        }
        None
    }

    /// Whether the `Enter` at `pc` starts a run of the program after the first.
    fn new_run(&self, d: DeviceId, pc: u32) -> bool {
        let k = self.program.invocation_of(d, pc);
        k > 0 && self.program.starts_run(k)
    }

    /// Adds the gate of step `i` at `hop`, unless it is a handshake (summarised).
    pub(super) fn follow_gate(&self, core: &mut Core, i: usize, hop: usize, inclusive: bool) {
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
                let k = self.program.invocation_of(d, pc);
                let note = if self.program.has_several_kernels() {
                    format!("{d} starts the program again (run {})", self.program.run_of(k) + 1)
                } else {
                    format!("{d} enters the kernel again (invocation {k})")
                };
                core.add(e, Role::Reenter, Some(note), false, hop);
            }
        }
    }

    /// Follows the causes of every point added, up to `hops` gates back.
    pub(super) fn expand(&self, core: &mut Core, hops: usize) {
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
                    let shown = self.shown_satisfiers(i);
                    if shown.is_empty() {
                        core.summarised.insert(i);
                    }
                    for j in shown {
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

    /// The slice following at most `hops` gates back.
    pub(super) fn slice(&self, hops: usize) -> Explanation {
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
