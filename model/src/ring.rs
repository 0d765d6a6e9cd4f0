//! The ring structure of a compiled program, read off its per-device programs: is the
//! kernel rotation-symmetric, and how far does a device communicate?
//!
//! Nothing here is assumed from the kernel's intent. A ring kernel is *rotation-symmetric*
//! when rotating every device by one position (`d -> d+1 mod N` on the mesh's one axis)
//! maps the whole compiled program onto itself: device `d+1`'s program is device `d`'s
//! program, operation for operation at the same pc, with every device, cell, semaphore
//! and input atom renamed by one consistent bijection ([`Rotation`]). [`Ring::of`] finds
//! that bijection by unifying the operations of every device with those of its right
//! neighbour, then checks that it also maps the initial cell values, the values each
//! device resets at entry and every expected output. A kernel with `pl.when(my_id == 0)`,
//! a specification that checks one device only, or a mesh of several axes is not
//! symmetric, and [`Ring::rotation`] says why ([`Asymmetry`]).
//!
//! When the rotation exists it is an automorphism of the state graph: the step function
//! only compares device ids, cells and semaphores for equality, and values are multisets
//! of atoms, so renaming all of them consistently maps every execution, and every rule it
//! breaks, to an execution of the rotated devices that breaks the same rule. This is what
//! the explorer's symmetry reduction rests on.
//!
//! The *communication radius* is the largest ring distance between a device and a device
//! it signals or writes by remote copy; kernels that share memory between devices (shared
//! HBM buffers) say so in [`Ring::shares_memory`].

use std::fmt;

use rustc_hash::FxHashMap;

use crate::event::{DmaKey, Event};
use crate::mesh::DeviceId;
use crate::program::{CellId, CellSpan, Op, Program, SemSlot};
use crate::value::{Atom, Term, Value, ValueId, ValueTable};

/// The ring structure of a program on a one-axis mesh.
#[derive(Clone, Debug)]
pub struct Ring {
    size: usize,
    radius: usize,
    shares_memory: bool,
    rotation: Result<Rotation, Asymmetry>,
}

/// Why a program is not rotation-symmetric: the first place the rotation fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Asymmetry {
    /// What does not match, in words (names the devices and operations).
    pub reason: String,
}

impl fmt::Display for Asymmetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// Why a program has no ring structure at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotARing {
    /// In words.
    pub reason: String,
}

impl fmt::Display for NotARing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// An automorphism of a program that rotates the ring by `steps` positions: where every
/// device, cell, semaphore and input atom goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rotation {
    steps: usize,
    devices: Vec<DeviceId>,
    cells: Vec<CellId>,
    sems: Vec<SemSlot>,
    /// Sorted by the source atom.
    atoms: Vec<(Atom, Atom)>,
}

impl Ring {
    /// The ring structure of `program`, or why it has none (a mesh of several axes).
    pub fn of(program: &Program) -> Result<Ring, NotARing> {
        let axes = program.mesh.axes();
        if axes.len() != 1 {
            return Err(NotARing {
                reason: format!("the mesh ({}) has {} axes; rings are one-axis meshes", program.mesh, axes.len()),
            });
        }
        let size = program.num_devices();
        let (radius, shares_memory) = communication(program);
        Ok(Ring { size, radius, shares_memory, rotation: detect(program) })
    }

    /// The number of devices on the ring.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The largest ring distance between a device and a device it signals or writes by
    /// remote copy (0 when devices never communicate that way).
    pub fn radius(&self) -> usize {
        self.radius
    }

    /// Whether some operation touches a shared buffer (memory of no single device), a
    /// channel between devices that [`Ring::radius`] does not measure.
    pub fn shares_memory(&self) -> bool {
        self.shares_memory
    }

    /// The rotation by one position, if the program is rotation-symmetric.
    pub fn rotation(&self) -> Result<&Rotation, &Asymmetry> {
        self.rotation.as_ref()
    }
}

