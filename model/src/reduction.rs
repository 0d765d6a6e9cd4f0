//! Partial-order reduction: stubborn sets.
//!
//! In a state `s`, the explorer may follow only the enabled events of a *stubborn set*
//! `T` instead of every enabled event. `T` is built by closure from one enabled
//! transition:
//!
//! * for an **enabled** transition `t` in `T`, every transition that is *dependent* on `t`
//!   and *can occur before `t`* joins `T`;
//! * for a **disabled** transition in `T` (a device blocked at a wait or at the entry
//!   barrier), a *necessary enabling set* joins `T`: everything that could increment the
//!   semaphore it waits on, or the devices that have not entered yet.
//!
//! Then every execution from `s` is equivalent, rule checks included, to one that starts
//! with an event of `T`, so every reachable violation and deadlock is still found (the
//! state graph is finite and acyclic, so no cycle proviso is needed).
//!
//! **Transitions.** A device contributes its current operation (any later operation of a
//! device is enabled only through the current one, so adding "a later operation of `g`"
//! means adding `g`). An in-flight DMA contributes a remote copy's *sending* (it
//! increments the issuer's send semaphore and ends the read of the source) and its
//! *landing*: one unit for the whole landing or a local copy's completion (it checks the
//! target's lifecycle, writes the destination, increments the receive semaphore and ends
//! the read of the source), or under `--dma-landing cells` one unit per cell still to land
//! (each checks the target's lifecycle, writes its own destination cell, adds its share to
//! the receive semaphore and ends the read of its own source cell; the last one also ends
//! the copy: a local copy's issuer exit observes that, so it is a dependent of every cell,
//! and a `pair-fifo` successor cannot land before every cell has). The events of one copy are independent of each
//! other: each leaves the others enabled, they write distinct cells, their increments
//! commute, and the payload was read when the copy started, so every order reaches the
//! same state with the same checks. Taking one cell's landing alone (when nothing can
//! touch that cell before it) is what keeps a copy of many cells from multiplying the
//! states by every order and every subset of its landed cells.
//!
//! **Dependence** includes the checks, not just the state: two accesses to a cell are
//! dependent when at least one writes it (the order decides whether a race is reported and
//! which value is read); a non-barrier signal or a DMA landing is dependent on its target's
//! entry into the first kernel its semaphore lives in and exit from the last (rule 5); an
//! exit is dependent on what increments a semaphore of the device that no later kernel
//! takes (rule 4), lands in its cells when the exit ends a run (outputs), or is its own DMA
//! whose semaphore no later kernel takes (its sending, a local copy's completion); an entry
//! that starts a run on everything that increments the device's semaphores or lands in its
//! cells (it resets them). The other boundaries of a program of several kernels, across
//! which semaphores and DMAs in flight are handed, are independent of them
//! (`Program::boundary_observes`).
//! Semaphore increments commute with each other and with waits, and an enabled wait cannot
//! be disabled (only its own device decrements its semaphores), so waits, the implicit
//! entry barrier and increments of barrier or own semaphores have no dependents.
//!
//! **Can occur before `t`.** Programs are straight-line, so a *progress bound* is computed
//! for each device: how far it could get if `t` never happened, assuming every increment
//! any reachable operation or in-flight DMA can make is available to every wait. An
//! operation beyond the bound needs `t` first, so it cannot be reordered before `t`; this
//! is what lets a DMA landing run alone when the only operations that touch its
//! destination wait for its bytes.
//!
//! The search over seeds (every enabled unit closed in turn, the closure with the fewest
//! enabled events kept) is shared with the window's reduction (`stubborn.rs`).

use crate::event::{DmaKey, Event};
use crate::ir::SemKind;
use crate::mesh::DeviceId;
use crate::program::{CellId, CellSpan, Op, Program, SemSlot};
use crate::semantics::DmaOrder;
use crate::state::{DmaRecord, RECEIVED, SENT};
use crate::stubborn::{add_dma_increments, progress_bounds, DmaIncrements, SeedSearch, Unit, Units};

