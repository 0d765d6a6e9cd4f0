//! The step semantics: the events enabled in a state, and the state after one event,
//! with the rule checks of SPEC §5.

use crate::event::{DmaKey, Event};
use crate::ir::SemKind;
use crate::mesh::DeviceId;
use crate::program::{CellId, CellSpan, ComputeKind, Op, Program, SemSlot};
use crate::semantics::DmaOrder;
use crate::state::{DmaRecord, LANDED, RECEIVED, SENT};
use crate::value::{ValueId, ValueTable};
use crate::violation::{Rule, Violation};

/// What applying an event did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepOutcome {
    /// The next state was written.
    Next,
    /// The event breaks a rule; the next state is meaningless.
    Violation(Violation),
}

impl Program {
    /// Appends the enabled events of `state` to `out`, in a deterministic order: devices by
    /// id, then DMAs by `(issuer, pc)`, `sent` before the landing events, cells in index
    /// order.
    pub fn enabled(&self, state: &[u32], out: &mut Vec<Event>) {
        for d in self.mesh.devices() {
            if self.device_enabled(state, d) {
                out.push(Event::Step(d));
            }
        }
        self.dmas_enabled(state, out);
    }

    /// The events of in-flight DMAs enabled in `state` (every enabled event but the
    /// devices' steps), appended to `out` in the order [`Program::enabled`] lists them.
    pub fn dmas_enabled(&self, state: &[u32], out: &mut Vec<Event>) {
        for rec in self.dmas(state) {
            let local = matches!(self.dma_op(rec.key), Op::LocalDma { .. });
            if !local && rec.flags & SENT == 0 {
                out.push(Event::Sent(rec.key));
            }
            if !self.landing_enabled(state, &rec) {
                continue;
            }
            if self.lands_by_cell(&rec) {
                let cells = (0..rec.payload).filter(|&i| !rec.cell_landed(state, i));
                out.extend(cells.map(|i| Event::CellLanded(rec.key, i as u32)));
            } else if local {
                out.push(Event::Done(rec.key));
            } else {
                out.push(Event::Received(rec.key));
            }
        }
    }

    /// Whether one event is enabled in `state`.
    pub fn is_enabled(&self, state: &[u32], event: Event) -> bool {
        match event {
            Event::Step(d) => d.index() < self.devices.len() && self.device_enabled(state, d),
            Event::Sent(k) | Event::Received(k) | Event::Done(k) | Event::CellLanded(k, _) => {
                let Some(rec) = self.dmas(state).find(|r| r.key == k) else { return false };
                let local = matches!(self.dma_op(k), Op::LocalDma { .. });
                let whole = !self.lands_by_cell(&rec);
                match event {
                    Event::Sent(_) => !local && rec.flags & SENT == 0,
                    Event::Received(_) => !local && whole && self.landing_enabled(state, &rec),
                    Event::Done(_) => local && whole && self.landing_enabled(state, &rec),
                    Event::CellLanded(_, i) => {
                        !whole
                            && (i as usize) < rec.payload
                            && !rec.cell_landed(state, i as usize)
                            && self.landing_enabled(state, &rec)
                    }
                    Event::Step(_) => unreachable!("matched above"),
                }
            }
        }
    }

    /// Whether an in-flight DMA may land (a cell of) its copy now: it has cells left to write
    /// and, under `--dma-order pair-fifo`, no earlier DMA of its queue is still landing.
    pub(crate) fn landing_enabled(&self, state: &[u32], rec: &DmaRecord) -> bool {
        rec.landing_pending() && (self.semantics.dma_order == DmaOrder::Any || self.overtaken(state, rec.key).is_none())
    }

