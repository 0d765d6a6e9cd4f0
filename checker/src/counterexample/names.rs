//! Stable names of events: what a trace file stores instead of indices.
//!
//! A device step is named by its operation (`d1 (2) wait capacity_sem 1`), a DMA event by
//! the operation that started the DMA (`dma [d0 (0) start remote_copy ...] received on d1:
//! d1 remote_recv_sem 0 -> 4096`). When one label occurs several times in the same
//! invocation and grid index of a device (the two `signal barrier` of a neighbour barrier on
//! a 2-ring), the name carries its occurrence (`[2 of 2]`). None of this depends on pcs or
//! on the order the model enumerates events in.

use rustc_hash::FxHashMap;
use semcheck_model::ir::Loc;
use semcheck_model::program::{Op, SemSlot};
use semcheck_model::{DeviceId, Event, Program};

/// Names the operations and events of one program.
#[derive(Clone, Debug)]
pub struct Namer<'p> {
    program: &'p Program,
    /// Per device and pc: (1-based occurrence, count) of the op's label in its grid index.
    occurrence: Vec<Vec<(u32, u32)>>,
    /// The source location of each kernel statement, by statement id.
    locs: Vec<Option<Loc>>,
}

impl<'p> Namer<'p> {
    /// Precomputes the occurrence of every label of `program`.
    pub fn new(program: &'p Program) -> Namer<'p> {
        let occurrence = program
            .devices
            .iter()
            .map(|dp| {
                let mut counts: FxHashMap<(u32, &[usize], &str), u32> = FxHashMap::default();
                let mut seen = Vec::with_capacity(dp.info.len());
                for info in &dp.info {
                    let c = counts.entry((info.invocation, &info.grid, &info.label)).or_insert(0);
                    *c += 1;
                    seen.push(*c);
                }
                dp.info
                    .iter()
                    .zip(seen)
                    .map(|(info, k)| (k, counts[&(info.invocation, info.grid.as_slice(), info.label.as_str())]))
                    .collect()
            })
            .collect();
        let locs = program.ir.statements().into_iter().map(|(_, s)| s.loc.clone()).collect();
        Namer { program, occurrence, locs }
    }

    /// The program named.
    pub fn program(&self) -> &'p Program {
        self.program
    }

    /// An operation's name: `d1 (2) wait capacity_sem 1`, with `[k of n]` when its label
    /// repeats in the same grid index.
    pub fn op(&self, device: DeviceId, pc: u32) -> String {
        let base = self.program.describe_op(device, pc);
        match self.occurrence[device.index()][pc as usize] {
            (_, 1) => base,
            (k, n) => format!("{base} [{k} of {n}]"),
        }
    }

    /// Where an operation comes from in the kernel's source (`None` for entry, exit and
    /// the implicit entry barrier, and for statements the front end gave no location).
    pub fn op_loc(&self, device: DeviceId, pc: u32) -> Option<&Loc> {
        let info = self.program.devices.get(device.index())?.info.get(pc as usize)?;
        self.locs.get(info.stmt?.0 as usize)?.as_ref()
    }

    /// Where `event`, happening in `state`, comes from in the kernel's source: a device's
    /// step is its operation's statement, a DMA's event the statement that started it.
    pub fn event_loc(&self, state: &[u32], event: Event) -> Option<&Loc> {
        match event {
            Event::Step(d) => self.op_loc(d, self.program.pc(state, d)),
            Event::Sent(k) | Event::Received(k) | Event::Done(k) | Event::CellLanded(k, _) => {
                self.op_loc(k.issuer, k.pc)
            }
        }
    }

    /// The name of `event` as it happens in `state`.
    pub fn event(&self, state: &[u32], event: Event) -> String {
        let p = self.program;
        let change = |slot: SemSlot, inc: u32| {
            let v = p.sem_value(state, slot);
            format!("{} {v} -> {}", p.sem_full_name(slot), v.saturating_add(inc))
        };
        match event {
            Event::Step(d) => self.op(d, p.pc(state, d)),
            Event::Sent(k) | Event::Received(k) | Event::Done(k) => {
                let what = self.op(k.issuer, k.pc);
                match (event, p.dma_op(k)) {
                    (Event::Sent(_), Op::RemoteDma { send_sem, bytes, .. }) => {
                        format!("dma [{what}] sent: {}", change(send_sem, bytes))
                    }
                    (Event::Received(_), Op::RemoteDma { recv_sem, bytes, target, .. }) => {
                        format!("dma [{what}] received on {target}: {}", change(recv_sem, bytes))
                    }
                    (Event::Done(_), Op::LocalDma { sem, bytes, .. }) => {
                        format!("dma [{what}] done: {}", change(sem, bytes))
                    }
                    _ => format!("dma [{what}] {event}"),
                }
            }
            Event::CellLanded(k, i) => {
                let what = self.op(k.issuer, k.pc);
                match p.dma_op(k) {
                    Op::RemoteDma { dst, recv_sem, bytes, target, .. } => {
                        let cell = p.cell_name(p.span(dst)[i as usize]);
                        format!("dma [{what}] cell {cell} received on {target}: {}", change(recv_sem, bytes / dst.len))
                    }
                    Op::LocalDma { dst, sem, bytes, .. } => {
                        let cell = p.cell_name(p.span(dst)[i as usize]);
                        format!("dma [{what}] cell {cell} done: {}", change(sem, bytes / dst.len))
                    }
                    _ => format!("dma [{what}] {event}"),
                }
            }
        }
    }

    /// The device an event happens on: the stepping device, the issuer of a sent or done
    /// DMA, the target of a received one.
    pub fn device_of(&self, event: Event) -> DeviceId {
        match event {
            Event::Step(d) => d,
            Event::Sent(k) | Event::Done(k) => k.issuer,
            Event::Received(k) | Event::CellLanded(k, _) => match self.program.dma_op(k) {
                Op::RemoteDma { target, .. } => target,
                _ => k.issuer,
            },
        }
    }
}
