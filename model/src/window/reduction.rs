//! Stubborn sets for window exploration.
//!
//! The construction is the one of [`crate::reduction`] (units, dependence including the
//! rule checks, progress bounds, necessary enabling sets), re-derived for the window's
//! semantics; the search over seeds is shared ([`crate::stubborn`]).
//!
//! In a state `s` the explorer follows only the enabled events of a *stubborn set* `T`,
//! built by closure from one enabled unit:
//!
//! * for an **enabled** unit in `T`, every unit with an event that is *dependent* on its
//!   event and *can occur before it* joins `T`;
//! * for a **disabled** unit in `T`, a *necessary enabling set* joins `T`: units one of
//!   whose events occurs in every execution from `s` that enables it.
//!
//! **Units.** A tracked device (its current operation: any later operation of a device
//! can only occur after the current one, so "a later operation of `g`" joins as `g`); the
//! *sending* of an in-flight remote copy; the *landing* of an in-flight DMA (a remote
//! copy's *received*, a local copy's *done*); a token class (all its firings).
//!
//! **Can occur before `t`.** For each unit `u` a *progress bound* per tracked device: how
//! far it could get in an execution from `s` that does not contain `u`'s events. It is a
//! fixpoint that lets every device except `u`'s own run while every wait is covered by
//! what could be available: the semaphore's value, every increment of an in-flight DMA's
//! pending events (except `u`'s), every increment of a device's operation it has passed
//! (a signal to a tracked device; a DMA start, for the increments of its later events),
//! and `budget - used` tokens of every class (except `u`'s). Resets (`Enter`) are ignored
//! and every semaphore is waited on only by its owner (A2), so a device that passes a wait
//! in some such execution passes it in the fixpoint: the bound over-approximates. An
//! operation at a pc in `[pc, bound)` *can occur before `u`*; a device *can be at* a pc in
//! `[pc, bound]`, and a token class can fire before `u` when it has budget left and its
//! target can be at a wait it feeds (its semaphore, its invocation).
//!
//! **What differs from the exact reduction** ([`crate::reduction`]):
//!
//! * tokens are units, with budget left they count as available increments in the bounds;
//! * tokens are *lazy*: enabled only while their target waits for more than its semaphore
//!   holds. So an increment can **disable** a token: an increment of `x` and a token of
//!   `x` are dependent, and an enabled token in `T` pulls in every unit that can
//!   increment `x` before it (so that it stays enabled: every enabled unit of `T` can
//!   serve as the key);
//! * rules are checked at the center only: only accesses to the center's cells race, only
//!   the center's lifecycle is checked (non-barrier signals to it, landings in it, its own
//!   local copies' *done*), only the center's exit checks semaphores and DMAs;
//! * no cell values: two DMA events never conflict on a cell (no DMA event checks a race;
//!   only an operation's start does), so a DMA unit's cell dependents are devices only;
//! * DMAs complete in any order (A3), so a pending DMA event is always enabled.
//!
//! **Dependence** (for an enabled unit of `T`, what joins when it can occur before it):
//!
//! * an `Enter` of `g`: every unit that can increment one of `g`'s non-barrier semaphores
//!   (the reset does not commute with them); for the center also every operation and
//!   pending landing checked against its lifecycle (non-barrier signals to it, copies
//!   into it, its local copies);
//! * the center's `Exit`: the same (rule 5 and rule 4 read its lifecycle and semaphores),
//!   and the sending of its remote copies and the landing of its local ones (rule 4);
//! * a signal to a tracked device, a DMA event: as an increment of `x`, the tokens of `x`
//!   that can fire before it, the owner's `Enter` (reset; not for the barrier semaphore)
//!   and, if the owner is the center, its `Exit` (rule 4; not for the barrier semaphore);
//!   a non-barrier signal to the center, a landing in it and the *done* of its local copy
//!   also the center's `Enter` and `Exit` (rule 5), and so does the sending of the
//!   center's remote copy (rule 4 reads whether it was sent);
//! * a DMA start or a computation touching the center's cells: the other devices'
//!   operations on those cells in conflict (one of the two writes), and the pending events
//!   of in-flight DMAs that end a conflicting interval (a landing ends the write of the
//!   destination; either event of a remote copy ends the read of its source, the landing
//!   of a local one ends both); a DMA event: the devices' operations on the cells whose
//!   interval it ends (the destination; the source while it is still read);
//! * a token: its target (its wait disables it) and every unit that can increment its
//!   semaphore before it (they can disable it, and it can disable the other tokens);
//! * waits, the entry barrier, the `Exit` of a device other than the center, a signal to
//!   an untracked device and operations on other devices' cells: no dependents (an enabled
//!   wait stays enabled, since only its device decrements or resets its semaphore, and
//!   disables no token, since a token of its semaphore needs it to hold less than the
//!   wait; the entry barrier only becomes more enabled; nothing is checked elsewhere).
//!
//! **Necessary enabling sets.** A device blocked at a wait on `x`: the units that can
//! increment `x` before it (bounds of the blocked device: it does not move until then). At
//! the entry barrier: the tracked devices that have not entered. A disabled token class
//! with budget left: its target (only the target's steps move it to a wait, or lower its
//! semaphore). A unit with nothing pending (a finished device, a DMA event that occurred,
//! a spent token class) never becomes enabled again.
//!
//! **Soundness.** With these, for `t` enabled in `T` and events `e1 ... ek` outside `T`
//! executable from `s`: each `ei` can occur before `t` (the execution does not contain
//! `t`), so it is independent of `t`: `t` stays enabled after `e1 ... ek`, and
//! `e1 ... ek t` and `t e1 ... ek` are both executable, reach the same state, and every
//! event's check at the center has the same outcome. A disabled unit of `T` cannot become
//! enabled by events outside `T`, so the first event of `T` in an execution from `s` is
//! one of an enabled unit. Take a window execution from `s` whose last event `em` is the
//! first to break a rule at the center: if it contains an event of `T`, move the first
//! one to the front; otherwise put an enabled event of `T` in front of it. Either way the
//! result starts with an explored event, breaks no rule before `em`, and `em` breaks the
//! same rule. By induction on the longest path from `s` (the window's state graph is
//! finite and acyclic) the reduced graph reaches, for every first violation at the center
//! of the full graph, the same event breaking the same rule (so the same verdict).
//! `tests/model/window_reduction.rs` checks exactly this: every first violation at
//! the center of the full window graph (event and rule) is one of the reduced graph, on
//! random kernels, catalogue cases and random mutants, windows of radius 1 and 2 around
//! several centers; `tests/model/window.rs` compares verdicts.
//!
//! On a correct kernel the reduced window graph is a single path, as the exact reduction
//! makes the whole ring's: `psum_scatter` at N = 256, 22,133 window states (3,490,062
//! without progress bounds and separate sending and landing units).