    /// The earliest DMA of `key`'s queue that was started before `key` and has not finished
    /// landing, if any: a landing of `key` now would overtake it. A queue is a pair (issuer,
    /// target) of remote copies, or one device's local copies; under `--dma-order
    /// pair-fifo` a queue lands in start order, so such a landing is not enabled.
    pub fn overtaken(&self, state: &[u32], key: DmaKey) -> Option<DmaKey> {
        let queue = self.dma_queue(key);
        self.dmas(state)
            .skip_while(|r| r.key.issuer < key.issuer)
            .take_while(|r| r.key.issuer == key.issuer && r.key.pc < key.pc)
            .find(|r| r.landing_pending() && self.dma_queue(r.key) == queue)
            .map(|r| r.key)
    }

    /// The queue a DMA lands through under `--dma-order pair-fifo`: its target for a remote
    /// copy, `None` for a local copy (the issuer's own queue).
    pub fn dma_queue(&self, key: DmaKey) -> Option<DeviceId> {
        match self.dma_op(key) {
            Op::RemoteDma { target, .. } => Some(target),
            _ => None,
        }
    }

    /// Whether device `d`'s next operation can run in `state` (its [`Event::Step`] is
    /// enabled).
    pub fn device_enabled(&self, state: &[u32], d: DeviceId) -> bool {
        let pc = self.pc(state, d) as usize;
        let dp = &self.devices[d.index()];
        match dp.ops.get(pc) {
            None => false,
            Some(Op::Wait { sem, amount }) => self.sem_value(state, *sem) >= *amount,
            Some(Op::EntryBarrier) => {
                let k = dp.info[pc].invocation;
                self.mesh.devices().all(|e| self.has_entered(state, e, k))
            }
            Some(_) => true,
        }
    }

    /// Whether device `e` has entered invocation `k` (or gone past it).
    pub(crate) fn has_entered(&self, state: &[u32], e: DeviceId, k: u32) -> bool {
        match self.lifecycle(e, self.pc(state, e)) {
            None => true,
            Some((inv, running)) => inv > k || (inv == k && running),
        }
    }

    /// Whether every device has finished and no DMA is in flight.
    pub fn is_final(&self, state: &[u32]) -> bool {
        state.len() == self.dma_offset() && self.mesh.devices().all(|d| self.finished(state, d))
    }

    /// Applies `event` to `state`, writing the next state to `next`.
    ///
    /// `event` must be enabled in `state` (it is one that [`Program::enabled`] listed, or
    /// [`Program::is_enabled`] accepts); replaying untrusted schedules must check first.
    pub fn step(&self, state: &[u32], event: Event, values: &mut ValueTable, next: &mut Vec<u32>) -> StepOutcome {
        next.clear();
        next.extend_from_slice(state);
        self.advance(next, event, values)
    }

    /// Applies `event` to `state` in place: the same semantics as [`Program::step`],
    /// without copying the state, for runs that never go back to an earlier state (one
    /// run of a big ring, a replay). After a violation `state` is meaningless.
    ///
    /// Every rule check reads the state before the event changes what it reads.
    pub fn advance(&self, state: &mut Vec<u32>, event: Event, values: &mut ValueTable) -> StepOutcome {
        debug_assert!(self.is_enabled(state, event), "{event} is not enabled");
        let result = match event {
            Event::Step(d) => self.run_op(state, d, values),
            Event::Sent(k) => self.dma_sent(k, state),
            Event::Received(k) | Event::Done(k) => self.dma_landed(k, state),
            Event::CellLanded(k, i) => self.cell_landed(k, i as usize, state),
        };
        match result {
            Ok(()) => StepOutcome::Next,
            Err(v) => StepOutcome::Violation(v),
        }
    }