impl Rotation {
    /// The identity of a program (rotation by 0).
    pub fn identity(program: &Program) -> Rotation {
        let mut atoms: Vec<(Atom, Atom)> = input_atoms(program).into_iter().map(|a| (a, a)).collect();
        atoms.sort();
        Rotation {
            steps: 0,
            devices: program.mesh.devices().collect(),
            cells: (0..program.cells.len() as u32).map(CellId).collect(),
            sems: (0..program.num_sems() as u32).map(SemSlot).collect(),
            atoms,
        }
    }

    /// By how many positions it rotates the ring (device `d` goes to `d + steps mod N`).
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// Whether it is the identity.
    pub fn is_identity(&self) -> bool {
        self.steps == 0
    }

    fn is_identity_map(&self) -> bool {
        self.devices.iter().enumerate().all(|(i, d)| d.index() == i)
            && self.cells.iter().enumerate().all(|(i, c)| c.0 as usize == i)
            && self.sems.iter().enumerate().all(|(i, s)| s.0 as usize == i)
            && self.atoms.iter().all(|(a, b)| a == b)
    }

    /// Where a device goes.
    pub fn device(&self, d: DeviceId) -> DeviceId {
        self.devices[d.index()]
    }

    /// Where a cell goes.
    pub fn cell(&self, c: CellId) -> CellId {
        self.cells[c.0 as usize]
    }

    /// Where a semaphore goes.
    pub fn sem(&self, s: SemSlot) -> SemSlot {
        self.sems[s.0 as usize]
    }

    /// Where an input atom goes (`None` for an atom that no input cell holds).
    pub fn atom(&self, a: Atom) -> Option<Atom> {
        self.atoms.binary_search_by_key(&a, |&(from, _)| from).ok().map(|i| self.atoms[i].1)
    }

    /// Where a DMA goes: the rotated issuer's DMA started at the same pc.
    pub fn dma(&self, k: DmaKey) -> DmaKey {
        DmaKey { issuer: self.device(k.issuer), pc: k.pc }
    }

    /// Where an event goes.
    pub fn event(&self, e: Event) -> Event {
        match e {
            Event::Step(d) => Event::Step(self.device(d)),
            Event::Sent(k) => Event::Sent(self.dma(k)),
            Event::Received(k) => Event::Received(self.dma(k)),
            Event::Done(k) => Event::Done(self.dma(k)),
            // The rotated copy's cells are the rotations of this copy's, in the same order.
            Event::CellLanded(k, i) => Event::CellLanded(self.dma(k), i),
        }
    }

    /// `self` after `first`: the rotation by `first.steps() + self.steps()`.
    pub fn after(&self, first: &Rotation) -> Rotation {
        let n = self.devices.len().max(1);
        Rotation {
            steps: (self.steps + first.steps) % n,
            devices: first.devices.iter().map(|&d| self.device(d)).collect(),
            cells: first.cells.iter().map(|&c| self.cell(c)).collect(),
            sems: first.sems.iter().map(|&s| self.sem(s)).collect(),
            atoms: first.atoms.iter().map(|&(a, b)| (a, self.atom(b).expect("atoms map onto input atoms"))).collect(),
        }
    }

    /// The rotation by `k * self.steps()`: `self` applied `k` times.
    pub fn pow(&self, program: &Program, k: usize) -> Rotation {
        let mut r = Rotation::identity(program);
        for _ in 0..k {
            r = self.after(&r);
        }
        r
    }

    /// The rotation undoing this one.
    pub fn inverse(&self) -> Rotation {
        let n = self.devices.len().max(1);
        let invert = |v: &[u32]| {
            let mut out = vec![0u32; v.len()];
            for (i, &j) in v.iter().enumerate() {
                out[j as usize] = i as u32;
            }
            out
        };
        let devices = invert(&self.devices.iter().map(|d| d.0 as u32).collect::<Vec<_>>());
        let cells = invert(&self.cells.iter().map(|c| c.0).collect::<Vec<_>>());
        let sems = invert(&self.sems.iter().map(|s| s.0).collect::<Vec<_>>());
        let mut atoms: Vec<(Atom, Atom)> = self.atoms.iter().map(|&(a, b)| (b, a)).collect();
        atoms.sort();
        Rotation {
            steps: (n - self.steps % n) % n,
            devices: devices.into_iter().map(|d| DeviceId(d as u16)).collect(),
            cells: cells.into_iter().map(CellId).collect(),
            sems: sems.into_iter().map(SemSlot).collect(),
            atoms,
        }
    }
}