/// Static indexes used by the reduction, built once per program.
#[derive(Clone, Debug, Default)]
pub struct Dependencies {
    /// Per semaphore slot: the operations `(device, pc)` that can increment it.
    pub incrementers: Vec<Vec<(DeviceId, u32)>>,
    /// Per device: operations of other devices checked against its lifecycle
    /// (non-barrier signals to it, remote copies into it).
    pub lifecycle_touchers: Vec<Vec<(DeviceId, u32)>>,
    /// Per device, per pc from 0 to its length: the first pc at or after it whose
    /// operation the progress bounds look at (a wait, the entry barrier, a signal, a copy's
    /// start), else its length. `stubborn::progress_bounds` jumps over the rest
    /// (entries, exits, computations: they neither block nor add to a semaphore), which
    /// are most of a large kernel's operations.
    pub bound_skip: Vec<Vec<u32>>,
    /// Per device, per pc: for a copy's start, the smallest and the largest cell of its
    /// source and of its destination (`[src_lo, src_hi, dst_lo, dst_hi]`; an empty span's
    /// range is empty, `lo > hi`). A copy whose cells lie outside the range of the cells a
    /// question is about touches none of them (`Program::cell_dependents` skips it).
    pub copy_bounds: Vec<Vec<[u32; 4]>>,
}

impl Dependencies {
    /// Builds the indexes of a program.
    pub fn build(program: &Program) -> Dependencies {
        let mut incrementers = vec![Vec::new(); program.num_sems()];
        let mut lifecycle_touchers = vec![Vec::new(); program.num_devices()];
        for (d, dp) in program.devices.iter().enumerate() {
            let me = DeviceId(d as u16);
            for (pc, op) in dp.ops.iter().enumerate() {
                let at = (me, pc as u32);
                match *op {
                    Op::Signal { target, sem, .. } => {
                        incrementers[sem.0 as usize].push(at);
                        if target != me && program.sem_kind(sem) != SemKind::Barrier {
                            lifecycle_touchers[target.index()].push(at);
                        }
                    }
                    Op::LocalDma { sem, .. } => incrementers[sem.0 as usize].push(at),
                    Op::RemoteDma { target, send_sem, recv_sem, .. } => {
                        incrementers[send_sem.0 as usize].push(at);
                        incrementers[recv_sem.0 as usize].push(at);
                        if target != me {
                            lifecycle_touchers[target.index()].push(at);
                        }
                    }
                    _ => {}
                }
            }
        }
        let bound_skip = program.devices.iter().map(|dp| bound_skip(&dp.ops)).collect();
        let range = |span: CellSpan| {
            let cells = program.span(span).iter().map(|c| c.0);
            (cells.clone().min().unwrap_or(u32::MAX), cells.max().unwrap_or(0))
        };
        let copy_bounds = program
            .devices
            .iter()
            .map(|dp| {
                dp.ops
                    .iter()
                    .map(|op| match *op {
                        Op::LocalDma { src, dst, .. } | Op::RemoteDma { src, dst, .. } => {
                            let ((src_lo, src_hi), (dst_lo, dst_hi)) = (range(src), range(dst));
                            [src_lo, src_hi, dst_lo, dst_hi]
                        }
                        _ => [u32::MAX, 0, u32::MAX, 0],
                    })
                    .collect()
            })
            .collect();
        Dependencies { incrementers, lifecycle_touchers, bound_skip, copy_bounds }
    }
}

/// What an event (a signal, a DMA's sending or landing) does to one device that the
/// device's entries and exits can observe ([`Program::boundary_observes`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Touch {
    /// Rule 5: the invocations `(from, to)` the device must be inside of when the event
    /// happens (those its semaphore lives in).
    live: Option<(u32, u32)>,
    /// The device's semaphore the event increments.
    sem: Option<SemSlot>,
    /// Whether the event writes the device's cells.
    cells: bool,
    /// The DMA whose being still in flight the device's exit checks (as its issuer).
    pending: Option<DmaKey>,
}

impl Touch {
    /// What the operation at `pc` of `d`, a non-barrier signal or a remote copy's start,
    /// does to its target: the signal's increment, or the copy's landing.
    pub(crate) fn of_op(program: &Program, d: DeviceId, pc: u32) -> Touch {
        match program.devices[d.index()].ops[pc as usize] {
            Op::Signal { sem, .. } => {
                let k = program.invocation_of(d, pc);
                Touch { live: Some((k, program.alive_until(sem, k))), sem: Some(sem), cells: false, pending: None }
            }
            _ => Touch::landing(program, DmaKey { issuer: d, pc }),
        }
    }

    /// The landing of DMA `key` in its target (a local copy's completion: in its issuer,
    /// whose exit also checks it is done).
    pub(crate) fn landing(program: &Program, key: DmaKey) -> Touch {
        let k = program.invocation_of(key.issuer, key.pc);
        let (sem, local) = match program.dma_op(key) {
            Op::LocalDma { sem, .. } => (sem, true),
            Op::RemoteDma { recv_sem, .. } => (recv_sem, false),
            _ => unreachable!("landing of a DMA"),
        };
        Touch {
            live: Some((k, program.alive_until(sem, k))),
            sem: Some(sem),
            cells: true,
            pending: local.then_some(key),
        }
    }

