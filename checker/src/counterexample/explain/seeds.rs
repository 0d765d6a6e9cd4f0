//! The seeds of the slice: what the violation itself names.

use semcheck_model::ir::SemKind;
use semcheck_model::program::{CellId, Op, SemSlot};
use semcheck_model::{DmaKey, Event, Rule};

use super::slice::{accesses, event_dma, Core, Slicer};
use super::{Point, Role};
use crate::counterexample::run::Ending;

impl Slicer<'_> {
    /// The seeds: what the violation itself names.
    pub(super) fn seeds(&self, core: &mut Core) {
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
    pub(super) fn breaks_note(&self, at: usize) -> String {
        let v = self.violation;
        let state = &self.run.states[at];
        let event = self.run.events[at];
        // Why the target was outside, as the step function decides it: the kernels in
        // which the semaphore is alive (a program's kernels may hand it on).
        let p = self.program;
        match (v.rule, event) {
            (Rule::OutsideKernel, Event::Step(d)) => match self.op_at(at) {
                Some((_, pc, Op::Signal { target, sem, .. })) => {
                    let inv = p.invocation_of(d, pc);
                    match p.inside_kernels_at(p.pc(state, target), target, inv, p.alive_until(sem, inv)).err() {
                        Some(why) => format!("signals {} on {target}, which {why}", p.sem_name(sem)),
                        None => format!("breaks {}", v.rule),
                    }
                }
                _ => format!("breaks {}", v.rule),
            },
            (Rule::OutsideKernel, e) => {
                let k = event_dma(e).expect("a DMA event");
                let target = self.namer.device_of(e);
                match p.landing_inside(state, k, target).err() {
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
    pub(super) fn exits_of_targets(&self, core: &mut Core, at: usize) {
        for &d in self.violation.devices.iter().skip(1) {
            let last_exit = (0..at).rev().find(|&i| matches!(self.op_at(i), Some((e, _, Op::Exit)) if e == d));
            if let Some(x) = last_exit {
                let (_, pc, _) = self.op_at(x).expect("a step");
                let entered_again = (x + 1..at).any(|i| matches!(self.op_at(i), Some((e, _, Op::Enter)) if e == d));
                if !entered_again {
                    let inv = self.program.invocation_of(d, pc);
                    // Named as the schedule names it: a program's kernel by its name, an
                    // invocation of a repeated kernel by its number (`#1`).
                    let note = if self.program.has_several_kernels() {
                        format!("{d} leaves {}", self.program.invocation_name(inv))
                    } else if self.program.repeat > 1 {
                        format!("{d} leaves the kernel (invocation {inv})")
                    } else {
                        format!("{d} leaves the kernel")
                    };
                    core.add(x, Role::Exit, Some(note), false, 0);
                }
            }
        }
    }

    /// The semaphore a leak found at event `at` is about: the first non-zero semaphore of
    /// the exiting device (the one the model reports), else the first non-zero barrier
    /// semaphore.
    pub(super) fn leaking_slot(&self, at: usize) -> Option<SemSlot> {
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
    pub(super) fn left_over(&self, core: &mut Core, at: usize) {
        let Some(slot) = self.leaking_slot(at) else { return };
        let name = self.program.sem_full_name(slot);
        for &i in self.causes.left.get(slot.0 as usize).into_iter().flatten().filter(|&&i| i < at) {
            core.add(i, Role::LeftOver, Some(format!("its increment of {name} is never waited for")), false, 0);
        }
    }

    /// For a deadlock: every device that has not finished, at the operation it is stuck at.
    pub(super) fn stuck(&self, core: &mut Core) {
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
            // What took what it waits for: the device's last earlier wait on the same
            // semaphore (with the increments it consumed), when nothing is left to come.
            if let Op::Wait { sem, .. } = p.devices[d.index()].ops[pc as usize] {
                let consumed = (0..self.run.events.len()).rev().find(|&i| {
                    self.run.events[i] == Event::Step(d)
                        && matches!(self.op_at(i), Some((_, _, Op::Wait { sem: s, .. })) if s == sem)
                });
                if let Some(i) = consumed {
                    let note =
                        format!("consumed what {} held: the wait {d} is stuck at needs it again", p.sem_full_name(sem));
                    core.add(i, Role::Wait, Some(note), false, 1);
                }
            }
        }
    }

    /// The role of the racing access, the cell, and whether the DMA in flight writes it.
    pub(super) fn race_roles(&self, op: Op, dma: DmaKey) -> (Role, Option<CellId>, bool) {
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
}