/// Every atom some cell holds initially (entries reset cells to these values).
fn input_atoms(program: &Program) -> Vec<Atom> {
    let mut atoms = Vec::new();
    for &v in &program.initial_cells {
        if let Some(a) = single_atom(&program.values, v) {
            atoms.push(a);
        }
    }
    atoms.sort();
    atoms.dedup();
    atoms
}

fn single_atom(values: &ValueTable, v: ValueId) -> Option<Atom> {
    match values.get(v) {
        Value::Sum(terms) => match terms.as_slice() {
            [(Term::Atom(a), 1)] => Some(*a),
            _ => None,
        },
        Value::Undef => None,
    }
}

/// The communication radius and whether shared buffers are touched.
fn communication(program: &Program) -> (usize, bool) {
    let n = program.num_devices();
    let mut radius = 0;
    let mut shared = false;
    let distance = |a: DeviceId, b: DeviceId| {
        let d = (b.index() + n - a.index()) % n;
        d.min(n - d)
    };
    for (d, dp) in program.devices.iter().enumerate() {
        let me = DeviceId(d as u16);
        for op in &dp.ops {
            let (target, spans): (Option<DeviceId>, [Option<CellSpan>; 2]) = match *op {
                Op::Signal { target, .. } => (Some(target), [None, None]),
                Op::RemoteDma { target, src, dst, .. } => (Some(target), [Some(src), Some(dst)]),
                Op::LocalDma { src, dst, .. } | Op::Compute { src, dst, .. } => (None, [Some(src), Some(dst)]),
                _ => (None, [None, None]),
            };
            if let Some(t) = target {
                radius = radius.max(distance(me, t));
            }
            for span in spans.into_iter().flatten() {
                shared |= program.span(span).iter().any(|c| program.cells[c.0 as usize].owner.is_none());
            }
        }
    }
    (radius, shared)
}

const UNSET: u32 = u32::MAX;

/// A bijection under construction: `fwd[a] = b`, `inv[b] = a`.
struct Bijection {
    fwd: Vec<u32>,
    inv: Vec<u32>,
    /// The last pair that contradicted what was known.
    conflict: Option<(u32, u32)>,
}

impl Bijection {
    fn new(n: usize) -> Bijection {
        Bijection { fwd: vec![UNSET; n], inv: vec![UNSET; n], conflict: None }
    }

    /// Records `a -> b`; false (and the pair kept as [`Bijection::conflict`]) if it
    /// contradicts what is known.
    fn unify(&mut self, a: u32, b: u32) -> bool {
        let (f, i) = (self.fwd[a as usize], self.inv[b as usize]);
        if f == UNSET && i == UNSET {
            self.fwd[a as usize] = b;
            self.inv[b as usize] = a;
            true
        } else if f == b && i == a {
            true
        } else {
            self.conflict = Some((a, b));
            false
        }
    }

    /// Why the last conflicting pair contradicts the earlier ones, with `name` naming
    /// elements.
    fn explain(&self, name: impl Fn(u32) -> String) -> Option<String> {
        let (a, b) = self.conflict?;
        let (f, i) = (self.fwd[a as usize], self.inv[b as usize]);
        let earlier = if f != UNSET && f != b {
            format!("{} already goes to {}", name(a), name(f))
        } else {
            format!("{} already goes there", name(i))
        };
        Some(format!("it would send {} to {}, but by the operations before it {earlier}", name(a), name(b)))
    }
}