    /// The sending of remote copy `key`, at its issuer: it increments the send semaphore,
    /// and the issuer's exit checks that the copy has been sent.
    pub(crate) fn sending(program: &Program, key: DmaKey) -> Touch {
        Touch { live: None, sem: program.issuer_sem(key), cells: false, pending: Some(key) }
    }
}

/// The [`Dependencies::bound_skip`] table of one device's operations.
pub(crate) fn bound_skip(ops: &[Op]) -> Vec<u32> {
    let mut skip = vec![ops.len() as u32; ops.len() + 1];
    for pc in (0..ops.len()).rev() {
        skip[pc] = match ops[pc] {
            Op::Enter | Op::Exit | Op::Compute { .. } => skip[pc + 1],
            Op::Wait { .. } | Op::EntryBarrier | Op::Signal { .. } | Op::LocalDma { .. } | Op::RemoteDma { .. } => {
                pc as u32
            }
        };
    }
    skip
}

/// Reusable buffers for [`Program::persistent_set`], so the explorer's hot path does not
/// allocate.
#[derive(Clone, Debug, Default)]
pub struct PorScratch {
    units: UnitScratch,
    search: SeedSearch,
    /// 0: the search over seeds starts at unit 0 in every state; else at a unit drawn
    /// from the state and this salt ([`PorScratch::salted`]).
    salt: u64,
}

impl PorScratch {
    /// Buffers whose search over seeds starts, in each state, at a unit drawn from the
    /// state and `salt` (not 0) instead of at unit 0, so that ties between the smallest
    /// closures break another way. Every closure is a persistent set, so every salt must
    /// give the same verdicts: the differential tests explore with several to reach
    /// orders that the default tie-break never takes.
    pub fn salted(salt: u64) -> PorScratch {
        PorScratch { salt, ..PorScratch::default() }
    }
}

/// What the units of one state need: its DMAs and their units, and the progress bounds
/// computed so far.
#[derive(Clone, Debug, Default)]
struct UnitScratch {
    dmas: Vec<DmaRecord>,
    /// Per in-flight DMA, whether its landing (of some cell) is enabled.
    landing: Vec<bool>,
    /// Per in-flight DMA, the unit of its sending; its landing units follow it.
    first: Vec<Unit>,
    /// Per unit from the first DMA unit (`base`) on: its DMA and which of its events it is.
    owner: Vec<(usize, DmaPart)>,
    /// The first DMA unit (the number of devices).
    base: Unit,
    bounds: Vec<u32>,
    have_bounds: Vec<bool>,
    avail: Vec<u64>,
    used: Vec<u64>,
    /// The DMA units whose bounds were computed in this state, by the one increment each
    /// leaves out ([`Program::withheld`]): another that leaves out the same has the same.
    by_withheld: Vec<((SemSlot, u64), Unit)>,
    /// The cells [`Program::cell_dependents`] is asked about, as a set: `marks[c] ==
    /// stamp` (a new stamp per question, so the set is never cleared cell by cell).
    marks: Vec<u32>,
    stamp: u32,
    /// The smallest and the largest of the cells last marked (`(u32::MAX, 0)`: none).
    marked_range: (u32, u32),
}

/// Which event of an in-flight DMA a unit stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DmaPart {
    /// The sending of a remote copy (never pending for a local copy).
    Send,
    /// The whole landing of a copy, or a local copy's completion.
    Land,
    /// The landing of the copy's `i`-th cell (`--dma-landing cells`, a copy of several
    /// cells): the cells of one copy are distinct units, so a stubborn set can take one of
    /// them without the others (each writes its own cell, ends the read of its own source
    /// cell, and adds its share to a semaphore, which commutes with the other shares).
    Cell(usize),
}

impl UnitScratch {
    /// Makes `cells` the set [`UnitScratch::marked`] answers for (`total`: the number of
    /// cells of the program).
    fn mark(&mut self, cells: &[CellId], total: usize) {
        if self.marks.len() < total {
            self.marks.resize(total, 0);
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.marks.fill(0);
            self.stamp = 1;
        }
        self.marked_range = (u32::MAX, 0);
        for c in cells {
            self.marks[c.0 as usize] = self.stamp;
            self.marked_range = (self.marked_range.0.min(c.0), self.marked_range.1.max(c.0));
        }
    }