    fn run_op(&self, state: &mut Vec<u32>, d: DeviceId, values: &mut ValueTable) -> Result<(), Violation> {
        let pc = self.pc(state, d);
        let dp = &self.devices[d.index()];
        let op = dp.ops[pc as usize];
        let inv = dp.info[pc as usize].invocation;
        match op {
            // The first kernel of a run starts the program afresh; a later kernel of a
            // program of several kernels finds what the earlier ones left.
            Op::Enter if self.starts_run(inv) => {
                let off = self.cell_offset();
                for &(cell, v) in &dp.reset {
                    state[off + cell.0 as usize] = v.0;
                }
                let first = self.sem_offset() + d.index() * self.sems_per_device;
                for (i, (decl, _)) in self.sem_decls.iter().enumerate() {
                    if decl.kind != SemKind::Barrier {
                        state[first + i] = 0;
                    }
                }
            }
            Op::Enter => {}
            Op::EntryBarrier => {}
            Op::Exit => {
                // The exit checks look at other devices' pcs and at whether every
                // device, this one included, has finished.
                state[d.index()] = pc + 1;
                self.exit_checks(state, d, pc, values)?;
            }
            Op::Signal { target, sem, inc } => {
                if self.sem_kind(sem) != SemKind::Barrier {
                    self.inside_kernels_at(self.pc(state, target), target, inv, self.alive_until(sem, inv))
                        .map_err(|why| self.signal_outside_kernel(d, pc, target, sem, &why))?;
                }
                state[self.sem_offset() + sem.0 as usize] += inc;
            }
            Op::Wait { sem, amount } => state[self.sem_offset() + sem.0 as usize] -= amount,
            Op::LocalDma { src, dst, .. } | Op::RemoteDma { src, dst, .. } => {
                let key = DmaKey { issuer: d, pc };
                let fifo = (self.semantics.dma_order == DmaOrder::PairFifo).then_some(key);
                self.race(state, self.span(src), self.span(dst), d, pc, fifo)?;
                let header = DmaRecord::header(key, 0);
                let at =
                    self.dmas(state).find(|r| DmaRecord::header(r.key, 0) > header).map_or(state.len(), |r| r.offset);
                // The record (header, then the source's values) goes among the in-flight
                // DMAs, after every cell: inserting it moves no cell.
                let src = self.span(src);
                state.splice(at..at, std::iter::repeat_n(0, 1 + src.len()));
                state[at] = header;
                let off = self.cell_offset();
                for (i, c) in src.iter().enumerate() {
                    state[at + 1 + i] = state[off + c.0 as usize];
                }
            }
            Op::Compute { kind, dst, src } => {
                let (dcells, scells) = (self.span(dst), self.span(src));
                if kind == ComputeKind::Add {
                    self.race(state, dcells, dcells, d, pc, None)?;
                }
                self.race(state, scells, dcells, d, pc, None)?;
                let off = self.cell_offset();
                // Every value from the cells as they were (source and destination may
                // overlap), computed before any is written.
                let formula_src: Vec<ValueId> = match kind {
                    ComputeKind::Formula(_) => scells.iter().map(|s| ValueId(state[off + s.0 as usize])).collect(),
                    _ => Vec::new(),
                };
                let mut out = Vec::with_capacity(dcells.len());
                for (i, c) in dcells.iter().enumerate() {
                    let slot = off + c.0 as usize;
                    let s = scells.get(i).map(|s| ValueId(state[off + s.0 as usize]));
                    out.push(match (kind, s) {
                        (ComputeKind::Zero, _) => ValueId::ZERO,
                        (ComputeKind::Copy, Some(s)) => s,
                        (ComputeKind::Add, Some(s)) => values.add(ValueId(state[slot]), s),
                        (ComputeKind::Apply(f), Some(s)) => values.apply(f, s),
                        (ComputeKind::Formula(k), _) => self.formulas[k as usize].eval(i, &formula_src, values),
                        (_, None) => ValueId::UNDEF,
                    });
                }
                for (c, v) in dcells.iter().zip(out) {
                    state[off + c.0 as usize] = v.0;
                }
            }
        }
        state[d.index()] = pc + 1;
        Ok(())
    }

