//! Views to cells: the cells of a buffer view on a device, their names in reports, and
//! the names of buffers and semaphores.

use super::{Compiler, Here};
use crate::error::{ErrorKind, ModelError};
use crate::expr::Expr;
use crate::ir::{Index, RefExpr, SemRef};
use crate::mesh::DeviceId;
use crate::program::{CellId, CellSpan, SemSlot};

/// Cells a view's name lists one by one, at most; a larger box is named by its ranges.
const MAX_LISTED_CELLS: usize = 8;

impl Compiler<'_> {
    pub(super) fn sem_label(&self, r: &SemRef) -> String {
        self.kernel.semaphore(r.sem).map_or_else(|| format!("semaphore #{}", r.sem.0), |d| d.name.clone())
    }

    pub(super) fn sem_name(&self, slot: SemSlot) -> String {
        let (decl, index) = &self.sem_decls[slot.0 as usize % self.sems_per_device];
        index.map_or_else(|| decl.name.clone(), |i| format!("{}[{i}]", decl.name))
    }

    pub(super) fn buffer_name(&self, r: &RefExpr) -> String {
        self.kernel.buffer(r.buffer).map_or_else(|| format!("buffer #{}", r.buffer.0), |b| b.name.clone())
    }

    /// The cells of a view on `on`, and its byte count.
    pub(super) fn cells_of(
        &self,
        r: &RefExpr,
        on: DeviceId,
        here: &Here<'_>,
        what: &str,
    ) -> Result<(Vec<CellId>, u32), ModelError> {
        let decl = self.kernel.buffer(r.buffer).ok_or_else(|| {
            self.err(
                here,
                what,
                ErrorKind::UnknownBuffer,
                format!("buffer #{} is not declared by this kernel", r.buffer.0),
            )
        })?;
        // A view the front end could not express in cells fails here, with its reason.
        for index in r.indexing.iter().flatten() {
            if let Index::At(Expr::Fail(reason))
            | Index::Slice { start: Expr::Fail(reason), .. }
            | Index::Slice { size: Expr::Fail(reason), .. } = index
            {
                return Err(self.err(here, what, ErrorKind::Unsupported, reason.clone()));
            }
        }
        // Per dimension: (offset, size, dropped).
        let mut dims: Vec<(usize, usize, bool)> = decl.shape.iter().map(|&s| (0, s, false)).collect();
        for indices in &r.indexing {
            let mut free = dims.iter_mut().enumerate().filter(|(_, d)| !d.2);
            for (k, index) in indices.iter().enumerate() {
                let (axis, dim) = free.next().ok_or_else(|| {
                    self.err(
                        here,
                        what,
                        ErrorKind::OutOfRange,
                        format!("too many indices for `{}` of shape {:?}", decl.name, decl.shape),
                    )
                })?;
                match index {
                    Index::At(e) => {
                        let v = self.eval(e, here, what)?;
                        if v < 0 || v as usize >= dim.1 {
                            return Err(self.err(
                                here,
                                what,
                                ErrorKind::OutOfRange,
                                format!(
                                    "index {v} out of range for dimension {k} of `{}` (size {}){}",
                                    decl.name,
                                    dim.1,
                                    in_elements(decl.cell_elements.get(axis), dim.0 as i64 + v, 1, decl.shape[axis])
                                ),
                            ));
                        }
                        dim.0 += v as usize;
                        dim.1 = 1;
                        dim.2 = true;
                    }
                    Index::Slice { start, size } => {
                        let v = self.eval(start, here, what)?;
                        let n = self.eval(size, here, what)?;
                        // A constant size of 0 is a malformed view; a computed one copies nothing.
                        let empty_ok = !matches!(size, Expr::Const(_));
                        if v < 0 || n < 0 || (n == 0 && !empty_ok) || (v + n) as usize > dim.1 {
                            return Err(self.err(
                                here,
                                what,
                                ErrorKind::OutOfRange,
                                format!(
                                    "slice ds({v}, {n}) out of range for dimension {k} of `{}` (size {}){}",
                                    decl.name,
                                    dim.1,
                                    in_elements(decl.cell_elements.get(axis), dim.0 as i64 + v, n, decl.shape[axis])
                                ),
                            ));
                        }
                        dim.0 += v as usize;
                        dim.1 = n as usize;
                    }
                }
            }
        }
        let base = self.base[on.index()][r.buffer.0 as usize];
        let mut cells = Vec::new();
        let count: usize = dims.iter().map(|d| d.1).product();
        for flat in 0..count {
            let mut rest = flat;
            let mut offset = 0usize;
            let mut pos = vec![0usize; dims.len()];
            for (i, d) in dims.iter().enumerate().rev() {
                pos[i] = d.0 + rest % d.1;
                rest /= d.1;
            }
            for (i, s) in decl.shape.iter().enumerate() {
                offset = offset * s + pos[i];
            }
            cells.push(CellId(base + offset as u32));
        }
        Ok((cells, count as u32 * decl.cell_bytes))
    }

    /// `hbm_buf[1]` or `x_ref[0,1],x_ref[1,1]` for a list of cells of one buffer.
    pub(super) fn view_name(&self, cells: &[CellId]) -> String {
        if cells.is_empty() {
            return String::new();
        }
        let first = &self.cells[cells[0].0 as usize];
        let name = &self.kernel.buffers[first.buffer].name;
        let idx: Vec<String> = cells
            .iter()
            .map(|c| {
                let i: Vec<String> = self.cells[c.0 as usize].index.iter().map(|x| x.to_string()).collect();
                i.join(",")
            })
            .collect();
        if idx.iter().all(|s| s.is_empty()) {
            name.clone()
        } else if idx.len() == 1 {
            format!("{name}[{}]", idx[0])
        } else if let Some(ranges) = self.rectangle(cells).filter(|_| cells.len() > MAX_LISTED_CELLS) {
            format!("{name}[{ranges}]")
        } else {
            format!("{name}[{}]", idx.join(" "))
        }
    }

    /// `0,0:128` when `cells` are every cell of a box of one buffer (each dimension a
    /// position or a range `lo:hi`, hi excluded, as Python writes a slice).
    fn rectangle(&self, cells: &[CellId]) -> Option<String> {
        let first = &self.cells[cells.first()?.0 as usize].index;
        let (mut lo, mut hi) = (first.clone(), first.clone());
        for c in cells {
            let index = &self.cells[c.0 as usize].index;
            for (k, &i) in index.iter().enumerate() {
                lo[k] = lo[k].min(i);
                hi[k] = hi[k].max(i);
            }
        }
        // A view's cells are distinct: as many as the box holds fill it.
        let volume: usize = lo.iter().zip(&hi).map(|(l, h)| h - l + 1).product();
        if volume != cells.len() {
            return None;
        }
        let dims: Vec<String> =
            lo.iter().zip(&hi).map(|(l, h)| if l == h { l.to_string() } else { format!("{l}:{}", h + 1) }).collect();
        Some(dims.join(","))
    }

    pub(super) fn span(&mut self, cells: Vec<CellId>) -> CellSpan {
        let start = self.pool.len() as u32;
        let len = cells.len() as u32;
        self.pool.extend(cells);
        CellSpan { start, len }
    }
}

/// ` (elements 16..48 of 32)`: cells `start..start + len` of a dimension of `size` cells,
/// in elements of the real array when a cell's extent along it is known and not 1.
fn in_elements(per_cell: Option<&usize>, start: i64, len: i64, size: usize) -> String {
    match per_cell {
        Some(&e) if e > 1 => {
            let e = e as i64;
            format!(" (elements {}..{} of {})", start * e, (start + len) * e, size as i64 * e)
        }
        _ => String::new(),
    }
}