/// Finds the rotation by one position, or the first reason there is none.
fn detect(p: &Program) -> Result<Rotation, Asymmetry> {
    let n = p.num_devices();
    let fail = |reason: String| Err(Asymmetry { reason });
    if n == 1 {
        return Ok(Rotation::identity(p));
    }
    let next = |d: DeviceId| DeviceId(((d.index() + 1) % n) as u16);
    let mut cells = Bijection::new(p.cells.len());
    let mut sems = Bijection::new(p.num_sems());
    for d in p.mesh.devices() {
        let e = next(d);
        let (a, b) = (&p.devices[d.index()], &p.devices[e.index()]);
        if a.ops.len() != b.ops.len() {
            return fail(format!("{d} runs {} operations and {e} runs {}", a.ops.len(), b.ops.len()));
        }
        if a.enter_pc != b.enter_pc || a.exit_pc != b.exit_pc {
            return fail(format!("{d} and {e} enter or exit the kernel at different points of their programs"));
        }
        for pc in 0..a.ops.len() as u32 {
            let ok = a.info[pc as usize].invocation == b.info[pc as usize].invocation
                && unify_ops(p, a.ops[pc as usize], b.ops[pc as usize], next, &mut cells, &mut sems);
            if !ok {
                let why = cells
                    .explain(|c| p.cell_full_name(CellId(c)))
                    .or_else(|| sems.explain(|s| p.sem_full_name(SemSlot(s))))
                    .map_or_else(String::new, |w| format!(": {w}"));
                return fail(format!(
                    "`{}` is not the rotation of `{}`{why}",
                    p.describe_op(e, pc),
                    p.describe_op(d, pc)
                ));
            }
        }
    }
    // A cell no operation names goes to the cell of the next device that the named cells
    // of its buffer suggest (the same index shifted as theirs are), or the same index.
    for c in 0..p.cells.len() {
        if cells.fwd[c] == UNSET {
            let image = unused_cell_image(p, &cells, CellId(c as u32), next);
            if !image.is_some_and(|i| cells.unify(c as u32, i.0)) {
                return fail(format!(
                    "no cell of the next device matches the unused cell {}",
                    p.cell_full_name(CellId(c as u32))
                ));
            }
        }
    }
    let spd = p.sems_per_device;
    for s in 0..p.num_sems() {
        if sems.fwd[s] == UNSET {
            let d = p.sem_device(SemSlot(s as u32));
            let image = (next(d).index() * spd + s % spd) as u32;
            if !sems.unify(s as u32, image) {
                return fail(format!("no semaphore of the next device matches {}", p.sem_full_name(SemSlot(s as u32))));
            }
        }
    }
    for (c, info) in p.cells.iter().enumerate() {
        let image = &p.cells[cells.fwd[c] as usize];
        if image.owner != info.owner.map(next) {
            return fail(format!(
                "{} would go to {}, which does not belong to the next device",
                p.cell_full_name(CellId(c as u32)),
                p.cell_full_name(CellId(cells.fwd[c]))
            ));
        }
    }
    for s in 0..p.num_sems() {
        let (from, to) = (SemSlot(s as u32), SemSlot(sems.fwd[s]));
        if p.sem_device(to) != next(p.sem_device(from)) || p.sem_kind(to) != p.sem_kind(from) {
            return fail(format!(
                "{} would go to {}, a semaphore of another kind or device",
                p.sem_full_name(from),
                p.sem_full_name(to)
            ));
        }
    }
    // Input atoms follow their cells.
    let mut atoms: FxHashMap<Atom, Atom> = FxHashMap::default();
    let mut images: FxHashMap<Atom, Atom> = FxHashMap::default();
    for c in 0..p.cells.len() {
        let (v, w) = (p.initial_cells[c], p.initial_cells[cells.fwd[c] as usize]);
        if let (Some(a), Some(b)) = (single_atom(&p.values, v), single_atom(&p.values, w)) {
            let fwd = *atoms.entry(a).or_insert(b);
            let inv = *images.entry(b).or_insert(a);
            if fwd != b || inv != a {
                return fail(format!(
                    "the inputs of {} and {} do not rotate consistently",
                    p.cell_full_name(CellId(c as u32)),
                    p.cell_full_name(CellId(cells.fwd[c]))
                ));
            }
        }
    }
    let mut atoms: Vec<(Atom, Atom)> = atoms.into_iter().collect();
    atoms.sort();
    let rotation = Rotation {
        steps: 1,
        devices: p.mesh.devices().map(next).collect(),
        cells: cells.fwd.into_iter().map(CellId).collect(),
        sems: sems.fwd.into_iter().map(SemSlot).collect(),
        atoms,
    };
    check_values(p, &rotation)?;
    if !rotation.pow(p, n).is_identity_map() {
        return fail(format!("rotating {n} times does not bring every cell back to itself"));
    }
    Ok(rotation)
}