    /// `Ok` if the DMA `key`, started in invocation `k`, may land in `target` now: the
    /// target has entered that invocation and not yet left the last one in which the
    /// semaphore the landing increments is alive (the same invocation, unless a kernel of a
    /// program hands the semaphore on); else why not.
    pub fn landing_inside(&self, state: &[u32], key: DmaKey, target: DeviceId) -> Result<(), String> {
        let k = self.invocation_of(key.issuer, key.pc);
        let sem = match self.dma_op(key) {
            Op::LocalDma { sem, .. } => sem,
            Op::RemoteDma { recv_sem, .. } => recv_sem,
            _ => unreachable!("landing of a DMA"),
        };
        self.inside_kernels_at(self.pc(state, target), target, k, self.alive_until(sem, k))
    }

    /// Whether the exit rules of invocation `k` look at the DMA `key` still in flight: the
    /// semaphore its issuer waits on (a local copy's, a remote copy's send semaphore) is
    /// alive in no later kernel of the run.
    pub fn dma_checked_at_exit(&self, key: DmaKey, k: u32) -> bool {
        let started = self.invocation_of(key.issuer, key.pc);
        let Some(sem) = self.issuer_sem(key) else { return true };
        self.alive_until(sem, started) <= k
    }

    /// The checks of `d`'s exit at `pc`, on the state with `d` already past it.
    fn exit_checks(&self, state: &[u32], d: DeviceId, pc: u32, values: &ValueTable) -> Result<(), Violation> {
        let dp = &self.devices[d.index()];
        let notation = self.spec.notation;
        let mut wrong = Vec::new();
        let inv = dp.info[pc as usize].invocation;
        // Outputs are the program's: checked when its last kernel exits.
        let ends = self.ends_run(inv);
        if ends {
            for &(cell, want) in &dp.expected {
                let got = self.cell_value(state, cell);
                if got != want {
                    wrong.push((cell, want, got));
                }
            }
        }
        let others_done = || {
            self.mesh.devices().filter(|&e| e != d).all(|e| {
                let epc = self.pc(state, e);
                self.lifecycle(e, epc).is_none_or(|(i, _)| i > inv)
            })
        };
        if ends && others_done() {
            for &(cell, want) in &self.shared_expected {
                let got = self.cell_value(state, cell);
                if got != want {
                    wrong.push((cell, want, got));
                }
            }
        }
        if let Some(&(cell, want, got)) = wrong.first() {
            let (mut shown_got, shown_want) = (values.display(got, notation), values.display(want, notation));
            if got == ValueId::UNDEF {
                shown_got.push_str(" (never written)");
            }
            if shown_got.ends_with('…') || shown_want.ends_with('…') {
                // Too long to compare by eye: say where they differ.
                let (g, w) = values.difference(got, want);
                shown_got.push_str(&format!(
                    " (differing in {} where the specification has {})",
                    values.display(g, notation),
                    values.display(w, notation)
                ));
            }
            return Err(self.wrong_result(d, inv, cell, &shown_got, &shown_want, wrong.len()));
        }
        for rec in self.dmas(state).filter(|r| r.key.issuer == d && self.dma_checked_at_exit(r.key, inv)) {
            let pending = match self.dma_op(rec.key) {
                Op::LocalDma { .. } => Some("not done"),
                _ if rec.flags & SENT == 0 => Some("not yet sent"),
                _ => None,
            };
            if let Some(p) = pending {
                return Err(self.dma_outstanding_at_exit(d, inv, rec.key, p));
            }
        }
        let first = d.index() * self.sems_per_device;
        for i in 0..self.sems_per_device {
            let slot = SemSlot((first + i) as u32);
            let v = self.sem_value(state, slot);
            if v != 0 && self.sem_kind(slot) != SemKind::Barrier && self.checked_at_exit(slot, inv) {
                return Err(self.semaphore_leak(d, pc, slot, v));
            }
        }
        if self.mesh.devices().all(|e| self.finished(state, e)) {
            for slot in (0..self.num_sems()).map(|s| SemSlot(s as u32)) {
                let v = self.sem_value(state, slot);
                if v != 0 && self.sem_kind(slot) == SemKind::Barrier {
                    return Err(self.barrier_leak(slot, v));
                }
            }
        }
        Ok(())
    }

