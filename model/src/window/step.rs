//! The window's state and step function: the model's step semantics on the tracked
//! devices, without cell values, with environment tokens, and with the rules checked at
//! the center only.
//!
//! A window state is a flat `[u32]`: one pc per tracked device, the tracked devices'
//! semaphores, one counter per token class, then the in-flight DMAs of tracked issuers as
//! header words (`issuer << 20 | pc << 2 | flags`, the model's encoding, without payload),
//! sorted.

use std::fmt;

use crate::event::DmaKey;
use crate::ir::SemKind;
use crate::mesh::DeviceId;
use crate::program::{CellId, CellSpan, ComputeKind, Op, SemSlot};
use crate::state::{RECEIVED, SENT};
use crate::violation::Violation;

use super::Window;

/// One step of a window execution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WindowEvent {
    /// A tracked device runs its next operation.
    Step(DeviceId),
    /// A remote copy of a tracked device has been read.
    Sent(DmaKey),
    /// A remote copy into a tracked device has landed.
    Received(DmaKey),
    /// A local copy of a tracked device has completed.
    Done(DmaKey),
    /// The environment adds one token of this class to its semaphore.
    Token(u32),
}

const PC_BITS: u32 = 18;
const DEV_BITS: u32 = 12;
const PC_MASK: u32 = (1 << PC_BITS) - 1;

impl WindowEvent {
    /// Packs the event in a `u32`: 2 bits kind, 12 bits device, 18 bits pc; a token is a
    /// step of device 0 with `class + 1` in the pc bits.
    pub fn encode(self) -> u32 {
        let (tag, d, pc) = match self {
            WindowEvent::Step(d) => (0, d.0 as u32, 0),
            WindowEvent::Token(i) => (0, 0, i + 1),
            WindowEvent::Sent(k) => (1, k.issuer.0 as u32, k.pc),
            WindowEvent::Received(k) => (2, k.issuer.0 as u32, k.pc),
            WindowEvent::Done(k) => (3, k.issuer.0 as u32, k.pc),
        };
        (tag << (DEV_BITS + PC_BITS)) | (d << PC_BITS) | pc
    }

    /// Unpacks an event packed by [`WindowEvent::encode`].
    pub fn decode(word: u32) -> WindowEvent {
        let tag = word >> (DEV_BITS + PC_BITS);
        let d = DeviceId(((word >> PC_BITS) & ((1 << DEV_BITS) - 1)) as u16);
        let pc = word & PC_MASK;
        let key = DmaKey { issuer: d, pc };
        match tag {
            0 if pc != 0 => WindowEvent::Token(pc - 1),
            0 => WindowEvent::Step(d),
            1 => WindowEvent::Sent(key),
            2 => WindowEvent::Received(key),
            _ => WindowEvent::Done(key),
        }
    }
}

impl fmt::Display for WindowEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WindowEvent::Step(d) => write!(f, "{d} step"),
            WindowEvent::Sent(k) => write!(f, "dma {}@{} sent", k.issuer, k.pc),
            WindowEvent::Received(k) => write!(f, "dma {}@{} received", k.issuer, k.pc),
            WindowEvent::Done(k) => write!(f, "dma {}@{} done", k.issuer, k.pc),
            WindowEvent::Token(i) => write!(f, "token {i}"),
        }
    }
}

/// An in-flight DMA of a window state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Record {
    key: DmaKey,
    flags: u32,
    offset: usize,
}

fn header(key: DmaKey, flags: u32) -> u32 {
    ((key.issuer.0 as u32) << 20) | (key.pc << 2) | flags
}