use rustc_hash::FxHashMap;

use crate::event::DmaKey;
use crate::ir::SemKind;
use crate::mesh::DeviceId;
use crate::program::{CellId, Op, Program, SemSlot};
use crate::state::{RECEIVED, SENT};
use crate::stubborn::{add_dma_increments, progress_bounds, DmaIncrements, SeedSearch, Unit, Units};

use super::step::WindowEvent;
use super::Window;

/// Static indexes of a window for its reduction.
#[derive(Clone, Debug, Default)]
pub(crate) struct Indexes {
    /// Per tracked semaphore (`position * sems_per_device + local`), per tracked device:
    /// the pcs of its operations that increment the semaphore (a signal, or a DMA start
    /// whose events increment it), ascending.
    inc_pcs: Vec<Vec<Vec<u32>>>,
    /// Per tracked semaphore: the pcs of its owner's waits on it, ascending.
    wait_pcs: Vec<Vec<u32>>,
    /// The center's cells, numbered.
    center_cells: FxHashMap<CellId, u32>,
    /// Per center cell, per tracked device: the pcs of its accesses (`[0]`) and of its
    /// writes (`[1]`) to the cell, ascending.
    access_pcs: Vec<Vec<[Vec<u32>; 2]>>,
    /// Per tracked device: the pcs of its operations checked against the center's
    /// lifecycle (non-barrier signals to the center, copies into it), ascending.
    center_touchers: Vec<Vec<u32>>,
}