/// Where an unused cell goes: its index shifted like the index of a cell of the same
/// buffer and device that some operation names, or the same index.
fn unused_cell_image(p: &Program, cells: &Bijection, c: CellId, next: impl Fn(DeviceId) -> DeviceId) -> Option<CellId> {
    let info = &p.cells[c.0 as usize];
    let Some(owner) = info.owner else { return Some(c) };
    let shape = &p.buffers[info.buffer].shape;
    let named = p
        .cells
        .iter()
        .enumerate()
        .find(|(i, o)| o.owner == Some(owner) && o.buffer == info.buffer && cells.fwd[*i] != UNSET);
    let index: Vec<usize> = match named {
        Some((i, o)) => {
            let to = &p.cells[cells.fwd[i] as usize].index;
            (0..shape.len()).map(|k| (info.index[k] + to[k] + shape[k] - o.index[k]) % shape[k]).collect()
        }
        None => info.index.clone(),
    };
    let target = Some(next(owner));
    p.cells
        .iter()
        .position(|o| o.owner == target && o.buffer == info.buffer && o.index == index)
        .map(|i| CellId(i as u32))
}

/// Unifies operation `a` of some device with operation `b` of the next device.
fn unify_ops(
    p: &Program,
    a: Op,
    b: Op,
    next: impl Fn(DeviceId) -> DeviceId,
    cells: &mut Bijection,
    sems: &mut Bijection,
) -> bool {
    let mut spans = |x: CellSpan, y: CellSpan| {
        let (xs, ys) = (p.span(x), p.span(y));
        xs.len() == ys.len() && xs.iter().zip(ys).all(|(c, d)| cells.unify(c.0, d.0))
    };
    match (a, b) {
        (Op::Enter, Op::Enter) | (Op::EntryBarrier, Op::EntryBarrier) | (Op::Exit, Op::Exit) => true,
        (Op::Signal { target: t, sem: s, inc: i }, Op::Signal { target: u, sem: r, inc: j }) => {
            next(t) == u && i == j && sems.unify(s.0, r.0)
        }
        (Op::Wait { sem: s, amount: x }, Op::Wait { sem: r, amount: y }) => x == y && sems.unify(s.0, r.0),
        (
            Op::LocalDma { src: s1, dst: d1, sem: m1, bytes: b1 },
            Op::LocalDma { src: s2, dst: d2, sem: m2, bytes: b2 },
        ) => b1 == b2 && spans(s1, s2) && spans(d1, d2) && sems.unify(m1.0, m2.0),
        (
            Op::RemoteDma { src: s1, dst: d1, target: t1, send_sem: a1, recv_sem: r1, bytes: b1 },
            Op::RemoteDma { src: s2, dst: d2, target: t2, send_sem: a2, recv_sem: r2, bytes: b2 },
        ) => {
            next(t1) == t2
                && b1 == b2
                && spans(s1, s2)
                && spans(d1, d2)
                && sems.unify(a1.0, a2.0)
                && sems.unify(r1.0, r2.0)
        }
        (Op::Compute { kind: k1, dst: d1, src: s1 }, Op::Compute { kind: k2, dst: d2, src: s2 }) => {
            k1 == k2 && spans(d1, d2) && spans(s1, s2)
        }
        _ => false,
    }
}

