//! Stubborn sets for window exploration.
//!
//! The construction is the one of [`crate::reduction`], re-derived for the window's
//! semantics, and more conservative: "can occur before `t`" is over-approximated by "can
//! still occur at all" (an operation at or after a device's pc; a pending event of an
//! in-flight DMA; a token with budget left), without progress bounds.
//!
//! **Units.** A tracked device (its current operation; a later operation of a device can
//! only happen after the current one), an in-flight DMA (all its pending events), a token
//! class.
//!
//! **Dependence** (two events that may be enabled together and either do not commute,
//! disable one another, or change the outcome of the other's rule check at the center):
//!
//! * a semaphore increment (a signal, a DMA's *sent*, *received* or *done*, a token) is
//!   dependent on the `Enter` of the semaphore's owner (which resets it), on the center's
//!   `Exit` and `Enter` when the owner is the center (rule 4 reads the semaphore, rule 5
//!   the lifecycle), and on the tokens of that semaphore (a token is enabled only while
//!   its target waits for more than the semaphore holds, so an increment can disable it);
//! * a token is dependent on its target's next operation (the wait it feeds);
//! * an operation that accesses a cell of the center (a DMA start, a computation) is
//!   dependent on every other operation that accesses that cell, one of the two writing
//!   it, and on the events of in-flight DMAs that read or write that cell (they end the
//!   intervals the race check looks at);
//! * waits, the entry barrier, the `Exit` of a device other than the center, operations
//!   on cells of other devices, and increments of a semaphore no token, reset or check
//!   reads, have no dependents: rules are checked at the center only, and values are
//!   dropped.
//!
//! **Necessary enabling sets.** A device blocked at a wait: everything that can still
//! increment that semaphore (devices with such an operation at or after their pc, DMAs in
//! flight, its token classes). At the entry barrier: the tracked devices that have not
//! entered. A token class with budget left: its target.
//!
//! With these, every window execution from a state is equivalent, rule checks at the
//! center included, to one that starts with an event of the stubborn set, and the window
//! state graph is finite and acyclic, so a violation reachable in the full window graph is
//! reachable in the reduced one. `tests/window.rs` compares both on every catalogue case,
//! mutant and random single-edit mutant.

use rustc_hash::FxHashMap;

use crate::ir::SemKind;
use crate::mesh::DeviceId;
use crate::program::{CellId, Op, Program, SemSlot};
use crate::state::{RECEIVED, SENT};

use super::step::WindowEvent;
use super::Window;

/// Static indexes of a window for its reduction.
#[derive(Clone, Debug, Default)]
pub(crate) struct Indexes {
    /// Per tracked semaphore (`position * sems_per_device + local`), per tracked device:
    /// 1 + the last pc of an operation of that device that increments the semaphore (a
    /// signal, or a DMA start whose events increment it), or 0.
    inc_last: Vec<Vec<u32>>,
    /// The center's cells, numbered.
    center_cells: FxHashMap<CellId, u32>,
    /// Per center cell, per tracked device: 1 + the last pc of an access, and of a write.
    access_last: Vec<Vec<(u32, u32)>>,
}

impl Indexes {
    pub(crate) fn build(program: &Program, tracked: &[DeviceId], position: &[u32], center: DeviceId) -> Indexes {
        let spd = program.sems_per_device;
        let t = tracked.len();
        let mut inc_last = vec![vec![0u32; t]; t * spd];
        let slot_index = |s: SemSlot| -> Option<usize> {
            let d = s.0 as usize / spd;
            (position[d] != u32::MAX).then(|| position[d] as usize * spd + s.0 as usize % spd)
        };
        for (gi, &g) in tracked.iter().enumerate() {
            for (pc, op) in program.devices[g.index()].ops.iter().enumerate() {
                let mut note = |s: SemSlot| {
                    if let Some(i) = slot_index(s) {
                        inc_last[i][gi] = pc as u32 + 1;
                    }
                };
                match *op {
                    Op::Signal { sem, .. } => note(sem),
                    Op::LocalDma { sem, .. } => note(sem),
                    Op::RemoteDma { send_sem, recv_sem, .. } => {
                        note(send_sem);
                        note(recv_sem);
                    }
                    _ => {}
                }
            }
        }
        let mut center_cells = FxHashMap::default();
        let mut access_last = Vec::new();
        for (c, info) in program.cells.iter().enumerate() {
            if info.owner != Some(center) {
                continue;
            }
            let mut last = vec![(0u32, 0u32); t];
            for a in &program.accesses[c] {
                let p = position[a.device.index()];
                if p == u32::MAX {
                    continue;
                }
                let e = &mut last[p as usize];
                e.0 = e.0.max(a.pc + 1);
                if a.write {
                    e.1 = e.1.max(a.pc + 1);
                }
            }
            center_cells.insert(CellId(c as u32), access_last.len() as u32);
            access_last.push(last);
        }
        Indexes { inc_last, center_cells, access_last }
    }
}