impl Indexes {
    pub(crate) fn build(program: &Program, tracked: &[DeviceId], position: &[u32], center: DeviceId) -> Indexes {
        let spd = program.sems_per_device;
        let t = tracked.len();
        let slot_index = |s: SemSlot| -> Option<usize> {
            let d = s.0 as usize / spd;
            (position[d] != u32::MAX).then(|| position[d] as usize * spd + s.0 as usize % spd)
        };
        let mut inc_pcs = vec![vec![Vec::new(); t]; t * spd];
        let mut wait_pcs = vec![Vec::new(); t * spd];
        let mut center_touchers = vec![Vec::new(); t];
        for (gi, &g) in tracked.iter().enumerate() {
            for (pc, op) in program.devices[g.index()].ops.iter().enumerate() {
                let pc = pc as u32;
                let mut note = |s: SemSlot| {
                    if let Some(i) = slot_index(s) {
                        let pcs: &mut Vec<u32> = &mut inc_pcs[i][gi];
                        if pcs.last() != Some(&pc) {
                            pcs.push(pc);
                        }
                    }
                };
                let touches_center = match *op {
                    Op::Signal { target, sem, .. } => {
                        note(sem);
                        target == center && program.sem_kind(sem) != SemKind::Barrier
                    }
                    Op::LocalDma { sem, .. } => {
                        note(sem);
                        g == center
                    }
                    Op::RemoteDma { target, send_sem, recv_sem, .. } => {
                        note(send_sem);
                        note(recv_sem);
                        target == center
                    }
                    Op::Wait { sem, .. } => {
                        if let Some(i) = slot_index(sem) {
                            wait_pcs[i].push(pc);
                        }
                        false
                    }
                    _ => false,
                };
                if touches_center {
                    center_touchers[gi].push(pc);
                }
            }
        }
        let mut center_cells = FxHashMap::default();
        let mut access_pcs = Vec::new();
        for (c, info) in program.cells.iter().enumerate() {
            if info.owner != Some(center) {
                continue;
            }
            let mut pcs = vec![[Vec::new(), Vec::new()]; t];
            for a in &program.accesses[c] {
                let p = position[a.device.index()];
                if p == u32::MAX {
                    continue;
                }
                let lists: &mut [Vec<u32>; 2] = &mut pcs[p as usize];
                lists[0].push(a.pc);
                if a.write {
                    lists[1].push(a.pc);
                }
            }
            for lists in &mut pcs {
                for l in lists.iter_mut() {
                    l.sort_unstable();
                    l.dedup();
                }
            }
            center_cells.insert(CellId(c as u32), access_pcs.len() as u32);
            access_pcs.push(pcs);
        }
        Indexes { inc_pcs, wait_pcs, center_cells, access_pcs, center_touchers }
    }
}

/// Whether an ascending list of pcs has one in `lo..hi`.
fn any_in(pcs: &[u32], lo: u32, hi: u32) -> bool {
    let i = pcs.partition_point(|&p| p < lo);
    pcs.get(i).is_some_and(|&p| p < hi)
}

/// Reusable buffers for [`Window::stubborn_set`].
#[derive(Clone, Debug, Default)]
pub struct WindowScratch {
    state: StateScratch,
    search: SeedSearch,
}