    /// Whether no cell in the range `lo..=hi` can be one of the cells last marked: the
    /// two ranges do not meet.
    fn apart(&self, lo: u32, hi: u32) -> bool {
        hi < self.marked_range.0 || lo > self.marked_range.1
    }

    /// Whether `c` is one of the cells last [`UnitScratch::mark`]ed.
    fn marked(&self, c: CellId) -> bool {
        self.marks[c.0 as usize] == self.stamp
    }

    /// Numbers the units of the DMAs in `dmas`, from unit `n` on, and notes which may land
    /// in `state`.
    fn number(&mut self, program: &Program, state: &[u32], n: usize) {
        self.base = n;
        self.first.clear();
        self.owner.clear();
        self.landing.clear();
        self.landing.extend(self.dmas.iter().map(|r| program.landing_enabled(state, r)));
        for (j, r) in self.dmas.iter().enumerate() {
            self.first.push(n + self.owner.len());
            self.owner.push((j, DmaPart::Send));
            if program.lands_by_cell(r) {
                self.owner.extend((0..r.payload).map(|i| (j, DmaPart::Cell(i))));
            } else {
                self.owner.push((j, DmaPart::Land));
            }
        }
    }

    /// The unit of the sending of in-flight DMA `j`.
    fn send_unit(&self, j: usize) -> Unit {
        self.first[j]
    }

    /// The landing units of in-flight DMA `j` (one, or one per cell).
    fn land_units(&self, j: usize) -> std::ops::Range<Unit> {
        let end = self.first.get(j + 1).copied().unwrap_or(self.base + self.owner.len());
        self.first[j] + 1..end
    }

    /// The DMA and the event unit `u` (a DMA unit) stands for.
    fn owner(&self, u: Unit) -> (usize, DmaPart) {
        self.owner[u - self.base]
    }

    /// The landing units of in-flight DMA `j` still to happen.
    fn pending_landings<'a>(&'a self, state: &'a [u32], j: usize) -> impl Iterator<Item = Unit> + 'a {
        let r = self.dmas[j];
        self.land_units(j).filter(move |&u| {
            r.landing_pending()
                && match self.owner(u).1 {
                    DmaPart::Cell(i) => !r.cell_landed(state, i),
                    _ => true,
                }
        })
    }
}

/// The units of one state of a program: device `i < n`, then per in-flight DMA its
/// sending and its landing units ([`DmaPart`]).
struct StateUnits<'a> {
    program: &'a Program,
    state: &'a [u32],
    s: &'a mut UnitScratch,
}

impl Units for StateUnits<'_> {
    fn count(&self) -> usize {
        self.s.have_bounds.len()
    }

    fn events(&self, u: Unit) -> usize {
        self.program.unit_events(self.state, self.s, u)
    }

    fn dependents(&mut self, u: Unit, found: &mut Vec<Unit>) {
        self.program.dependents(self.state, self.s, u, found);
    }
}

impl Program {
    /// Writes to `out` the enabled events of a stubborn set of `state`: a subset of
    /// `enabled` that is enough to explore.
    pub fn persistent_set(&self, state: &[u32], enabled: &[Event], scratch: &mut PorScratch, out: &mut Vec<Event>) {
        out.clear();
        // Fast path: transitions with no dependents at all.
        for &e in enabled {
            if let Event::Step(d) = e {
                let trivial = match self.devices[d.index()].ops[self.pc(state, d) as usize] {
                    Op::Wait { .. } | Op::EntryBarrier => true,
                    Op::Signal { target, sem, .. } => target == d || self.sem_kind(sem) == SemKind::Barrier,
                    _ => false,
                };
                if trivial {
                    out.push(e);
                    return;
                }
            }
        }
        let n = self.num_devices();
        let s = &mut scratch.units;
        s.dmas.clear();
        s.dmas.extend(self.dmas(state));
        s.number(self, state, n);
        let units = n + s.owner.len();
        s.bounds.clear();
        s.bounds.resize(units * n, 0);
        s.have_bounds.clear();
        s.have_bounds.resize(units, false);
        s.avail.resize(self.num_sems(), 0);
        s.used.resize(self.num_sems(), 0);
        s.by_withheld.clear();
        let first = match scratch.salt {
            0 => 0,
            salt => {
                use std::hash::{BuildHasher, BuildHasherDefault};
                let h = BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one((state, salt));
                (h % units as u64) as usize
            }
        };
        if !scratch.search.smallest(&mut StateUnits { program: self, state, s }, first) {
            out.extend_from_slice(enabled);
            return;
        }
        let s = &scratch.units;
        let dma = |k| s.dmas.iter().position(|r: &DmaRecord| r.key == k).expect("enabled DMA is in flight");
        for &e in enabled {
            let unit = match e {
                Event::Step(d) => d.index(),
                Event::Sent(k) => s.send_unit(dma(k)),
                Event::Received(k) | Event::Done(k) => s.send_unit(dma(k)) + 1,
                Event::CellLanded(k, i) => s.send_unit(dma(k)) + 1 + i as usize,
            };
            if scratch.search.chosen(unit) {
                out.push(e);
            }
        }
    }