impl Window<'_> {
    pub(super) fn sem_word(&self, slot: SemSlot) -> usize {
        let spd = self.program.sems_per_device;
        let d = slot.0 as usize / spd;
        self.tracked.len() + self.position[d] as usize * spd + slot.0 as usize % spd
    }

    fn token_offset(&self) -> usize {
        self.tracked.len() * (1 + self.program.sems_per_device)
    }

    fn dma_offset(&self) -> usize {
        self.token_offset() + self.tokens.len()
    }

    /// The state before any device has entered: pcs and semaphores 0, no token used.
    pub fn initial_state(&self) -> Vec<u32> {
        vec![0; self.dma_offset()]
    }

    /// The pc of a tracked device.
    pub fn pc(&self, state: &[u32], d: DeviceId) -> u32 {
        state[self.position[d.index()] as usize]
    }

    /// The value of a semaphore of a tracked device.
    pub fn sem_value(&self, state: &[u32], slot: SemSlot) -> u32 {
        state[self.sem_word(slot)]
    }

    /// How many tokens of class `i` the environment has added.
    pub fn tokens_used(&self, state: &[u32], i: u32) -> u32 {
        state[self.token_offset() + i as usize]
    }

    fn records<'s>(&'s self, state: &'s [u32]) -> impl Iterator<Item = Record> + 's {
        let start = self.dma_offset();
        state[start..].iter().enumerate().map(move |(i, &h)| Record {
            key: DmaKey { issuer: DeviceId((h >> 20) as u16), pc: (h >> 2) & 0x3FFFF },
            flags: h & 3,
            offset: start + i,
        })
    }

    /// The in-flight DMAs of a window state: key and `SENT`/`RECEIVED` flags.
    pub(crate) fn dma_records<'s>(&'s self, state: &'s [u32]) -> impl Iterator<Item = (DmaKey, u32)> + 's {
        self.records(state).map(|r| (r.key, r.flags))
    }

    pub(super) fn current_op(&self, state: &[u32], d: DeviceId) -> Option<Op> {
        self.program.devices[d.index()].ops.get(self.pc(state, d) as usize).copied()
    }

    /// Whether tracked device `e` has entered invocation `k` or gone past it.
    pub(super) fn has_entered(&self, state: &[u32], e: DeviceId, k: u32) -> bool {
        match self.program.lifecycle(e, self.pc(state, e)) {
            None => true,
            Some((inv, running)) => inv > k || (inv == k && running),
        }
    }

    fn device_enabled(&self, state: &[u32], d: DeviceId) -> bool {
        let pc = self.pc(state, d) as usize;
        let dp = &self.program.devices[d.index()];
        match dp.ops.get(pc) {
            None => false,
            Some(Op::Wait { sem, amount }) => self.sem_value(state, *sem) >= *amount,
            // Devices outside the window are taken to have entered: an over-approximation.
            Some(Op::EntryBarrier) => {
                let k = dp.info[pc].invocation;
                self.tracked.iter().all(|&e| self.has_entered(state, e, k))
            }
            Some(_) => true,
        }
    }

    /// Whether token class `i` may fire: budget left, and its target is blocked at a wait
    /// on that semaphore (in the token's invocation, for a non-barrier semaphore). Tokens
    /// are only ever needed there (see the module docs: lazy tokens).
    fn token_enabled(&self, state: &[u32], i: u32) -> bool {
        let t = &self.tokens[i as usize];
        if self.tokens_used(state, i) >= t.budget {
            return false;
        }
        let pc = self.pc(state, t.target);
        let dp = &self.program.devices[t.target.index()];
        match dp.ops.get(pc as usize) {
            Some(&Op::Wait { sem, amount }) => {
                sem == t.sem
                    && self.sem_value(state, sem) < amount
                    && t.invocation.is_none_or(|k| dp.info[pc as usize].invocation == k)
            }
            _ => false,
        }
    }

    /// Appends the enabled events of `state` to `out`: tracked devices in id order, then
    /// DMAs in `(issuer, pc)` order, then tokens.
    pub fn enabled(&self, state: &[u32], out: &mut Vec<WindowEvent>) {
        for &d in &self.tracked {
            if self.device_enabled(state, d) {
                out.push(WindowEvent::Step(d));
            }
            if let Some(Op::Wait { sem, .. }) = self.current_op(state, d) {
                let spd = self.program.sems_per_device;
                let classes = &self.tokens_of[self.position[d.index()] as usize * spd + sem.0 as usize % spd];
                out.extend(classes.iter().filter(|&&i| self.token_enabled(state, i)).map(|&i| WindowEvent::Token(i)));
            }
        }
        for rec in self.records(state) {
            match self.program.dma_op(rec.key) {
                Op::LocalDma { .. } => out.push(WindowEvent::Done(rec.key)),
                _ => {
                    if rec.flags & SENT == 0 {
                        out.push(WindowEvent::Sent(rec.key));
                    }
                    if rec.flags & RECEIVED == 0 {
                        out.push(WindowEvent::Received(rec.key));
                    }
                }
            }
        }
    }

    /// Whether one event is enabled in `state`.
    pub fn is_enabled(&self, state: &[u32], event: WindowEvent) -> bool {
        match event {
            WindowEvent::Step(d) => self.is_tracked(d) && self.device_enabled(state, d),
            WindowEvent::Token(i) => (i as usize) < self.tokens.len() && self.token_enabled(state, i),
            WindowEvent::Sent(k) | WindowEvent::Received(k) | WindowEvent::Done(k) => {
                let Some(rec) = self.records(state).find(|r| r.key == k) else { return false };
                let local = matches!(self.program.dma_op(k), Op::LocalDma { .. });
                match event {
                    WindowEvent::Done(_) => local,
                    WindowEvent::Sent(_) => !local && rec.flags & SENT == 0,
                    _ => !local && rec.flags & RECEIVED == 0,
                }
            }
        }
    }

    /// Applies `event` (enabled in `state`) and writes the next state to `next`. Returns
    /// the violation when the event breaks a rule at the center; rules elsewhere are not
    /// checked, and the next state is written either way.
    pub fn step(&self, state: &[u32], event: WindowEvent, next: &mut Vec<u32>) -> Option<Violation> {
        debug_assert!(self.is_enabled(state, event), "{event} is not enabled");
        next.clear();
        next.extend_from_slice(state);
        match event {
            WindowEvent::Step(d) => self.run_op(state, d, next),
            WindowEvent::Token(i) => {
                let t = &self.tokens[i as usize];
                next[self.sem_word(t.sem)] += t.inc;
                next[self.token_offset() + i as usize] += 1;
                None
            }
            WindowEvent::Sent(k) => {
                let Op::RemoteDma { send_sem, bytes, .. } = self.program.dma_op(k) else {
                    unreachable!("sent of a remote copy")
                };
                next[self.sem_word(send_sem)] += bytes;
                self.set_flag(next, k, SENT);
                None
            }
            WindowEvent::Received(k) | WindowEvent::Done(k) => {
                let (target, sem, bytes) = match self.program.dma_op(k) {
                    Op::LocalDma { sem, bytes, .. } => (k.issuer, sem, bytes),
                    Op::RemoteDma { target, recv_sem, bytes, .. } => (target, recv_sem, bytes),
                    _ => unreachable!("landing of a DMA"),
                };
                next[self.sem_word(sem)] += bytes;
                let local = matches!(event, WindowEvent::Done(_));
                self.set_flag(next, k, if local { SENT | RECEIVED } else { RECEIVED });
                if target == self.center {
                    let inv = self.program.invocation_of(k.issuer, k.pc);
                    if let Err(why) = self.inside_kernel(state, target, inv) {
                        return Some(self.program.landing_outside_kernel(k, target, &why));
                    }
                }
                None
            }
        }
    }

    fn set_flag(&self, next: &mut Vec<u32>, key: DmaKey, flag: u32) {
        let rec = self.records(next).find(|r| r.key == key).expect("event of an in-flight DMA");
        let flags = rec.flags | flag;
        if flags == SENT | RECEIVED {
            next.remove(rec.offset);
        } else {
            next[rec.offset] = header(key, flags);
        }
    }

    /// `Ok` if tracked device `target` is running invocation `k`, else why not (the
    /// model's wording).
    fn inside_kernel(&self, state: &[u32], target: DeviceId, k: u32) -> Result<(), String> {
        self.program.inside_kernels_at(self.pc(state, target), target, k, k)
    }

    fn run_op(&self, state: &[u32], d: DeviceId, next: &mut Vec<u32>) -> Option<Violation> {
        let program = self.program;
        let pc = self.pc(state, d);
        let dp = &program.devices[d.index()];
        let op = dp.ops[pc as usize];
        next[self.position[d.index()] as usize] = pc + 1;
        let center = d == self.center;
        match op {
            Op::Enter => {
                let spd = program.sems_per_device;
                let first = self.tracked.len() + self.position[d.index()] as usize * spd;
                for (i, (decl, _)) in program.sem_decls.iter().enumerate() {
                    if decl.kind != SemKind::Barrier {
                        next[first + i] = 0;
                    }
                }
                None
            }
            Op::EntryBarrier => None,
            Op::Exit if center => self.exit_checks(state, d, pc),
            Op::Exit => None,
            Op::Signal { target, sem, inc } => {
                if target == self.center && program.sem_kind(sem) != SemKind::Barrier {
                    let inv = dp.info[pc as usize].invocation;
                    if let Err(why) = self.inside_kernel(state, target, inv) {
                        return Some(program.signal_outside_kernel(d, pc, target, sem, &why));
                    }
                }
                if self.is_tracked(target) {
                    next[self.sem_word(sem)] += inc;
                }
                None
            }
            Op::Wait { sem, amount } => {
                next[self.sem_word(sem)] -= amount;
                None
            }
            Op::LocalDma { src, dst, .. } | Op::RemoteDma { src, dst, .. } => {
                let violation = self.race(state, program.span(src), program.span(dst), d, pc);
                let key = DmaKey { issuer: d, pc };
                // A copy into a device outside the window lands nowhere: only its *sent*
                // is modelled (its destination and receive semaphore are not tracked).
                let flags = match op {
                    Op::RemoteDma { target, .. } if !self.is_tracked(target) => RECEIVED,
                    _ => 0,
                };
                let h = header(key, 0);
                let at = self.records(next).find(|r| header(r.key, 0) > h).map_or(next.len(), |r| r.offset);
                next.insert(at, header(key, flags));
                violation
            }
            Op::Compute { kind, dst, src } => {
                let (dcells, scells) = (program.span(dst), program.span(src));
                if kind == ComputeKind::Add {
                    if let Some(v) = self.race(state, dcells, dcells, d, pc) {
                        return Some(v);
                    }
                }
                self.race(state, scells, dcells, d, pc)
            }
        }
    }

    /// Rule 4 at the center's exit: its own DMAs not yet sent (or not done), and its
    /// non-barrier semaphores not 0. (Outputs are not checked: values are dropped.)
    fn exit_checks(&self, state: &[u32], d: DeviceId, pc: u32) -> Option<Violation> {
        let program = self.program;
        let inv = program.invocation_of(d, pc);
        for rec in self.records(state).filter(|r| r.key.issuer == d) {
            let pending = match program.dma_op(rec.key) {
                Op::LocalDma { .. } => Some("not done"),
                _ if rec.flags & SENT == 0 => Some("not yet sent"),
                _ => None,
            };
            if let Some(p) = pending {
                return Some(program.dma_outstanding_at_exit(d, inv, rec.key, p));
            }
        }
        let spd = program.sems_per_device;
        for i in 0..spd {
            let slot = SemSlot((d.index() * spd + i) as u32);
            let v = self.sem_value(state, slot);
            if v != 0 && program.sem_kind(slot) != SemKind::Barrier {
                return Some(program.semaphore_leak(d, pc, slot, v));
            }
        }
        None
    }

    /// Rule 1 on the center's cells: the accesses of the operation at `pc` of `d` that
    /// fall on a cell of the center, against every in-flight DMA of the window (every DMA
    /// that can touch the center's cells is issued by a tracked device).
    fn race(&self, state: &[u32], reads: &[CellId], writes: &[CellId], d: DeviceId, pc: u32) -> Option<Violation> {
        let program = self.program;
        let mine = |c: &CellId| program.cells[c.0 as usize].owner == Some(self.center);
        if !reads.iter().chain(writes).any(mine) {
            return None;
        }
        let reads: Vec<CellId> = reads.iter().copied().filter(mine).collect();
        let writes: Vec<CellId> = writes.iter().copied().filter(mine).collect();
        for rec in self.records(state) {
            let (src, dst, reading, writing) = match program.dma_op(rec.key) {
                Op::LocalDma { src, dst, .. } => (src, dst, true, true),
                Op::RemoteDma { src, dst, .. } => (src, dst, rec.flags == 0, rec.flags & RECEIVED == 0),
                _ => continue,
            };
            let hit = |cells: &[CellId], span: CellSpan| cells.iter().copied().find(|c| program.span(span).contains(c));
            let conflict = if writing {
                hit(&writes, dst).map(|c| (c, "written")).or_else(|| hit(&reads, dst).map(|c| (c, "written")))
            } else {
                None
            }
            .or_else(|| if reading { hit(&writes, src).map(|c| (c, "read")) } else { None });
            if let Some((cell, what)) = conflict {
                let access = if writes.contains(&cell) { "writes" } else { "reads" };
                return Some(program.race_violation(cell, d, &program.describe_op(d, pc), access, what, rec.key));
            }
        }
        None
    }

    /// The event in the kernel's words: `d1 (2) wait capacity_sem 1`, `dma ... received`,
    /// or `environment: +1 on d3 capacity_sem (for d4's signals, invocation 0)`.
    pub fn describe(&self, state: &[u32], event: WindowEvent) -> String {
        let program = self.program;
        match event {
            WindowEvent::Step(d) => program.describe_op(d, self.pc(state, d)),
            WindowEvent::Sent(k) => format!("sent: {}", program.describe_op(k.issuer, k.pc)),
            WindowEvent::Received(k) => format!("received: {}", program.describe_op(k.issuer, k.pc)),
            WindowEvent::Done(k) => format!("done: {}", program.describe_op(k.issuer, k.pc)),
            WindowEvent::Token(i) => {
                let t = &self.tokens[i as usize];
                let sources: Vec<String> = t.sources.iter().map(|d| d.to_string()).collect();
                let inv = t.invocation.map_or(String::new(), |k| format!(", invocation {k}"));
                format!(
                    "environment: +{} on {} (token {} of {}, from {}{inv})",
                    t.inc,
                    program.sem_full_name(t.sem),
                    self.tokens_used(state, i) + 1,
                    t.budget,
                    sources.join(", ")
                )
            }
        }
    }
}