/// Checks that the rotation maps initial values, entry resets and expected outputs onto
/// those of the rotated cells.
fn check_values(p: &Program, r: &Rotation) -> Result<(), Asymmetry> {
    let mut values = p.values.clone();
    let mut image = |list: &[(CellId, ValueId)]| -> Option<Vec<(CellId, ValueId)>> {
        let mut out = Vec::with_capacity(list.len());
        for &(c, v) in list {
            out.push((r.cell(c), values.rename(0, v, &|a| r.atom(a))?));
        }
        out.sort();
        Some(out)
    };
    let sorted = |list: &[(CellId, ValueId)]| {
        let mut v = list.to_vec();
        v.sort();
        v
    };
    let initial: Vec<(CellId, ValueId)> =
        p.initial_cells.iter().enumerate().map(|(c, &v)| (CellId(c as u32), v)).collect();
    if image(&initial).as_deref() != Some(sorted(&initial).as_slice()) {
        return Err(Asymmetry { reason: "the initial cell values do not rotate onto each other".into() });
    }
    for d in p.mesh.devices() {
        let (a, b) = (&p.devices[d.index()], &p.devices[r.device(d).index()]);
        if image(&a.reset).as_deref() != Some(sorted(&b.reset).as_slice()) {
            return Err(Asymmetry {
                reason: format!("the values {d} resets at entry do not rotate onto those of {}", r.device(d)),
            });
        }
        if image(&a.expected).as_deref() != Some(sorted(&b.expected).as_slice()) {
            return Err(Asymmetry {
                reason: format!("the specification of {d}'s outputs does not rotate onto that of {}'s", r.device(d)),
            });
        }
    }
    if image(&p.shared_expected).as_deref() != Some(sorted(&p.shared_expected).as_slice()) {
        return Err(Asymmetry { reason: "the specification of the shared outputs is not rotation-invariant".into() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile;
    use crate::dsl::{trace, zeros_like};
    use crate::ir::MemorySpace;
    use crate::mesh::Mesh;
    use crate::spec::{Expectation, Expected, Spec};

    fn atom(origin: usize, block: usize) -> Atom {
        Atom::first_input(origin as u16, block as u16, 0)
    }

    /// ppermute to the device `shift` to the right; with `guard`, device 0 also zeroes
    /// its output first (`pl.when(my_id == 0)`).
    fn shift(n: usize, shift: usize, guard: bool, spec_all: bool) -> Program {
        let kernel = trace("shift", |k| {
            let x = k.input("x", MemorySpace::Vmem, &[]);
            let mut y = k.output("y", MemorySpace::Vmem, &[]);
            let (send, recv) = (k.dma_semaphore("send"), k.dma_semaphore("recv"));
            let my_id = k.axis_index("x");
            if guard {
                k.when(my_id.clone().equals(0), |_| y.assign(zeros_like(&y)));
            }
            let dma = k.make_async_remote_copy(&x, &y, &send, &recv, (my_id + shift as i64) % n as i64);
            dma.start();
            dma.wait();
            let _ = &mut y;
        })
        .unwrap();
        let outputs = (0..if spec_all { n } else { 1 })
            .map(|d| Expectation {
                device: DeviceId(d as u16),
                buffer: "y".into(),
                index: vec![],
                value: Expected::Sum(vec![atom((d + n - shift % n) % n, 0)]),
            })
            .collect();
        let spec = Spec::plain(outputs);
        compile(&kernel, &Mesh::ring(n).unwrap(), &spec, 1).unwrap()
    }

    /// Every device sends input block `my_id + 1` to the right neighbour's slot.
    fn blocks(n: usize) -> Program {
        let kernel = trace("blocks", |k| {
            let x = k.input("x", MemorySpace::Hbm, &[n]);
            let y = k.output("y", MemorySpace::Hbm, &[]);
            let (send, recv) = (k.dma_semaphore("send"), k.dma_semaphore("recv"));
            let my_id = k.axis_index("x");
            let dma =
                k.make_async_remote_copy(&x.at((&my_id + 1) % n as i64), &y, &send, &recv, (my_id + 1) % n as i64);
            dma.start();
            dma.wait();
        })
        .unwrap();
        let outputs = (0..n)
            .map(|d| Expectation {
                device: DeviceId(d as u16),
                buffer: "y".into(),
                index: vec![],
                value: Expected::Sum(vec![atom((d + n - 1) % n, d)]),
            })
            .collect();
        compile(&kernel, &Mesh::ring(n).unwrap(), &Spec::plain(outputs), 1).unwrap()
    }

    #[test]
    fn a_shift_is_symmetric_and_its_rotation_closes_the_ring() {
        for n in [2, 3, 5] {
            let p = shift(n, 1, false, true);
            let ring = Ring::of(&p).unwrap();
            assert_eq!((ring.size(), ring.radius(), ring.shares_memory()), (n, 1, false));
            let r = ring.rotation().unwrap();
            assert_eq!(r.steps(), 1);
            assert_eq!(r.device(DeviceId(n as u16 - 1)), DeviceId(0));
            assert_eq!(r.atom(atom(0, 0)), Some(atom(1, 0)));
            assert_eq!(r.atom(atom(7, 7)), None);
            let full = r.pow(&p, n);
            assert!(full.is_identity());
            assert_eq!(full, Rotation::identity(&p));
            assert_eq!(r.after(&r.inverse()), Rotation::identity(&p));
            let e = Event::Sent(DmaKey { issuer: DeviceId(0), pc: 2 });
            assert_eq!(r.pow(&p, 2).event(e), Event::Sent(DmaKey { issuer: DeviceId(2 % n as u16), pc: 2 }));
        }
    }

    #[test]
    fn the_radius_is_the_farthest_target() {
        let p = shift(7, 3, false, true);
        assert_eq!(Ring::of(&p).unwrap().radius(), 3);
        let p = shift(7, 5, false, true);
        assert_eq!(Ring::of(&p).unwrap().radius(), 2, "5 to the right is 2 to the left");
        assert!(Ring::of(&p).unwrap().rotation().is_ok());
    }

    #[test]
    fn a_branch_on_the_device_id_breaks_the_symmetry() {
        let p = shift(3, 1, true, true);
        let ring = Ring::of(&p).unwrap();
        let why = ring.rotation().unwrap_err();
        assert!(why.reason.contains("d0"), "{why}");
    }

    #[test]
    fn a_specification_of_one_device_breaks_the_symmetry() {
        let p = shift(3, 1, false, false);
        let why = Ring::of(&p).unwrap().rotation().unwrap_err().clone();
        assert!(why.reason.contains("specification"), "{why}");
    }

    #[test]
    fn block_indices_that_follow_the_device_rotate_with_it() {
        let p = blocks(4);
        let r = Ring::of(&p).unwrap().rotation().unwrap().clone();
        // x[b] on device d holds atom (d, b); it goes to x[b+1] on d+1.
        assert_eq!(r.atom(atom(0, 1)), Some(atom(1, 2)));
        assert_eq!(r.atom(atom(3, 3)), Some(atom(0, 0)));
        let mut values = p.values.clone();
        let v = values.sum_of([atom(0, 1), atom(3, 0)]);
        let w = values.rename(0, v, &|a| r.atom(a)).unwrap();
        assert_eq!(w, values.sum_of([atom(1, 2), atom(0, 1)]));
    }

    #[test]
    fn a_mesh_of_two_axes_is_not_a_ring() {
        use crate::mesh::Axis;
        let kernel = trace("idle", |k| {
            let _ = k.input("x", MemorySpace::Hbm, &[]);
        })
        .unwrap();
        let mesh = Mesh::new(vec![Axis { name: "x".into(), size: 2 }, Axis { name: "y".into(), size: 2 }]).unwrap();
        let p = compile(&kernel, &mesh, &Spec::plain(vec![]), 1).unwrap();
        assert!(Ring::of(&p).is_err());
    }
}