    /// Number of enabled events a unit contributes.
    fn unit_events(&self, state: &[u32], s: &UnitScratch, u: Unit) -> usize {
        let n = self.num_devices();
        if u < n {
            return usize::from(self.device_enabled(state, DeviceId(u as u16)));
        }
        let (j, part) = s.owner(u);
        let r = &s.dmas[j];
        usize::from(match part {
            DmaPart::Send => !matches!(self.dma_op(r.key), Op::LocalDma { .. }) && r.flags & SENT == 0,
            DmaPart::Land => s.landing[j],
            DmaPart::Cell(i) => !r.cell_landed(state, i) && s.landing[j],
        })
    }

    /// The units that must join a stubborn set containing `u`.
    fn dependents(&self, state: &[u32], s: &mut UnitScratch, u: Unit, found: &mut Vec<Unit>) {
        let n = self.num_devices();
        if u < n {
            let d = DeviceId(u as u16);
            if self.finished(state, d) {
                return;
            }
            let pc = self.pc(state, d);
            let op = self.devices[d.index()].ops[pc as usize];
            if !self.device_enabled(state, d) {
                self.enabling_set(state, s, d, op, found);
                return;
            }
            match op {
                Op::Wait { .. } | Op::EntryBarrier => {}
                Op::Signal { target, sem, .. } => {
                    if target != d && self.sem_kind(sem) != SemKind::Barrier {
                        self.ensure_bounds(state, s, u);
                        if self.boundary_observes_before(state, s, u, target, &Touch::of_op(self, d, pc)) {
                            found.push(target.index());
                        }
                    }
                }
                Op::Enter | Op::Exit => {
                    self.ensure_bounds(state, s, u);
                    self.lifecycle_dependents(state, s, u, d, pc, found);
                    if op == Op::Exit && !self.shared_expected.is_empty() {
                        found.extend(0..n + s.owner.len());
                    }
                }
                // A write's dependents include a read's (`dst += src` reads `dst` too).
                Op::LocalDma { src, dst, .. } | Op::RemoteDma { src, dst, .. } | Op::Compute { src, dst, .. } => {
                    self.ensure_bounds(state, s, u);
                    self.cell_dependents(state, s, u, Some(d), self.span(src), false, found);
                    self.cell_dependents(state, s, u, Some(d), self.span(dst), true, found);
                }
            }
        } else {
            let (j, part) = s.owner(u);
            let rec = s.dmas[j];
            let landing = part != DmaPart::Send;
            let op = self.dma_op(rec.key);
            let (src, dst, target, local) = match op {
                Op::LocalDma { src, dst, .. } => (src, dst, rec.key.issuer, true),
                Op::RemoteDma { src, dst, target, .. } => (src, dst, target, false),
                _ => unreachable!("DMA record of a DMA op"),
            };
            let pending = match part {
                DmaPart::Send => !local && rec.flags & SENT == 0,
                DmaPart::Land => rec.landing_pending(),
                DmaPart::Cell(i) => rec.landing_pending() && !rec.cell_landed(state, i),
            };
            if !pending {
                return; // an event that already happened never happens again
            }
            self.ensure_bounds(state, s, u);
            let issuer = rec.key.issuer;
            // Under pair-fifo a landing waits for the earlier DMAs of its queue: the earliest
            // one still landing must finish landing first, so any one of its landings still
            // to happen is a necessary enabling set.
            if landing && self.semantics.dma_order == DmaOrder::PairFifo {
                if let Some(first) = self.overtaken(state, rec.key) {
                    let k = s.dmas.iter().position(|r| r.key == first).expect("in flight");
                    found.extend(s.pending_landings(state, k).take(1));
                }
            }
            // The issuer's exit checks that a remote copy has been sent, a local one done;
            // the sending increments the issuer's send semaphore (a local copy's landing, its
            // semaphore): the issuer's entries and exits that look at these.
            let issuer_touch = match (local, landing) {
                (true, _) => Some(Touch::landing(self, rec.key)),
                (false, false) => Some(Touch::sending(self, rec.key)),
                (false, true) => None,
            };
            if issuer_touch.is_some_and(|t| self.boundary_observes_before(state, s, u, issuer, &t)) {
                found.push(issuer.index());
            }
            // A cell's landing writes that cell and ends the read of its source cell only.
            let (src, dst) = match part {
                DmaPart::Cell(i) => (&self.span(src)[i..=i], &self.span(dst)[i..=i]),
                _ => (self.span(src), self.span(dst)),
            };
            // The landing checks the target's lifecycle and writes its cells.
            if landing {
                if self.boundary_observes_before(state, s, u, target, &Touch::landing(self, rec.key)) {
                    found.push(target.index());
                }
                self.cell_dependents(state, s, u, None, dst, true, found);
            }
            // Either event ends the read of the source.
            if rec.flags == 0 || local {
                self.cell_dependents(state, s, u, None, src, false, found);
            }
        }
    }

