//! Classes of identical windows: the windows around two devices that are the same up to
//! renaming, so that exploring one decides both (local symmetry, checked on the compiled
//! program).
//!
//! A window's behaviour reads the program only through: the operations of its tracked
//! devices (kind, amounts, byte counts, the kind of computation), their invocations and
//! `Enter`/`Exit` positions, which device, semaphore and cell each operation names, the
//! owner of every cell it names, and its token classes (target semaphore, increment,
//! invocation, budget). It compares devices, semaphores, cells and DMA keys only for
//! equality, and tests one thing about them besides: whether a cell belongs to the
//! center. The *shape* of a window writes all of this down relative to its center:
//! a device as its offset from the center around the ring, a semaphore as (owner's
//! offset, local index), a cell as (owner's offset, the order in which the shape first
//! meets it), with the tracked devices in offset order and the token classes sorted.
//! Two windows with equal shapes are therefore isomorphic: the renaming that maps each
//! device, semaphore, cell and token class of one to the one at the same place in the
//! other's shape maps every window execution of one, and every violation at its center,
//! to one of the other.

use rustc_hash::FxHashMap;

use crate::mesh::DeviceId;
use crate::program::{CellId, ComputeKind, Op, Program, SemSlot};

use super::build::Incoming;
use super::{Inapplicable, Window};

/// Windows of one radius that are identical up to renaming: one is explored for all.
#[derive(Clone, Debug)]
pub struct WindowClass<'p> {
    /// The window explored for the class (around its first member).
    pub window: Window<'p>,
    /// The centers of the windows of the class, in id order.
    pub members: Vec<DeviceId>,
}

/// The windows of radius `radius` around every device of `program`, grouped into classes
/// of identical windows (see the module docs), in order of their first member. A
/// rotation-symmetric kernel has one class; a kernel that special-cases a device has a
/// few more (the windows that contain it).
pub fn window_classes(program: &Program, radius: usize) -> Result<Vec<WindowClass<'_>>, Inapplicable> {
    let incoming = Incoming::of(program);
    let mut classes: Vec<WindowClass<'_>> = Vec::new();
    let mut by_shape: FxHashMap<Vec<u32>, usize> = FxHashMap::default();
    for center in program.mesh.devices() {
        let window = Window::with_incoming(program, &incoming, center, radius)?;
        let shape = window.shape();
        match by_shape.get(&shape) {
            Some(&i) => classes[i].members.push(center),
            None => {
                by_shape.insert(shape, classes.len());
                classes.push(WindowClass { window, members: vec![center] });
            }
        }
    }
    Ok(classes)
}

impl Window<'_> {
    /// The window written relative to its center (module docs): equal shapes, isomorphic
    /// windows.
    pub fn shape(&self) -> Vec<u32> {
        let program = self.program;
        let n = program.num_devices();
        let spd = program.sems_per_device;
        let c = self.center.index();
        let offset = |d: DeviceId| ((d.index() + n - c) % n) as u32;
        let sem = |s: SemSlot| offset(program.sem_device(s)) * spd as u32 + (s.0 as usize % spd) as u32;
        let mut cells: FxHashMap<CellId, u32> = FxHashMap::default();
        let mut out = vec![n as u32, self.radius as u32, self.tracked.len() as u32];
        let mut span = |out: &mut Vec<u32>, span| {
            let list = program.span(span);
            out.push(list.len() as u32);
            for &cell in list {
                let next = cells.len() as u32;
                out.push(*cells.entry(cell).or_insert(next));
                out.push(program.cells[cell.0 as usize].owner.map_or(u32::MAX, offset));
            }
        };
        let mut order: Vec<DeviceId> = self.tracked.clone();
        order.sort_by_key(|&d| offset(d));
        for d in order {
            let dp = &program.devices[d.index()];
            out.push(offset(d));
            out.push(dp.ops.len() as u32);
            out.extend(dp.enter_pc.iter().chain(&dp.exit_pc));
            for (op, info) in dp.ops.iter().zip(&dp.info) {
                out.push(info.invocation);
                match *op {
                    Op::Enter => out.push(0),
                    Op::EntryBarrier => out.push(1),
                    Op::Exit => out.push(2),
                    Op::Signal { target, sem: s, inc } => out.extend([3, offset(target), sem(s), inc]),
                    Op::Wait { sem: s, amount } => out.extend([4, sem(s), amount]),
                    Op::LocalDma { src, dst, sem: s, bytes } => {
                        out.extend([5, sem(s), bytes]);
                        span(&mut out, src);
                        span(&mut out, dst);
                    }
                    Op::RemoteDma { src, dst, target, send_sem, recv_sem, bytes } => {
                        out.extend([6, offset(target), sem(send_sem), sem(recv_sem), bytes]);
                        span(&mut out, src);
                        span(&mut out, dst);
                    }
                    Op::Compute { kind, dst, src } => {
                        // The window drops values: only whether the destination is read
                        // too (`+=`) matters to it.
                        out.extend([7, u32::from(kind == ComputeKind::Add)]);
                        span(&mut out, src);
                        span(&mut out, dst);
                    }
                }
            }
        }
        let mut tokens: Vec<[u32; 4]> =
            self.tokens.iter().map(|t| [sem(t.sem), t.inc, t.invocation.map_or(u32::MAX, |k| k), t.budget]).collect();
        tokens.sort_unstable();
        out.push(tokens.len() as u32);
        out.extend(tokens.into_iter().flatten());
        out
    }
}
