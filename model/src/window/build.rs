//! Building a window: which devices it tracks, and the environment tokens that stand for
//! the increments of the devices it drops.

use std::fmt;

use crate::ir::SemKind;
use crate::mesh::DeviceId;
use crate::program::{Op, Program, SemSlot};
use crate::semantics::DmaLanding;

use super::{Token, Window};

/// Why the window method does not apply to a program: the program must then be checked
/// by exact exploration at that size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inapplicable {
    reason: String,
}

impl Inapplicable {
    /// A reason the window method does not apply.
    pub fn new(reason: impl Into<String>) -> Inapplicable {
        Inapplicable { reason: reason.into() }
    }

    /// What fails, in words: `the mesh has 2 axes, not a ring`.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for Inapplicable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for Inapplicable {}

/// The distance between two devices of an `n`-ring.
pub fn ring_distance(a: DeviceId, b: DeviceId, n: usize) -> usize {
    let d = (a.index() + n - b.index()) % n;
    d.min(n - d)
}

/// The conditions every window rests on, checked on the compiled program: a ring mesh
/// (one axis), no buffer shared between devices, one kernel (not a program of several),
/// and the default hardware assumptions.
pub fn check_conditions(program: &Program) -> Result<(), Inapplicable> {
    let axes = program.mesh.axes();
    if axes.len() != 1 {
        return Err(Inapplicable::new(format!(
            "the mesh ({}) has {} axes, not one ring axis",
            program.mesh,
            axes.len()
        )));
    }
    if let Some(b) = program.buffers.iter().find(|b| b.shared) {
        return Err(Inapplicable::new(format!("buffer `{}` is shared between devices", b.name)));
    }
    if program.has_several_kernels() {
        return Err(Inapplicable::new(format!(
            "it is a program of several kernels ({}), whose semaphores live from one kernel to the next; the window's argument is made for one kernel",
            program.kernels.join(", ")
        )));
    }
    if !program.semantics.is_default() {
        return Err(Inapplicable::new(format!(
            "the window's argument is made for the default hardware assumptions, not {}",
            program.semantics
        )));
    }
    Ok(())
}

/// Whether the executions of `program` under its hardware assumptions are executions
/// under the default ones, with the same rule checks and the same final states, so that
/// a proof under the defaults is a proof under its assumptions (Theorem S of the module
/// docs): `--dma-order pair-fifo` only ever disables landings; `--dma-landing cells`
/// changes nothing when every copy is one cell, and is not covered otherwise.
pub fn defaults_cover(program: &Program) -> Result<(), Inapplicable> {
    if program.semantics.dma_landing == DmaLanding::Cells {
        for (d, dp) in program.devices.iter().enumerate() {
            for (pc, op) in dp.ops.iter().enumerate() {
                if let Op::LocalDma { dst, .. } | Op::RemoteDma { dst, .. } = *op {
                    if dst.len > 1 {
                        return Err(Inapplicable::new(format!(
                            "under --dma-landing cells a copy of several cells lands in parts (`{}`), which the window's argument does not cover",
                            program.describe_op(DeviceId(d as u16), pc as u32)
                        )));
                    }
                }
            }
        }
    }
    Ok(())
}

/// The largest ring distance between a device and one it signals or copies to: the
/// kernel's communication radius (0 when it never talks to another device).
pub fn communication_radius(program: &Program) -> usize {
    let n = program.num_devices();
    let mut r = 0;
    for (d, dp) in program.devices.iter().enumerate() {
        for op in &dp.ops {
            if let Op::Signal { target, .. } | Op::RemoteDma { target, .. } = *op {
                r = r.max(ring_distance(DeviceId(d as u16), target, n));
            }
        }
    }
    r
}

/// Per device: the operations of other devices that increment one of its semaphores
/// (signals, and remote copies into it), as `(issuer, pc)`. Built once per program and
/// shared by the windows around every device.
#[derive(Clone, Debug)]
pub struct Incoming(Vec<Vec<(DeviceId, u32)>>);

impl Incoming {
    /// The index of `program`.
    pub fn of(program: &Program) -> Incoming {
        let mut into = vec![Vec::new(); program.num_devices()];
        for (d, dp) in program.devices.iter().enumerate() {
            let d = DeviceId(d as u16);
            for (pc, op) in dp.ops.iter().enumerate() {
                if let Op::Signal { target, .. } | Op::RemoteDma { target, .. } = *op {
                    if target != d {
                        into[target.index()].push((d, pc as u32));
                    }
                }
            }
        }
        Incoming(into)
    }
}

impl<'p> Window<'p> {
    /// The window of `program` around `center`: every device within ring distance
    /// `radius` of it is tracked; the others are dropped, and what they would add to the
    /// tracked devices' semaphores becomes environment tokens.
    ///
    /// Fails when the program is not on a ring, shares a buffer, runs under non-default
    /// assumptions, or when a device outside the window talks to the center or the
    /// center to one outside it (the radius is smaller than the kernel's communication
    /// radius).
    pub fn new(program: &'p Program, center: DeviceId, radius: usize) -> Result<Window<'p>, Inapplicable> {
        Window::with_incoming(program, &Incoming::of(program), center, radius)
    }

    /// [`Window::new`] with the program's [`Incoming`] index already built (windows
    /// around many devices of one program share it).
    pub fn with_incoming(
        program: &'p Program,
        incoming: &Incoming,
        center: DeviceId,
        radius: usize,
    ) -> Result<Window<'p>, Inapplicable> {
        check_conditions(program)?;
        let n = program.num_devices();
        if center.index() >= n {
            return Err(Inapplicable::new(format!("{center} is not a device of the {n}-ring")));
        }
        if incoming.0.len() != n {
            return Err(Inapplicable::new("the incoming index is not this program's"));
        }
        let tracked: Vec<DeviceId> =
            program.mesh.devices().filter(|&d| ring_distance(d, center, n) <= radius).collect();
        let mut position = vec![u32::MAX; n];
        for (i, d) in tracked.iter().enumerate() {
            position[d.index()] = i as u32;
        }
        let is_tracked = |d: DeviceId| position[d.index()] != u32::MAX;
        let outgoing = program.devices[center.index()].ops.iter().enumerate().filter_map(|(pc, op)| match *op {
            Op::Signal { target, .. } | Op::RemoteDma { target, .. } => Some((center, pc as u32, target)),
            _ => None,
        });
        let inbound = incoming.0[center.index()].iter().map(|&(u, pc)| (u, pc, center));
        for (d, pc, target) in outgoing.chain(inbound) {
            if !is_tracked(d) || !is_tracked(target) {
                return Err(Inapplicable::new(format!(
                    "`{}` talks across ring distance {}, more than the window radius {radius}",
                    program.describe_op(d, pc),
                    ring_distance(d, target, n)
                )));
            }
        }
        let tokens = tokens(program, incoming, &tracked, &is_tracked);
        let spd = program.sems_per_device;
        let mut tokens_of = vec![Vec::new(); tracked.len() * spd];
        for (i, t) in tokens.iter().enumerate() {
            let local = t.sem.0 as usize % spd;
            tokens_of[position[t.target.index()] as usize * spd + local].push(i as u32);
        }
        let indexes = super::reduction::Indexes::build(program, &tracked, &position, center);
        Ok(Window { program, center, radius, tracked, position, tokens, tokens_of, indexes })
    }
}

/// The environment tokens: every increment an untracked device's program makes to a
/// tracked device's semaphore (a signal, or the receipt of a remote copy), grouped by
/// (target semaphore, amount, invocation) with their number as the budget. Increments of
/// a barrier semaphore are not tied to an invocation (the barrier semaphore may be
/// signalled whatever its owner's lifecycle).
fn tokens(
    program: &Program,
    incoming: &Incoming,
    tracked: &[DeviceId],
    is_tracked: &dyn Fn(DeviceId) -> bool,
) -> Vec<Token> {
    let mut found: Vec<Token> = Vec::new();
    let mut add = |target: DeviceId, sem: SemSlot, inc: u32, invocation: Option<u32>, source: DeviceId| match found
        .iter_mut()
        .find(|t| t.sem == sem && t.inc == inc && t.invocation == invocation)
    {
        Some(t) => {
            t.budget += 1;
            if !t.sources.contains(&source) {
                t.sources.push(source);
            }
        }
        None => found.push(Token { target, sem, inc, invocation, budget: 1, sources: vec![source] }),
    };
    for &t in tracked {
        for &(u, pc) in &incoming.0[t.index()] {
            if is_tracked(u) {
                continue;
            }
            let dp = &program.devices[u.index()];
            let invocation = dp.info[pc as usize].invocation;
            match dp.ops[pc as usize] {
                Op::Signal { target, sem, inc } => {
                    let tag = (program.sem_kind(sem) != SemKind::Barrier).then_some(invocation);
                    add(target, sem, inc, tag, u);
                }
                Op::RemoteDma { target, recv_sem, bytes, .. } => add(target, recv_sem, bytes, Some(invocation), u),
                _ => unreachable!("the incoming index holds signals and remote copies"),
            }
        }
    }
    found.sort_by_key(|t| (t.target, t.sem, t.invocation, t.inc));
    for t in &mut found {
        t.sources.sort();
    }
    found
}