/// What the units of one state need: its DMAs, and the progress bounds computed so far.
#[derive(Clone, Debug, Default)]
struct StateScratch {
    /// The in-flight DMAs: key and flags.
    records: Vec<(DmaKey, u32)>,
    /// Per unit, per tracked device: its progress bound if the unit's events never occur.
    bounds: Vec<u32>,
    have_bounds: Vec<bool>,
    /// Per tracked semaphore: what could be available, and what the bounds' waits took.
    avail: Vec<u64>,
    used: Vec<u64>,
}

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
        // Fast path: waits and the entry barrier have no dependents.
        for &e in enabled {
            if let WindowEvent::Step(d) = e {
                if matches!(self.current_op(state, d), Some(Op::Wait { .. } | Op::EntryBarrier)) {
                    out.push(e);
                    return;
                }
            }
        }
        let st = &mut s.state;
        st.records.clear();
        st.records.extend(self.dma_records(state));
        let t = self.tracked.len();
        let units = t + 2 * st.records.len() + self.tokens.len();
        st.bounds.clear();
        st.bounds.resize(units * t, 0);
        st.have_bounds.clear();
        st.have_bounds.resize(units, false);
        st.avail.resize(t * self.program.sems_per_device, 0);
        st.used.resize(t * self.program.sems_per_device, 0);
        if !s.search.smallest(&mut WindowUnits { w: self, state, s: st }, 0) {
            out.extend_from_slice(enabled);
            return;
        }
        let st = &s.state;
        let r = st.records.len();
        let dma =
            |k: DmaKey| t + 2 * st.records.iter().position(|&(key, _)| key == k).expect("enabled DMA is in flight");
        for &e in enabled {
            let unit = match e {
                WindowEvent::Step(d) => self.position[d.index()] as usize,
                WindowEvent::Token(i) => t + 2 * r + i as usize,
                WindowEvent::Sent(k) => dma(k),
                WindowEvent::Received(k) | WindowEvent::Done(k) => dma(k) + 1,
            };
            if s.search.chosen(unit) {
                out.push(e);
            }
        }
    }
}

/// The units of one window state: device `i < T`, the sending (`T + 2j`) and the landing
/// (`T + 2j + 1`) of in-flight DMA `j < R`, token class `T + 2R + c`.
struct WindowUnits<'a, 'p> {
    w: &'a Window<'p>,
    state: &'a [u32],
    s: &'a mut StateScratch,
}

impl Units for WindowUnits<'_, '_> {
    fn count(&self) -> usize {
        self.s.have_bounds.len()
    }

    fn events(&self, u: Unit) -> usize {
        let (t, r) = (self.w.tracked.len(), self.s.records.len());
        let enabled = if u < t {
            self.w.is_enabled(self.state, WindowEvent::Step(self.w.tracked[u]))
        } else if u < t + 2 * r {
            self.pending(u)
        } else {
            self.w.is_enabled(self.state, WindowEvent::Token((u - t - 2 * r) as u32))
        };
        usize::from(enabled)
    }

    fn dependents(&mut self, u: Unit, found: &mut Vec<Unit>) {
        let (t, r) = (self.w.tracked.len(), self.s.records.len());
        if u < t {
            self.device_dependents(u, found);
        } else if u < t + 2 * r {
            self.dma_dependents(u, found);
        } else {
            self.token_dependents(u - t - 2 * r, found);
        }
    }
}

impl WindowUnits<'_, '_> {
    fn t(&self) -> usize {
        self.w.tracked.len()
    }

    fn token_unit(&self, c: usize) -> Unit {
        self.t() + 2 * self.s.records.len() + c
    }

    /// The index of a tracked semaphore among the tracked ones.
    fn sem_index(&self, sem: SemSlot) -> usize {
        self.w.sem_word(sem) - self.t()
    }

    /// The pcs of tracked device `gi` that can run before unit `u`: from its pc up to
    /// its progress bound (it can be *at* the bound).
    fn span(&self, u: Unit, gi: usize) -> (u32, u32) {
        debug_assert!(self.s.have_bounds[u]);
        (self.state[gi], self.s.bounds[u * self.t() + gi])
    }

    /// Whether DMA unit `u`'s event is still to occur (then it is enabled: A3).
    fn pending(&self, u: Unit) -> bool {
        let t = self.t();
        let (key, flags) = self.s.records[(u - t) / 2];
        let local = matches!(self.w.program.dma_op(key), Op::LocalDma { .. });
        if (u - t) % 2 == 0 {
            !local && flags & SENT == 0
        } else {
            local || flags & RECEIVED == 0
        }
    }

