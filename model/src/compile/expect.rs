//! What a compiled program is checked against: the expected final value of each output
//! cell, and each operation's cell accesses.

use super::Compiler;
use crate::error::{ErrorKind, ModelError};
use crate::ir::Kernel;
use crate::mesh::{DeviceId, Mesh};
use crate::program::{Access, CellId, CellSpan, ComputeKind, DeviceProgram, Op};
use crate::spec::Spec;
use crate::value::{ValueId, ValueTable};

/// The expected final values of `spec`, per device and for the shared buffers: each
/// output cell (found through `base[device][buffer]`, the first cell of a buffer) with
/// its value interned in `values`.
#[allow(clippy::type_complexity)]
pub(super) fn expectations(
    kernel: &Kernel,
    base: &[Vec<u32>],
    values: &mut ValueTable,
    spec: &Spec,
    mesh: &Mesh,
) -> Result<(Vec<Vec<(CellId, ValueId)>>, Vec<(CellId, ValueId)>), ModelError> {
    let mut per_device = vec![Vec::new(); mesh.num_devices()];
    let mut shared = Vec::new();
    for e in &spec.outputs {
        let bad =
            |m: String| ModelError::new(ErrorKind::UnknownName, format!("kernel {}: specification: {m}", kernel.name));
        if e.device.index() >= mesh.num_devices() {
            return Err(bad(format!("device {} is off the mesh ({mesh})", e.device)));
        }
        let (b, decl) = kernel
            .buffers
            .iter()
            .enumerate()
            .find(|(_, b)| b.name == e.buffer)
            .ok_or_else(|| bad(format!("no buffer named `{}`", e.buffer)))?;
        if e.index.len() != decl.shape.len() || e.index.iter().zip(&decl.shape).any(|(i, s)| i >= s) {
            return Err(bad(format!("index {:?} out of range for `{}` of shape {:?}", e.index, e.buffer, decl.shape)));
        }
        let offset = e.index.iter().zip(&decl.shape).fold(0usize, |acc, (i, s)| acc * s + i);
        let cell = CellId(base[e.device.index()][b] + offset as u32);
        let value = e.value.intern(values);
        if decl.shared {
            shared.push((cell, value));
        } else {
            per_device[e.device.index()].push((cell, value));
        }
    }
    Ok((per_device, shared))
}

impl Compiler<'_> {
    pub(super) fn accesses(&self, devices: &[DeviceProgram]) -> Vec<Vec<Access>> {
        let mut acc = vec![Vec::new(); self.cells.len()];
        let span = |s: CellSpan| &self.pool[s.start as usize..(s.start + s.len) as usize];
        for (d, dp) in devices.iter().enumerate() {
            for (pc, op) in dp.ops.iter().enumerate() {
                let mut note = |cells: &[CellId], write: bool| {
                    for c in cells {
                        acc[c.0 as usize].push(Access { device: DeviceId(d as u16), pc: pc as u32, write });
                    }
                };
                match *op {
                    Op::LocalDma { src, dst, .. } | Op::RemoteDma { src, dst, .. } => {
                        note(span(src), false);
                        note(span(dst), true);
                    }
                    Op::Compute { kind, dst, src } => {
                        note(span(src), false);
                        note(span(dst), true);
                        if kind == ComputeKind::Add {
                            note(span(dst), false);
                        }
                    }
                    _ => {}
                }
            }
        }
        acc
    }
}