/// Reusable buffers for [`Window::stubborn_set`].
#[derive(Clone, Debug, Default)]
pub struct WindowScratch {
    records: Vec<(crate::event::DmaKey, u32)>,
    in_t: Vec<bool>,
    work: Vec<usize>,
    found: Vec<usize>,
    best: Vec<usize>,
}

/// A unit: tracked device `i < T`, in-flight DMA `T + j`, token class `T + R + c`.
type Unit = usize;

impl Window<'_> {
    /// Writes to `out` the enabled events of a stubborn set of `state`: a subset of
    /// `enabled` (the window's enabled events of `state`) that is enough to explore.
    pub fn stubborn_set(
        &self,
        state: &[u32],
        enabled: &[WindowEvent],
        s: &mut WindowScratch,
        out: &mut Vec<WindowEvent>,
    ) {
        out.clear();
        for &e in enabled {
            if let WindowEvent::Step(d) = e {
                if matches!(self.current(state, d), Some(Op::Wait { .. } | Op::EntryBarrier)) {
                    out.push(e);
                    return;
                }
            }
        }
        s.records.clear();
        s.records.extend(self.dma_records(state));
        let (t, r) = (self.tracked.len(), s.records.len());
        let units = t + r + self.tokens.len();
        let mut best_count = usize::MAX;
        s.best.clear();
        for seed in 0..units {
            if !self.unit_enabled(state, s, seed) {
                continue;
            }
            let Some(count) = self.closure(state, s, seed, best_count) else { continue };
            if count < best_count {
                best_count = count;
                s.best.clear();
                s.best.extend((0..units).filter(|&u| s.in_t[u]));
                if count == 1 {
                    break;
                }
            }
        }
        if best_count == usize::MAX {
            out.extend_from_slice(enabled);
            return;
        }
        for &e in enabled {
            let unit = match e {
                WindowEvent::Step(d) => self.position[d.index()] as usize,
                WindowEvent::Token(i) => t + r + i as usize,
                WindowEvent::Sent(k) | WindowEvent::Received(k) | WindowEvent::Done(k) => {
                    t + s.records.iter().position(|&(key, _)| key == k).expect("enabled DMA is in flight")
                }
            };
            if s.best.contains(&unit) {
                out.push(e);
            }
        }
    }

    fn current(&self, state: &[u32], d: DeviceId) -> Option<Op> {
        self.program.devices[d.index()].ops.get(self.pc(state, d) as usize).copied()
    }

    fn unit_enabled(&self, state: &[u32], s: &WindowScratch, u: Unit) -> bool {
        let (t, r) = (self.tracked.len(), s.records.len());
        if u < t {
            self.is_enabled(state, WindowEvent::Step(self.tracked[u]))
        } else if u < t + r {
            true
        } else {
            self.is_enabled(state, WindowEvent::Token((u - t - r) as u32))
        }
    }

    fn unit_events(&self, state: &[u32], s: &WindowScratch, u: Unit) -> usize {
        let (t, r) = (self.tracked.len(), s.records.len());
        if (t..t + r).contains(&u) {
            let (key, flags) = s.records[u - t];
            match self.program.dma_op(key) {
                Op::LocalDma { .. } => 1,
                _ => usize::from(flags & SENT == 0) + usize::from(flags & RECEIVED == 0),
            }
        } else {
            usize::from(self.unit_enabled(state, s, u))
        }
    }

    fn closure(&self, state: &[u32], s: &mut WindowScratch, seed: Unit, limit: usize) -> Option<usize> {
        let units = self.tracked.len() + s.records.len() + self.tokens.len();
        s.in_t.clear();
        s.in_t.resize(units, false);
        s.work.clear();
        let mut count = 0usize;
        s.in_t[seed] = true;
        s.work.push(seed);
        count += self.unit_events(state, s, seed);
        if count >= limit {
            return None;
        }
        let mut found = std::mem::take(&mut s.found);
        let mut result = Some(());
        'closure: while let Some(u) = s.work.pop() {
            found.clear();
            self.dependents(state, s, u, &mut found);
            for &v in &found {
                if !s.in_t[v] {
                    s.in_t[v] = true;
                    s.work.push(v);
                    count += self.unit_events(state, s, v);
                    if count >= limit {
                        result = None;
                        break 'closure;
                    }
                }
            }
        }
        s.found = found;
        result.map(|()| count)
    }

    /// The units that must join a stubborn set containing `u`.
    fn dependents(&self, state: &[u32], s: &WindowScratch, u: Unit, found: &mut Vec<Unit>) {
        let (t, r) = (self.tracked.len(), s.records.len());
        if u < t {
            let g = self.tracked[u];
            let Some(op) = self.current(state, g) else { return };
            if !self.unit_enabled(state, s, u) {
                match op {
                    Op::Wait { sem, .. } => self.incrementers(state, s, sem, Some(g), found),
                    Op::EntryBarrier => {
                        let k = self.program.invocation_of(g, self.pc(state, g));
                        for (i, &e) in self.tracked.iter().enumerate() {
                            let entered = match self.program.lifecycle(e, self.pc(state, e)) {
                                None => true,
                                Some((inv, running)) => inv > k || (inv == k && running),
                            };
                            if !entered {
                                found.push(i);
                            }
                        }
                    }
                    _ => unreachable!("only waits and the entry barrier block"),
                }
                return;
            }
            match op {
                Op::Wait { .. } | Op::EntryBarrier => {}
                Op::Enter => self.reset_dependents(state, s, g, found),
                Op::Exit if g == self.center => self.reset_dependents(state, s, g, found),
                Op::Exit => {}
                Op::Signal { target, sem, .. } => {
                    if self.is_tracked(target) {
                        self.increment_dependents(state, sem, found, t + r);
                    }
                }
                Op::LocalDma { src, dst, .. } | Op::RemoteDma { src, dst, .. } | Op::Compute { src, dst, .. } => {
                    let (src, dst) = (self.program.span(src), self.program.span(dst));
                    let add_reads = matches!(op, Op::Compute { kind: crate::program::ComputeKind::Add, .. });
                    self.cell_dependents(state, s, Some(g), src, false, found);
                    self.cell_dependents(state, s, Some(g), dst, true, found);
                    if add_reads {
                        self.cell_dependents(state, s, Some(g), dst, false, found);
                    }
                }
            }
        } else if u < t + r {
            let (key, flags) = s.records[u - t];
            let op = self.program.dma_op(key);
            let (src, dst) = match op {
                Op::LocalDma { src, dst, .. } | Op::RemoteDma { src, dst, .. } => (src, dst),
                _ => unreachable!("DMA record of a DMA op"),
            };
            match op {
                Op::LocalDma { sem, .. } => self.increment_dependents(state, sem, found, t + r),
                Op::RemoteDma { send_sem, recv_sem, target, .. } => {
                    if flags & SENT == 0 {
                        self.increment_dependents(state, send_sem, found, t + r);
                    }
                    if flags & RECEIVED == 0 && self.is_tracked(target) {
                        self.increment_dependents(state, recv_sem, found, t + r);
                    }
                }
                _ => {}
            }
            // Its landing ends the write of the destination (and the read of the
            // source); its *sent* ends the read of the source.
            self.cell_dependents(state, s, None, self.program.span(dst), true, found);
            self.cell_dependents(state, s, None, self.program.span(src), false, found);
        } else {
            let c = u - t - r;
            let tok = &self.tokens[c];
            found.push(self.position[tok.target.index()] as usize);
            self.incrementers(state, s, tok.sem, None, found);
        }
    }

    /// For the `Enter` of `g` (or the center's `Exit`): everything that can still
    /// increment one of `g`'s non-barrier semaphores (or, for the center, signal it or
    /// land in it, which are such increments too).
    fn reset_dependents(&self, state: &[u32], s: &WindowScratch, g: DeviceId, found: &mut Vec<Unit>) {
        let spd = self.program.sems_per_device;
        for (i, (decl, _)) in self.program.sem_decls.iter().enumerate() {
            if decl.kind != SemKind::Barrier {
                self.incrementers(state, s, SemSlot((g.index() * spd + i) as u32), Some(g), found);
            }
        }
    }

    /// For an increment of `sem`: its tokens, its owner (if the owner may still reset it
    /// at an `Enter`), and the center if it is the owner (rule 4 at exit, rule 5).
    fn increment_dependents(&self, state: &[u32], sem: SemSlot, found: &mut Vec<Unit>, token_base: usize) {
        let spd = self.program.sems_per_device;
        let owner = DeviceId((sem.0 as usize / spd) as u16);
        let p = self.position[owner.index()] as usize;
        found.extend(self.tokens_of[p * spd + sem.0 as usize % spd].iter().map(|&c| token_base + c as usize));
        let pc = self.pc(state, owner);
        let dp = &self.program.devices[owner.index()];
        let barrier = self.program.sem_kind(sem) == SemKind::Barrier;
        let future_enter = dp.enter_pc.last().is_some_and(|&e| e >= pc);
        let future_exit = dp.exit_pc.last().is_some_and(|&e| e >= pc);
        if (!barrier && future_enter) || (owner == self.center && !barrier && future_exit) {
            found.push(p);
        }
    }

    /// Every unit that can still increment `sem`: devices (other than `except`) with an
    /// incrementing operation at or after their pc, in-flight DMAs with a pending
    /// incrementing event, and the token classes of `sem`.
    fn incrementers(
        &self,
        state: &[u32],
        s: &WindowScratch,
        sem: SemSlot,
        except: Option<DeviceId>,
        found: &mut Vec<Unit>,
    ) {
        let spd = self.program.sems_per_device;
        let (t, r) = (self.tracked.len(), s.records.len());
        let owner = sem.0 as usize / spd;
        let p = self.position[owner] as usize;
        let idx = p * spd + sem.0 as usize % spd;
        for (gi, &last) in self.indexes.inc_last[idx].iter().enumerate() {
            let g = self.tracked[gi];
            if Some(g) != except && last > self.pc(state, g) {
                found.push(gi);
            }
        }
        for (j, &(key, flags)) in s.records.iter().enumerate() {
            let hits = match self.program.dma_op(key) {
                Op::LocalDma { sem: x, .. } => x == sem,
                Op::RemoteDma { send_sem, recv_sem, .. } => {
                    (flags & SENT == 0 && send_sem == sem) || (flags & RECEIVED == 0 && recv_sem == sem)
                }
                _ => false,
            };
            if hits {
                found.push(t + j);
            }
        }
        found.extend(self.tokens_of[idx].iter().map(|&c| t + r + c as usize));
    }

    /// For an access (`write`, else read) of `cells` by device `me` (or by an in-flight
    /// DMA's events when `me` is `None`): the devices that can still access one of the
    /// center's cells among them in a conflicting way, and the in-flight DMAs that read
    /// or write them in a conflicting way.
    fn cell_dependents(
        &self,
        state: &[u32],
        s: &WindowScratch,
        me: Option<DeviceId>,
        cells: &[CellId],
        write: bool,
        found: &mut Vec<Unit>,
    ) {
        let t = self.tracked.len();
        for c in cells {
            let Some(&ci) = self.indexes.center_cells.get(c) else { continue };
            for (gi, &(any, writes)) in self.indexes.access_last[ci as usize].iter().enumerate() {
                let g = self.tracked[gi];
                let last = if write { any } else { writes };
                if Some(g) != me && last > self.pc(state, g) {
                    found.push(gi);
                }
            }
            for (j, &(key, _)) in s.records.iter().enumerate() {
                let (src, dst) = match self.program.dma_op(key) {
                    Op::LocalDma { src, dst, .. } | Op::RemoteDma { src, dst, .. } => (src, dst),
                    _ => continue,
                };
                if self.program.span(dst).contains(c) || (write && self.program.span(src).contains(c)) {
                    found.push(t + j);
                }
            }
        }
    }
}