    fn device_dependents(&mut self, u: Unit, found: &mut Vec<Unit>) {
        let w = self.w;
        let g = w.tracked[u];
        let Some(op) = w.current_op(self.state, g) else { return };
        if self.events(u) == 0 {
            match op {
                Op::Wait { sem, .. } => {
                    self.ensure_bounds(u);
                    self.incrementers(u, sem, found);
                }
                Op::EntryBarrier => {
                    let k = w.program.invocation_of(g, self.state[u]);
                    found.extend((0..self.t()).filter(|&i| !w.has_entered(self.state, w.tracked[i], k)));
                }
                _ => unreachable!("only waits and the entry barrier block"),
            }
            return;
        }
        match op {
            Op::Wait { .. } | Op::EntryBarrier => {}
            Op::Exit if g != w.center => {}
            Op::Enter | Op::Exit => {
                self.ensure_bounds(u);
                let spd = w.program.sems_per_device;
                for (i, (decl, _)) in w.program.sem_decls.iter().enumerate() {
                    if decl.kind != SemKind::Barrier {
                        self.incrementers(u, SemSlot((g.index() * spd + i) as u32), found);
                    }
                }
                if g == w.center {
                    self.center_touchers(u, found);
                }
                if g == w.center && op == Op::Exit {
                    let t = self.t();
                    for (j, &(key, flags)) in self.s.records.iter().enumerate() {
                        if key.issuer == g {
                            match w.program.dma_op(key) {
                                Op::LocalDma { .. } => found.push(t + 2 * j + 1),
                                _ if flags & SENT == 0 => found.push(t + 2 * j),
                                _ => {}
                            }
                        }
                    }
                }
            }
            Op::Signal { target, sem, .. } => {
                if w.is_tracked(target) {
                    self.ensure_bounds(u);
                    self.increment_dependents(u, sem, found);
                    if target == w.center && w.program.sem_kind(sem) != SemKind::Barrier {
                        self.center_lifecycle(u, found);
                    }
                }
            }
            Op::LocalDma { src, dst, .. } | Op::RemoteDma { src, dst, .. } | Op::Compute { src, dst, .. } => {
                let (src, dst) = (w.program.span(src), w.program.span(dst));
                let center = |cells: &[CellId]| cells.iter().any(|c| w.indexes.center_cells.contains_key(c));
                if !center(src) && !center(dst) {
                    return;
                }
                self.ensure_bounds(u);
                self.cell_dependents(u, Some(u), src, false, found);
                // A write's dependents include a read's (`dst += src` reads `dst` too).
                self.cell_dependents(u, Some(u), dst, true, found);
            }
        }
    }

    fn dma_dependents(&mut self, u: Unit, found: &mut Vec<Unit>) {
        if !self.pending(u) {
            return; // an event that occurred never occurs again
        }
        self.ensure_bounds(u);
        let w = self.w;
        let t = self.t();
        let (key, flags) = self.s.records[(u - t) / 2];
        let landing = (u - t) % 2 == 1;
        match w.program.dma_op(key) {
            Op::LocalDma { src, dst, sem, .. } => {
                self.increment_dependents(u, sem, found);
                if key.issuer == w.center {
                    self.center_lifecycle(u, found);
                }
                self.cell_dependents(u, None, w.program.span(dst), true, found);
                self.cell_dependents(u, None, w.program.span(src), false, found);
            }
            Op::RemoteDma { src, dst, target, send_sem, recv_sem, .. } => {
                if landing {
                    self.increment_dependents(u, recv_sem, found);
                    if target == w.center {
                        self.center_lifecycle(u, found);
                    }
                    self.cell_dependents(u, None, w.program.span(dst), true, found);
                } else {
                    self.increment_dependents(u, send_sem, found);
                    if key.issuer == w.center {
                        self.center_lifecycle(u, found);
                    }
                }
                if flags == 0 {
                    self.cell_dependents(u, None, w.program.span(src), false, found);
                }
            }
            _ => unreachable!("DMA record of a DMA op"),
        }
    }

