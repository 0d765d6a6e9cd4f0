//! Why each event of a run could happen when it did: the previous operation of its device,
//! the start of its DMA, the semaphore increments a wait consumed (attributed first in,
//! first out, the way the hardware counter would be explained to a person), the entries an
//! entry barrier waited for. The DOT rendering draws these; the text reports cite them
//! ("its bytes came from event 12"), and a violation that names a DMA points at the event
//! that started it.

use rustc_hash::FxHashMap;
use semcheck_model::ir::SemKind;
use semcheck_model::program::{Op, SemSlot};
use semcheck_model::{DmaKey, Event, Program};

use super::render::step_op;
use super::run::TracedRun;

/// Why one event had to come after another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// The same device's previous operation.
    Program,
    /// The start of the DMA this event completes.
    Dma,
    /// An increment of this semaphore that this wait consumed.
    Sem(SemSlot),
    /// An entry the implicit entry barrier waited for.
    Barrier,
}

/// One cause of an event: an earlier event (by index in the run) and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cause {
    /// The earlier event.
    pub from: usize,
    /// Why it had to come first.
    pub why: Why,
}

/// The causes of every event of a run.
#[derive(Clone, Debug, Default)]
pub struct Causes {
    /// `of[i]`: the causes of event `i`.
    pub of: Vec<Vec<Cause>>,
    /// The event that started each DMA of the run.
    pub started: FxHashMap<DmaKey, usize>,
    /// Per semaphore slot, the events whose increments no wait consumed by the end of the
    /// run (what leaves a semaphore non-zero), in order.
    pub left: Vec<Vec<usize>>,
}

impl Causes {
    /// The events whose increments a wait (event `i`) consumed, in order.
    pub fn consumed(&self, i: usize) -> Vec<usize> {
        self.of[i].iter().filter(|c| matches!(c.why, Why::Sem(_))).map(|c| c.from).collect()
    }
}

/// Computes the causes of every event of `run`.
pub fn causes(program: &Program, run: &TracedRun) -> Causes {
    let mut out = Causes { of: Vec::with_capacity(run.events.len()), started: FxHashMap::default(), left: Vec::new() };
    let mut last_step: Vec<Option<usize>> = vec![None; program.num_devices()];
    let mut entered: Vec<Option<usize>> = vec![None; program.num_devices()];
    let mut pending: Vec<std::collections::VecDeque<(usize, u32)>> =
        vec![std::collections::VecDeque::new(); program.num_sems()];
    for (i, &event) in run.events.iter().enumerate() {
        let state = &run.states[i];
        let mut mine = Vec::new();
        let mut increment = |slot: SemSlot, amount: u32| pending[slot.0 as usize].push_back((i, amount));
        match event {
            Event::Step(d) => {
                if let Some(prev) = last_step[d.index()].replace(i) {
                    mine.push(Cause { from: prev, why: Why::Program });
                }
                let (_, pc, op) = step_op(program, state, event).expect("a step");
                match op {
                    Op::Enter => {
                        entered[d.index()] = Some(i);
                        let first = d.index() * program.sems_per_device;
                        for (s, queue) in pending.iter_mut().enumerate().skip(first).take(program.sems_per_device) {
                            if program.sem_kind(SemSlot(s as u32)) != SemKind::Barrier {
                                queue.clear();
                            }
                        }
                    }
                    Op::EntryBarrier => {
                        mine.extend(entered.iter().flatten().map(|&e| Cause { from: e, why: Why::Barrier }));
                    }
                    Op::Signal { sem, inc, .. } => increment(sem, inc),
                    Op::LocalDma { .. } | Op::RemoteDma { .. } => {
                        out.started.insert(DmaKey { issuer: d, pc }, i);
                    }
                    Op::Wait { sem, amount } => {
                        let mut need = amount;
                        let queue = &mut pending[sem.0 as usize];
                        while need > 0 {
                            let Some((from, have)) = queue.front_mut() else { break };
                            let take = need.min(*have);
                            *have -= take;
                            need -= take;
                            mine.push(Cause { from: *from, why: Why::Sem(sem) });
                            if *have == 0 {
                                queue.pop_front();
                            }
                        }
                    }
                    _ => {}
                }
            }
            Event::Sent(k) | Event::Received(k) | Event::Done(k) | Event::CellLanded(k, _) => {
                if let Some(&start) = out.started.get(&k) {
                    mine.push(Cause { from: start, why: Why::Dma });
                }
                match (event, program.dma_op(k)) {
                    (Event::Sent(_), Op::RemoteDma { send_sem, bytes, .. }) => increment(send_sem, bytes),
                    (Event::Received(_), Op::RemoteDma { recv_sem, bytes, .. }) => increment(recv_sem, bytes),
                    (Event::CellLanded(..), Op::RemoteDma { recv_sem, bytes, dst, .. }) => {
                        increment(recv_sem, bytes / dst.len)
                    }
                    (Event::CellLanded(..), Op::LocalDma { sem, bytes, dst, .. }) => increment(sem, bytes / dst.len),
                    (_, Op::LocalDma { sem, bytes, .. }) => increment(sem, bytes),
                    _ => {}
                }
            }
        }
        out.of.push(mine);
    }
    out.left = pending.into_iter().map(|q| q.into_iter().filter(|&(_, a)| a > 0).map(|(i, _)| i).collect()).collect();
    out
}

/// One-line notes for a person reading a schedule: for each wait, the events whose
/// increments satisfied it; for the violation, the event that started the DMA it names.
/// `notes[i]` belongs to event `i`; the second value is a note on the violation, if any.
pub fn notes(program: &Program, run: &TracedRun) -> (Vec<Option<String>>, Option<String>) {
    let c = causes(program, run);
    let notes = (0..run.events.len())
        .map(|i| {
            let from = c.consumed(i);
            (!from.is_empty()).then(|| {
                let list: Vec<String> = from.iter().map(|f| format!("{}", f + 1)).collect();
                format!("satisfied by event{} {}", if list.len() > 1 { "s" } else { "" }, list.join(", "))
            })
        })
        .collect();
    let violation = run
        .ending
        .violation()
        .and_then(|v| v.dma)
        .and_then(|k| c.started.get(&k).map(|&i| format!("the DMA it names was started at event {}", i + 1)));
    (notes, violation)
}