    /// Devices whose ops touching `cells` conflict with an access (`write` or read) and can
    /// occur before unit `u`, and in-flight DMAs whose active accesses conflict.
    #[allow(clippy::too_many_arguments)]
    fn cell_dependents(
        &self,
        state: &[u32],
        s: &mut UnitScratch,
        u: Unit,
        me: Option<DeviceId>,
        cells: &[CellId],
        write: bool,
        found: &mut Vec<Unit>,
    ) {
        // Membership in `cells` in constant time: a copy's span may have thousands of
        // cells, and so may the accesses it is compared with.
        s.mark(cells, self.accesses.len());
        let s = &*s;
        let n = self.num_devices();
        for c in cells {
            for a in &self.accesses[c.0 as usize] {
                if Some(a.device) == me || !(write || a.write) {
                    continue;
                }
                if self.reachable(state, s, u, a.device, a.pc) {
                    found.push(a.device.index());
                }
            }
        }
        for (j, r) in s.dmas.iter().enumerate() {
            // The events of one copy are independent of each other (module docs).
            if u >= n && s.owner(u).0 == j {
                continue;
            }
            let (src, dst, reading, writing, local) = match self.dma_op(r.key) {
                Op::LocalDma { src, dst, .. } => (src, dst, true, true, true),
                Op::RemoteDma { src, dst, .. } => (src, dst, r.flags == 0, r.flags & RECEIVED == 0, false),
                _ => continue,
            };
            // The landings that access one of `cells` through `span`: under `--dma-landing
            // cells` each cell's own landing, while it has not landed.
            let hits = |span: CellSpan| {
                let span = self.span(span);
                let any = r.landing_pending() && !self.lands_by_cell(r) && span.iter().any(|&c| s.marked(c));
                s.pending_landings(state, j).filter(move |&l| match s.owner(l).1 {
                    DmaPart::Cell(i) => s.marked(span[i]),
                    _ => any,
                })
            };
            let [src_lo, src_hi, dst_lo, dst_hi] =
                self.dependencies.copy_bounds[r.key.issuer.index()][r.key.pc as usize];
            // The landing writes the destination.
            if writing && !s.apart(dst_lo, dst_hi) {
                found.extend(hits(dst));
            }
            // Whichever of the sending and the landing comes first ends the read.
            if write && reading && !s.apart(src_lo, src_hi) {
                let before = found.len();
                found.extend(hits(src));
                if !local && found.len() > before {
                    found.push(s.send_unit(j));
                }
            }
        }
    }

    /// What must join a set containing device `d` blocked at `op` (a wait or the barrier).
    fn enabling_set(&self, state: &[u32], s: &UnitScratch, d: DeviceId, op: Op, found: &mut Vec<Unit>) {
        match op {
            Op::Wait { sem, .. } => {
                for &(g, pc) in &self.dependencies.incrementers[sem.0 as usize] {
                    if pc >= self.pc(state, g) {
                        found.push(g.index());
                    }
                }
                for (j, r) in s.dmas.iter().enumerate() {
                    match self.dma_op(r.key) {
                        Op::LocalDma { sem: own, .. } if own == sem => found.extend(s.pending_landings(state, j)),
                        Op::RemoteDma { send_sem, recv_sem, .. } => {
                            if r.flags & SENT == 0 && send_sem == sem {
                                found.push(s.send_unit(j));
                            }
                            if recv_sem == sem {
                                found.extend(s.pending_landings(state, j));
                            }
                        }
                        _ => {}
                    }
                }
            }
            Op::EntryBarrier => {
                let k = self.devices[d.index()].info[self.pc(state, d) as usize].invocation;
                for e in self.mesh.devices() {
                    if !self.has_entered(state, e, k) {
                        found.push(e.index());
                    }
                }
            }
            _ => unreachable!("only waits and the entry barrier block"),
        }
    }