    fn token_dependents(&mut self, c: usize, found: &mut Vec<Unit>) {
        let w = self.w;
        let tok = &w.tokens[c];
        if w.tokens_used(self.state, c as u32) >= tok.budget {
            return;
        }
        found.push(w.position[tok.target.index()] as usize);
        let u = self.token_unit(c);
        if self.events(u) > 0 {
            self.ensure_bounds(u);
            self.incrementers(u, tok.sem, found);
        }
    }

    /// For an increment of `sem` (unit `u`): the tokens of `sem` that can fire before
    /// it, the owner's `Enter` (not for the barrier semaphore), and, for the center, its
    /// `Exit`.
    fn increment_dependents(&self, u: Unit, sem: SemSlot, found: &mut Vec<Unit>) {
        let w = self.w;
        self.tokens_of(u, sem, found);
        if w.program.sem_kind(sem) == SemKind::Barrier {
            return;
        }
        let owner = w.program.sem_device(sem);
        let oi = w.position[owner.index()] as usize;
        let (lo, hi) = self.span(u, oi);
        let dp = &w.program.devices[owner.index()];
        if any_in(&dp.enter_pc, lo, hi) || (owner == w.center && any_in(&dp.exit_pc, lo, hi)) {
            found.push(oi);
        }
    }

    /// The center, if its `Enter` or `Exit` can occur before unit `u`.
    fn center_lifecycle(&self, u: Unit, found: &mut Vec<Unit>) {
        let w = self.w;
        let ci = w.position[w.center.index()] as usize;
        let (lo, hi) = self.span(u, ci);
        let dp = &w.program.devices[w.center.index()];
        if any_in(&dp.enter_pc, lo, hi) || any_in(&dp.exit_pc, lo, hi) {
            found.push(ci);
        }
    }

    /// Everything checked against the center's lifecycle that can occur before unit `u`:
    /// devices with such an operation in their span, pending landings in the center.
    fn center_touchers(&self, u: Unit, found: &mut Vec<Unit>) {
        let w = self.w;
        let t = self.t();
        for gi in 0..t {
            let (lo, hi) = self.span(u, gi);
            if any_in(&w.indexes.center_touchers[gi], lo, hi) {
                found.push(gi);
            }
        }
        for (j, &(key, flags)) in self.s.records.iter().enumerate() {
            let into_center = match w.program.dma_op(key) {
                Op::LocalDma { .. } => key.issuer == w.center,
                Op::RemoteDma { target, .. } => target == w.center && flags & RECEIVED == 0,
                _ => false,
            };
            if into_center {
                found.push(t + 2 * j + 1);
            }
        }
    }

    /// Every unit that can increment `sem` before unit `u`: devices with an incrementing
    /// operation in their span, pending incrementing DMA events, tokens of `sem`.
    fn incrementers(&self, u: Unit, sem: SemSlot, found: &mut Vec<Unit>) {
        let w = self.w;
        let t = self.t();
        let idx = self.sem_index(sem);
        for (gi, pcs) in w.indexes.inc_pcs[idx].iter().enumerate() {
            let (lo, hi) = self.span(u, gi);
            if any_in(pcs, lo, hi) {
                found.push(gi);
            }
        }
        for (j, &(key, flags)) in self.s.records.iter().enumerate() {
            match w.program.dma_op(key) {
                Op::LocalDma { sem: x, .. } if x == sem => found.push(t + 2 * j + 1),
                Op::RemoteDma { send_sem, recv_sem, .. } => {
                    if flags & SENT == 0 && send_sem == sem {
                        found.push(t + 2 * j);
                    }
                    if flags & RECEIVED == 0 && recv_sem == sem {
                        found.push(t + 2 * j + 1);
                    }
                }
                _ => {}
            }
        }
        self.tokens_of(u, sem, found);
    }

