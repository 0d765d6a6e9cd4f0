//! Partial-order reduction: events that can be explored alone.
//!
//! An event `t` enabled in a state `s` can be explored *alone* (a singleton persistent
//! set) when it stays enabled and is independent of every event any other device or DMA
//! can run from `s` before it: then every execution from `s` is equivalent, with the same
//! rule checks, to one that runs `t` first. Independence here includes the checks: two
//! accesses to a cell whose order decides whether a race is reported are dependent.
//!
//! Programs are straight-line, so "can run later" is exact for operations: the operation
//! at pc `p` of device `e` can still run iff `pc(e) <= p`. The safe events are:
//!
//! * an enabled `semaphore_wait` (only its own device decrements that semaphore, and
//!   increments commute with it);
//! * a passed implicit entry barrier;
//! * a signal of the device's own semaphore or of a barrier semaphore (increments commute,
//!   and neither is checked against the target's lifecycle);
//! * a local computation or DMA start none of whose cells another device can still touch
//!   in a conflicting way (if an in-flight DMA conflicts, the event itself reports the race).
//!
//! Entry, exit, remote signals and DMA completions are never explored alone: their order
//! against the target's entry and exit is what rule 5 checks.

use crate::event::Event;
use crate::ir::SemKind;
use crate::mesh::DeviceId;
use crate::program::{CellId, ComputeKind, Op, Program};

impl Program {
    /// An enabled event that may be explored alone in `state`, if there is one.
    pub fn persistent_singleton(&self, state: &[u32], enabled: &[Event]) -> Option<Event> {
        enabled.iter().copied().find(|&e| match e {
            Event::Step(d) => self.step_is_independent(state, d),
            _ => false,
        })
    }

    fn step_is_independent(&self, state: &[u32], d: DeviceId) -> bool {
        let pc = self.pc(state, d);
        match self.devices[d.index()].ops[pc as usize] {
            Op::Wait { .. } | Op::EntryBarrier => true,
            Op::Signal { target, sem, .. } => target == d || self.sem_kind(sem) == SemKind::Barrier,
            Op::LocalDma { src, dst, .. } | Op::RemoteDma { src, dst, .. } => {
                self.untouched_by_others(state, d, self.span(src), false)
                    && self.untouched_by_others(state, d, self.span(dst), true)
            }
            Op::Compute { kind, dst, src } => {
                let reads_dst = kind == ComputeKind::Add;
                self.untouched_by_others(state, d, self.span(src), false)
                    && self.untouched_by_others(state, d, self.span(dst), true)
                    && (!reads_dst || self.untouched_by_others(state, d, self.span(dst), false))
            }
            Op::Enter | Op::Exit => false,
        }
    }

    /// No operation of another device that can still run accesses `cells` in a way that
    /// conflicts with an access of `d` (a write if `write`, else a read).
    fn untouched_by_others(&self, state: &[u32], d: DeviceId, cells: &[CellId], write: bool) -> bool {
        cells.iter().all(|c| {
            self.accesses[c.0 as usize]
                .iter()
                .all(|a| a.device == d || (!write && !a.write) || a.pc < self.pc(state, a.device))
        })
    }
}