    /// For the entry or exit at `pc` of `d` (unit `u`): what observes it or what it
    /// observes ([`Touch`]) among the signals and copies into `d` that can occur before it
    /// and the DMAs in flight from or into `d`.
    fn lifecycle_dependents(
        &self,
        state: &[u32],
        s: &UnitScratch,
        u: Unit,
        d: DeviceId,
        pc: u32,
        found: &mut Vec<Unit>,
    ) {
        for &(g, gpc) in &self.dependencies.lifecycle_touchers[d.index()] {
            if self.reachable(state, s, u, g, gpc) && self.boundary_observes(d, pc, &Touch::of_op(self, g, gpc)) {
                found.push(g.index());
            }
        }
        for (j, r) in s.dmas.iter().enumerate() {
            match self.dma_op(r.key) {
                Op::RemoteDma { target, .. } => {
                    if r.key.issuer == d && self.boundary_observes(d, pc, &Touch::sending(self, r.key)) {
                        found.push(s.send_unit(j));
                    }
                    if target == d && self.boundary_observes(d, pc, &Touch::landing(self, r.key)) {
                        found.extend(s.land_units(j));
                    }
                }
                _ if r.key.issuer == d && self.boundary_observes(d, pc, &Touch::landing(self, r.key)) => {
                    found.extend(s.land_units(j))
                }
                _ => {}
            }
        }
    }

    /// Whether an entry or exit of `d` that can occur before unit `u` observes `touch`, or
    /// is observed by it ([`Program::boundary_observes`]).
    fn boundary_observes_before(&self, state: &[u32], s: &UnitScratch, u: Unit, d: DeviceId, touch: &Touch) -> bool {
        let dp = &self.devices[d.index()];
        let (lo, hi) = self.window(state, s, u, d);
        dp.enter_pc.iter().chain(&dp.exit_pc).any(|&p| lo <= p && p < hi && self.boundary_observes(d, p, touch))
    }

    /// Whether the entry or exit at `pc` of `d` and an event that `touch`es `d` are
    /// dependent: the order decides a check of either.
    ///
    /// * Rule 5 (the event checks that `d` is inside the kernels its semaphore lives in,
    ///   from invocation `from` to `to`): only `d`'s entry into `from` and its exit from
    ///   `to` change the answer (in between, `d` is inside; before and after, outside).
    /// * An entry that starts a run resets `d`'s semaphores and cells.
    /// * An exit checks the semaphores that no later kernel takes (rule 4), the outputs at
    ///   the end of a run, and the issuer's DMAs whose semaphore no later kernel takes.
    ///
    /// Every other entry or exit of a program of several kernels (a kernel boundary that a
    /// semaphore or a DMA in flight is handed across) is independent of the event.
    pub(crate) fn boundary_observes(&self, d: DeviceId, pc: u32, touch: &Touch) -> bool {
        let dp = &self.devices[d.index()];
        let j = dp.info[pc as usize].invocation;
        match dp.ops[pc as usize] {
            Op::Enter => {
                touch.live.is_some_and(|(from, _)| from == j)
                    || (self.starts_run(j) && (touch.sem.is_some() || touch.cells))
            }
            Op::Exit => {
                touch.live.is_some_and(|(_, to)| to == j)
                    || touch.sem.is_some_and(|sem| self.checked_at_exit(sem, j))
                    || (touch.cells && self.ends_run(j))
                    || touch.pending.is_some_and(|key| self.dma_checked_at_exit(key, j))
            }
            _ => false,
        }
    }

    /// Whether the operation at `pc` of `g` can occur before unit `u`.
    fn reachable(&self, state: &[u32], s: &UnitScratch, u: Unit, g: DeviceId, pc: u32) -> bool {
        let (lo, hi) = self.window(state, s, u, g);
        lo <= pc && pc < hi
    }