    /// The token classes of `sem` that can fire before unit `u`: budget left, and the
    /// target can be at a wait they feed.
    fn tokens_of(&self, u: Unit, sem: SemSlot, found: &mut Vec<Unit>) {
        let w = self.w;
        let idx = self.sem_index(sem);
        let classes = &w.tokens_of[idx];
        if classes.is_empty() {
            return;
        }
        let target = w.program.sem_device(sem);
        let ti = w.position[target.index()] as usize;
        let (lo, hi) = self.span(u, ti);
        let waits = &w.indexes.wait_pcs[idx];
        let waits = &waits[waits.partition_point(|&p| p < lo)..waits.partition_point(|&p| p <= hi)];
        for &c in classes {
            let unit = self.token_unit(c as usize);
            let tok = &w.tokens[c as usize];
            if unit == u || w.tokens_used(self.state, c) >= tok.budget {
                continue;
            }
            let feeds = |&p: &u32| tok.invocation.is_none_or(|k| w.program.invocation_of(target, p) == k);
            if waits.iter().any(feeds) {
                found.push(unit);
            }
        }
    }

    /// For an access (`write`, else read) of `cells` by device unit `me` (or by a DMA
    /// event, `me` is `None`) that can occur before unit `u`: the devices whose
    /// operations on the center's cells among them conflict and can occur before `u`;
    /// for a device, also the pending events of in-flight DMAs that end a conflicting
    /// interval on them.
    fn cell_dependents(&self, u: Unit, me: Option<Unit>, cells: &[CellId], write: bool, found: &mut Vec<Unit>) {
        let w = self.w;
        let t = self.t();
        for c in cells {
            let Some(&ci) = w.indexes.center_cells.get(c) else { continue };
            for (gi, lists) in w.indexes.access_pcs[ci as usize].iter().enumerate() {
                let (lo, hi) = self.span(u, gi);
                if Some(gi) != me && any_in(&lists[usize::from(!write)], lo, hi) {
                    found.push(gi);
                }
            }
            if me.is_none() {
                continue;
            }
            for (j, &(key, flags)) in self.s.records.iter().enumerate() {
                let (src, dst, reading, writing, local) = match w.program.dma_op(key) {
                    Op::LocalDma { src, dst, .. } => (src, dst, true, true, true),
                    Op::RemoteDma { src, dst, .. } => (src, dst, flags == 0, flags & RECEIVED == 0, false),
                    _ => continue,
                };
                if writing && w.program.span(dst).contains(c) {
                    found.push(t + 2 * j + 1);
                }
                if write && reading && w.program.span(src).contains(c) {
                    found.push(t + 2 * j + 1);
                    if !local {
                        found.push(t + 2 * j);
                    }
                }
            }
        }
    }

    /// Computes the progress bounds of every tracked device if unit `u`'s events never
    /// occur (module docs).
    fn ensure_bounds(&mut self, u: Unit) {
        if self.s.have_bounds[u] {
            return;
        }
        let w = self.w;
        let program = w.program;
        let t = self.t();
        let r = self.s.records.len();
        let s = &mut *self.s;
        let (avail, used) = (&mut s.avail, &mut s.used);
        for (i, a) in avail.iter_mut().enumerate() {
            *a = self.state[t + i] as u64;
        }
        let index = |sem: SemSlot| w.sem_word(sem) - t;
        let pending = s
            .records
            .iter()
            .enumerate()
            .map(|(j, &(key, flags))| DmaIncrements::whole(program, key, flags, (t + 2 * j, t + 2 * j + 1), u));
        add_dma_increments(program, pending, avail, index);
        for (c, tok) in w.tokens.iter().enumerate() {
            if u != t + 2 * r + c {
                let left = tok.budget.saturating_sub(w.tokens_used(self.state, c as u32));
                avail[index(tok.sem)] += left as u64 * tok.inc as u64;
            }
        }
        let bounds = &mut s.bounds[u * t..(u + 1) * t];
        bounds.copy_from_slice(&self.state[..t]);
        let spd = program.sems_per_device;
        let slot = |sem: SemSlot| w.is_tracked(DeviceId((sem.0 as usize / spd) as u16)).then(|| index(sem));
        let skip = &program.dependencies.bound_skip;
        let device = |g: usize| {
            let d = w.tracked[g].index();
            (&program.devices[d], skip.get(d).map_or(&[][..], Vec::as_slice))
        };
        progress_bounds(device, bounds, u, avail, used, slot);
        s.have_bounds[u] = true;
    }
}