    /// Checks the accesses of the operation at `pc` of `d` against every in-flight DMA.
    ///
    /// `fifo` is the DMA being started, under `--dma-order pair-fifo`: an in-flight DMA of its
    /// queue lands before it writes anything, and has finished reading its source by then, so
    /// the new DMA's writes do not conflict with it (its source read still does).
    fn race(
        &self,
        state: &[u32],
        reads: &[CellId],
        writes: &[CellId],
        d: DeviceId,
        pc: u32,
        fifo: Option<DmaKey>,
    ) -> Result<(), Violation> {
        for rec in self.dmas(state) {
            let ordered =
                fifo.is_some_and(|k| rec.key.issuer == k.issuer && self.dma_queue(rec.key) == self.dma_queue(k));
            let writes = if ordered { &[][..] } else { writes };
            let (src, dst, reading, writing) = match self.dma_op(rec.key) {
                Op::LocalDma { src, dst, .. } => (src, dst, true, true),
                Op::RemoteDma { src, dst, .. } => (src, dst, rec.flags == 0, rec.flags & RECEIVED == 0),
                _ => continue,
            };
            // Under `--dma-landing cells` a cell is read and written until it lands.
            let by_cell = self.lands_by_cell(&rec);
            let hit = |cells: &[CellId], span: CellSpan| {
                cells.iter().copied().find(|c| {
                    self.span(span).iter().position(|x| x == c).is_some_and(|i| !by_cell || !rec.cell_landed(state, i))
                })
            };
            let conflict = if writing {
                hit(writes, dst).map(|c| (c, "written")).or_else(|| hit(reads, dst).map(|c| (c, "written")))
            } else {
                None
            }
            .or_else(|| if reading { hit(writes, src).map(|c| (c, "read")) } else { None });
            if let Some((cell, what)) = conflict {
                let access = if writes.contains(&cell) { "writes" } else { "reads" };
                return Err(self.race_violation(cell, d, &self.describe_op(d, pc), access, what, rec.key));
            }
        }
        Ok(())
    }

    fn find_dma(&self, state: &[u32], key: DmaKey) -> DmaRecord {
        self.dmas(state).find(|r| r.key == key).expect("event of an in-flight DMA")
    }

    fn remove_if_complete(&self, next: &mut Vec<u32>, rec: DmaRecord, flags: u32) {
        if flags == SENT | RECEIVED {
            next.drain(rec.offset..rec.offset + 1 + rec.payload);
        } else {
            next[rec.offset] = DmaRecord::header(rec.key, flags);
        }
    }

    fn dma_sent(&self, key: DmaKey, next: &mut Vec<u32>) -> Result<(), Violation> {
        let rec = self.find_dma(next, key);
        let Op::RemoteDma { send_sem, bytes, .. } = self.dma_op(key) else { unreachable!("sent of a remote copy") };
        next[self.sem_offset() + send_sem.0 as usize] += bytes;
        self.remove_if_complete(next, rec, rec.flags | SENT);
        Ok(())
    }

    fn dma_landed(&self, key: DmaKey, next: &mut Vec<u32>) -> Result<(), Violation> {
        let rec = self.find_dma(next, key);
        let (dst, sem, bytes, target, flags) = match self.dma_op(key) {
            Op::LocalDma { dst, sem, bytes, .. } => (dst, sem, bytes, key.issuer, SENT | RECEIVED),
            Op::RemoteDma { dst, recv_sem, bytes, target, .. } => (dst, recv_sem, bytes, target, rec.flags | RECEIVED),
            _ => unreachable!("landing of a DMA"),
        };
        self.landing_inside(next, key, target).map_err(|why| self.landing_outside_kernel(key, target, &why))?;
        let off = self.cell_offset();
        for (i, c) in self.span(dst).iter().enumerate() {
            next[off + c.0 as usize] = next[rec.offset + 1 + i];
        }
        next[self.sem_offset() + sem.0 as usize] += bytes;
        self.remove_if_complete(next, rec, flags);
        Ok(())
    }