    /// The pcs of `g` that can run before unit `u`: from its pc up to its progress bound.
    fn window(&self, state: &[u32], s: &UnitScratch, u: Unit, g: DeviceId) -> (u32, u32) {
        let n = self.num_devices();
        debug_assert!(s.have_bounds[u]);
        (self.pc(state, g), s.bounds[u * n + g.index()])
    }

    /// What in-flight DMA `j` (record `r`) can still add to its semaphores if unit `u`
    /// never happens.
    fn increments(&self, state: &[u32], s: &UnitScratch, j: usize, r: &DmaRecord, u: Unit) -> DmaIncrements {
        let send = s.send_unit(j);
        if !self.lands_by_cell(r) {
            return DmaIncrements::whole(self, r.key, r.flags, (send, send + 1), u);
        }
        let bytes = match self.dma_op(r.key) {
            Op::LocalDma { bytes, .. } | Op::RemoteDma { bytes, .. } => bytes,
            _ => 0,
        };
        // Each cell adds its share as it lands (as `step` does).
        let share = r.cell_share(bytes) as u64;
        let left = s.pending_landings(state, j).filter(|&l| l != u).count() as u64;
        DmaIncrements { key: r.key, send: r.flags & SENT == 0 && u != send, land: left * share }
    }

    /// Computes the progress bounds of every device if unit `u` never happens.
    ///
    /// Leaving out a DMA's event moves no device and only withholds one increment
    /// ([`Program::withheld`]); everything else the bounds start from is the state's. So
    /// DMA units that withhold the same increment have the same bounds, computed once
    /// (in the fused reduce-scatter GMM at N = 8, 97 % of the DMA units asked about share
    /// them with another of their state). Debug builds compute them anyway and compare.
    fn ensure_bounds(&self, state: &[u32], s: &mut UnitScratch, u: Unit) {
        if s.have_bounds[u] {
            return;
        }
        let n = self.num_devices();
        let mut same = None;
        if let Some(w) = self.withheld(s, u) {
            match s.by_withheld.iter().find(|&&(x, _)| x == w) {
                Some(&(_, v)) if !cfg!(debug_assertions) => {
                    s.bounds.copy_within(v * n..(v + 1) * n, u * n);
                    s.have_bounds[u] = true;
                    return;
                }
                Some(&(_, v)) => same = Some(v),
                None => s.by_withheld.push((w, u)),
            }
        }
        let off = self.sem_offset();
        for (i, a) in s.avail.iter_mut().enumerate() {
            *a = state[off + i] as u64;
        }
        // Every increment an in-flight DMA can still make, except unit `u`'s own.
        let mut avail = std::mem::take(&mut s.avail);
        let pending = s.dmas.iter().enumerate().map(|(j, r)| self.increments(state, s, j, r, u));
        add_dma_increments(self, pending, &mut avail, |sem| sem.0 as usize);
        s.avail = avail;
        let bounds = &mut s.bounds[u * n..(u + 1) * n];
        bounds.copy_from_slice(&state[..n]);
        let skip = &self.dependencies.bound_skip;
        progress_bounds(
            |g| (&self.devices[g], skip.get(g).map_or(&[][..], Vec::as_slice)),
            bounds,
            u,
            &mut s.avail,
            &mut s.used,
            |sem| Some(sem.0 as usize),
        );
        if let Some(v) = same {
            debug_assert_eq!(s.bounds[v * n..(v + 1) * n], s.bounds[u * n..(u + 1) * n], "units {v} and {u}");
        }
        s.have_bounds[u] = true;
    }

    /// The one semaphore increment, `(semaphore, amount)`, that leaving out DMA unit `u`
    /// (still to happen) withholds from the bounds ([`Program::increments`]); `None` for a
    /// device's unit (leaving a device out stops it).
    fn withheld(&self, s: &UnitScratch, u: Unit) -> Option<(SemSlot, u64)> {
        if u < self.num_devices() {
            return None;
        }
        let (j, part) = s.owner(u);
        let r = &s.dmas[j];
        match (self.dma_op(r.key), part) {
            (Op::RemoteDma { send_sem, bytes, .. }, DmaPart::Send) => Some((send_sem, bytes as u64)),
            (Op::RemoteDma { recv_sem: sem, bytes, .. } | Op::LocalDma { sem, bytes, .. }, DmaPart::Land) => {
                Some((sem, bytes as u64))
            }
            (Op::RemoteDma { recv_sem: sem, bytes, .. } | Op::LocalDma { sem, bytes, .. }, DmaPart::Cell(_)) => {
                Some((sem, r.cell_share(bytes) as u64))
            }
            _ => None,
        }
    }
}