    /// Cell `i` of a copy that lands cell by cell: writes that cell, adds its share of the
    /// bytes, and completes the landing once no cell is left.
    fn cell_landed(&self, key: DmaKey, i: usize, next: &mut Vec<u32>) -> Result<(), Violation> {
        let rec = self.find_dma(next, key);
        let (dst, sem, bytes, target, local) = match self.dma_op(key) {
            Op::LocalDma { dst, sem, bytes, .. } => (dst, sem, bytes, key.issuer, true),
            Op::RemoteDma { dst, recv_sem, bytes, target, .. } => (dst, recv_sem, bytes, target, false),
            _ => unreachable!("landing of a DMA"),
        };
        self.landing_inside(next, key, target).map_err(|why| self.landing_outside_kernel(key, target, &why))?;
        let word = rec.offset + 1 + i;
        let cell = self.span(dst)[i];
        next[self.cell_offset() + cell.0 as usize] = next[word];
        next[word] = LANDED;
        next[self.sem_offset() + sem.0 as usize] += rec.cell_share(bytes);
        if (0..rec.payload).all(|j| rec.cell_landed(next, j)) {
            let flags = if local { SENT | RECEIVED } else { rec.flags | RECEIVED };
            self.remove_if_complete(next, rec, flags);
        }
        Ok(())
    }

    /// The deadlock report for a state with no enabled event: who waits on what, and who
    /// could still signal it.
    pub fn deadlock(&self, state: &[u32]) -> Violation {
        let mut lines = Vec::new();
        let mut devices = Vec::new();
        for d in self.mesh.devices() {
            let pc = self.pc(state, d);
            let dp = &self.devices[d.index()];
            let Some(op) = dp.ops.get(pc as usize) else { continue };
            devices.push(d);
            let who = self.describe_op(d, pc);
            match *op {
                Op::Wait { sem, amount } => {
                    let have = self.sem_value(state, sem);
                    let signallers = self.remaining_signallers(state, sem);
                    let tail = if signallers.is_empty() {
                        "no remaining operation of any device increments it".to_string()
                    } else {
                        format!("it could still be incremented by {}, which cannot proceed", signallers.join(", "))
                    };
                    lines.push(format!(
                        "`{who}` waits for {} >= {amount} (it is {have}); {tail}",
                        self.sem_full_name(sem)
                    ));
                }
                Op::EntryBarrier => {
                    let k = dp.info[pc as usize].invocation;
                    let missing: Vec<String> = self
                        .mesh
                        .devices()
                        .filter(|&e| !self.has_entered(state, e, k))
                        .map(|e| e.to_string())
                        .collect();
                    lines.push(format!("`{who}` waits for {} to enter", missing.join(", ")));
                }
                _ => lines.push(format!("`{who}` is blocked")),
            }
        }
        Violation::new(Rule::Deadlock, devices, format!("deadlock: {}", lines.join("; ")))
    }

    /// Operations not yet run that would increment `sem`, as `d2 (3) signal ...` strings.
    fn remaining_signallers(&self, state: &[u32], sem: SemSlot) -> Vec<String> {
        let mut out = Vec::new();
        for e in self.mesh.devices() {
            let dp = &self.devices[e.index()];
            for pc in self.pc(state, e)..dp.ops.len() as u32 {
                let hits = match dp.ops[pc as usize] {
                    Op::Signal { sem: s, .. } => s == sem,
                    Op::RemoteDma { send_sem, recv_sem, .. } => send_sem == sem || recv_sem == sem,
                    Op::LocalDma { sem: s, .. } => s == sem,
                    _ => false,
                };
                if hits {
                    out.push(format!("`{}`", self.describe_op(e, pc)));
                    break;
                }
            }
        }
        out
    }
}
