//! Views to cells: the cells of a buffer view on a device, their names in reports, and
//! the names of buffers and semaphores.

use super::{Compiler, Here};
use crate::error::{ErrorKind, ModelError};
use crate::expr::Expr;
use crate::ir::{Index, Level, RefExpr, SemRef};
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
        let (cells, bytes) = self.view_cells(r, on, here, what, Bounds::All)?;
        Ok((cells.unwrap_or_default(), bytes))
    }

    /// The byte count of a view a DMA wait names, checked the way Mosaic checks a wait's
    /// descriptor: its shape, and only the indices fixed when the kernel is compiled
    /// (constants) against their dimensions. A wait touches no cell, so a slice computed
    /// per device may run past its buffer (a receiver's descriptor built from the
    /// sender's offsets only counts the bytes of a copy another device starts).
    pub(super) fn wait_bytes(&self, r: &RefExpr, here: &Here<'_>, what: &str) -> Result<u32, ModelError> {
        Ok(self.view_cells(r, here.device, here, what, Bounds::Static)?.1)
    }

    /// The cells of a view on `on` (`None` when an index computed per device is out of
    /// range and `bounds` lets it be), and its byte count.
    fn view_cells(
        &self,
        r: &RefExpr,
        on: DeviceId,
        here: &Here<'_>,
        what: &str,
        bounds: Bounds,
    ) -> Result<(Option<Vec<CellId>>, u32), ModelError> {
        // Whether an index out of range was let through (`Bounds::Static`): no cells then.
        let mut outside = false;
        let enforced = |e: &Expr| bounds == Bounds::All || matches!(e, Expr::Const(_));
        let decl = self.kernel.buffer(r.buffer).ok_or_else(|| {
            self.err(
                here,
                what,
                ErrorKind::UnknownBuffer,
                format!("buffer #{} is not declared by this kernel", r.buffer.0),
            )
        })?;
        // A view the front end could not express in cells fails here, with its reason.
        for level in &r.indexing {
            let Level::Index(indices) = level else { continue };
            for index in indices {
                if let Index::At(Expr::Fail(reason))
                | Index::Slice { start: Expr::Fail(reason), .. }
                | Index::Slice { size: Expr::Fail(reason), .. } = index
                {
                    return Err(self.err(here, what, ErrorKind::Unsupported, reason.clone()));
                }
            }
        }
        let mut view = View::of(&decl.shape);
        for level in &r.indexing {
            match level {
                Level::Index(indices) => {
                    // `k`: the view's dimension the index applies to; `i`: its place in `.at[...]`.
                    let mut k = 0;
                    for (i, index) in indices.iter().enumerate() {
                        // In elements where the view is still one of the buffer's own
                        // dimensions and its cells group several (that dimension named by its
                        // size: the front end may have dropped whole dimensions from the
                        // cells, so its number is not the kernel's).
                        let oob = |i: usize, dim: &Dim, what_: String, start: i64, len: i64| {
                            let grouped = dim.axis.and_then(|a| {
                                decl.cell_elements.get(a).copied().filter(|&e| e > 1).map(|e| (a, e as i64))
                            });
                            match grouped {
                                Some((a, e)) => format!(
                                    "elements {}..{} out of range for the dimension of {} elements of `{}`",
                                    (dim.start + start) * e,
                                    (dim.start + start + len) * e,
                                    decl.shape[a] as i64 * e,
                                    decl.name
                                ),
                                None => format!(
                                    "{what_} out of range for dimension {} of `{}` (size {})",
                                    dim.axis.unwrap_or(i),
                                    decl.name,
                                    dim.size
                                ),
                            }
                        };
                        let dim = view.dims.get(k).ok_or_else(|| {
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
                                if v < 0 || v >= dim.size as i64 {
                                    if !enforced(e) {
                                        outside = true;
                                        view.dims.remove(k);
                                        continue;
                                    }
                                    let msg = oob(i, dim, format!("index {v}"), v, 1);
                                    return Err(self.err(here, what, ErrorKind::OutOfRange, msg));
                                }
                                view.offset += v as usize * dim.stride;
                                view.dims.remove(k);
                            }
                            Index::Slice { start, size, step } => {
                                let n = self.eval(size, here, what)?;
                                // A constant size of 0 is a malformed view; a computed one copies
                                // nothing, and its start is not read (a dead row of a branchless
                                // copy may compute it from a stale index).
                                let empty_ok = !matches!(size, Expr::Const(_));
                                let v = if n == 0 && empty_ok { 0 } else { self.eval(start, here, what)? };
                                let last = v + (n - 1).max(0) * *step as i64;
                                let past = v < 0 || (n > 0 && last >= dim.size as i64);
                                if past && n >= 0 && !(enforced(start) && enforced(size)) {
                                    outside = true;
                                    let dim = &mut view.dims[k];
                                    dim.size = n as usize;
                                    k += 1;
                                    continue;
                                }
                                if v < 0 || n < 0 || (n == 0 && !empty_ok) || (n > 0 && last >= dim.size as i64) {
                                    let ds = if *step == 1 {
                                        format!("ds({v}, {n})")
                                    } else {
                                        format!("ds({v}, {n}, {step})")
                                    };
                                    let msg = oob(i, dim, format!("slice {ds}"), v, n);
                                    return Err(self.err(here, what, ErrorKind::OutOfRange, msg));
                                }
                                let dim = &mut view.dims[k];
                                view.offset += v as usize * dim.stride;
                                dim.start += v;
                                dim.size = n as usize;
                                dim.stride *= *step;
                                if *step != 1 {
                                    dim.axis = None;
                                }
                                k += 1;
                            }
                        }
                    }
                }
                Level::Reshape(shape) => {
                    view = view.reshape(shape).map_err(|why| {
                        self.err(here, what, ErrorKind::Unsupported, format!("`{}`: {why}", decl.name))
                    })?;
                }
            }
        }
        let count: usize = view.dims.iter().map(|d| d.size).product();
        let bytes = count as u32 * decl.cell_bytes;
        if outside {
            return Ok((None, bytes));
        }
        let base = self.base[on.index()][r.buffer.0 as usize];
        let cells: Vec<CellId> = view.cells().map(|offset| CellId(base + offset as u32)).collect();
        Ok((Some(cells), bytes))
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

/// Which indices of a view are checked against their dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bounds {
    /// Every index: a view whose cells are read or written.
    All,
    /// Only constants, as Mosaic's verifier checks a DMA wait's descriptor.
    Static,
}

/// One dimension of a view: its size and stride in cells of the buffer, and (while it is
/// still one of the buffer's own dimensions, unstrided) which, and where it starts on it.
#[derive(Clone, Copy, Debug)]
struct Dim {
    size: usize,
    stride: usize,
    axis: Option<usize>,
    start: i64,
}

/// A view of a buffer's cells: the first cell's offset and the dimensions, as numpy
/// describes a strided array.
#[derive(Clone, Debug)]
struct View {
    offset: usize,
    dims: Vec<Dim>,
}

impl View {
    /// The whole buffer of this shape (in cells), row-major.
    fn of(shape: &[usize]) -> View {
        let mut stride = 1;
        let mut dims: Vec<Dim> = shape
            .iter()
            .enumerate()
            .rev()
            .map(|(axis, &size)| {
                let d = Dim { size, stride, axis: Some(axis), start: 0 };
                stride *= size;
                d
            })
            .collect();
        dims.reverse();
        View { offset: 0, dims }
    }

    /// Its cells' offsets in the buffer, row-major.
    fn cells(&self) -> impl Iterator<Item = usize> + '_ {
        let count: usize = self.dims.iter().map(|d| d.size).product();
        (0..count).map(|flat| {
            let (mut rest, mut at) = (flat, self.offset);
            for d in self.dims.iter().rev() {
                at += (rest % d.size) * d.stride;
                rest /= d.size;
            }
            at
        })
    }

    /// The same cells read row-major with the dimensions `shape`: dimensions of size 1
    /// come and go freely, and each group of dimensions merged or split must be
    /// contiguous (each stride the next one's times its size).
    fn reshape(&self, shape: &[usize]) -> Result<View, String> {
        let have: Vec<Dim> = self.dims.iter().copied().filter(|d| d.size != 1).collect();
        let sizes = |dims: &[Dim]| dims.iter().map(|d| d.size).collect::<Vec<_>>();
        let total: usize = have.iter().map(|d| d.size).product();
        if total == 0 || shape.contains(&0) {
            return Err(format!("a reshape of an empty view ({:?} cells) to {shape:?}", sizes(&self.dims)));
        }
        if shape.iter().product::<usize>() != total {
            return Err(format!("a view of {:?} cells cannot be reshaped to {shape:?}", sizes(&self.dims)));
        }
        let want: Vec<(usize, usize)> = shape.iter().copied().enumerate().filter(|&(_, n)| n != 1).collect();
        let mut strides = vec![1usize; shape.len()];
        let mut axes = vec![None; shape.len()];
        let mut starts = vec![0i64; shape.len()];
        let (mut i, mut j) = (0, 0);
        while i < have.len() {
            // The smallest group of dimensions on each side with the same product.
            let (i0, j0) = (i, j);
            let (mut p, mut q) = (have[i].size, want[j].1);
            i += 1;
            j += 1;
            while p != q {
                if p < q {
                    p *= have[i].size;
                    i += 1;
                } else {
                    q *= want[j].1;
                    j += 1;
                }
            }
            let group = &have[i0..i];
            if group.windows(2).any(|w| w[0].stride != w[1].stride * w[1].size) {
                return Err(format!(
                    "a reshape to {shape:?} cells merges dimensions of {:?} cells that are not contiguous",
                    sizes(group)
                ));
            }
            let mut stride = group[group.len() - 1].stride;
            for &(t, n) in want[j0..j].iter().rev() {
                strides[t] = stride;
                stride *= n;
            }
            if i - i0 == 1 && j - j0 == 1 {
                axes[want[j0].0] = group[0].axis;
                starts[want[j0].0] = group[0].start;
            }
        }
        let dims = (0..shape.len())
            .map(|t| Dim { size: shape[t], stride: strides[t], axis: axes[t], start: starts[t] })
            .collect();
        Ok(View { offset: self.offset, dims })
    }
}

#[cfg(test)]
mod tests {
    use super::View;

    fn cells(v: &View) -> Vec<usize> {
        v.cells().collect()
    }

    #[test]
    fn a_reshape_reads_the_same_cells_row_major_and_refuses_a_gap() {
        // [4, 16, 2] merged to [64, 2], then rows 5..8: cells 10..16.
        let v = View::of(&[4, 16, 2]).reshape(&[64, 2]).unwrap();
        let mut rows = v.clone();
        rows.offset += 5 * rows.dims[0].stride;
        rows.dims[0].size = 3;
        assert_eq!(cells(&rows), (10..16).collect::<Vec<_>>());
        // Split back with unit dimensions coming and going.
        let w = v.reshape(&[1, 4, 16, 1, 2]).unwrap();
        assert_eq!(cells(&w), (0..128).collect::<Vec<_>>());
        // A column of a [4, 3] (stride 3) cannot merge with what follows it.
        let mut col = View::of(&[4, 3]);
        col.dims[1].size = 1;
        assert_eq!(col.reshape(&[4]).map(|v| cells(&v)).unwrap(), vec![0, 3, 6, 9]);
        let mut two = View::of(&[4, 3]);
        two.dims[1].size = 2;
        assert!(two.reshape(&[8]).unwrap_err().contains("not contiguous"));
        assert!(View::of(&[4, 3]).reshape(&[5]).unwrap_err().contains("cannot be reshaped"));
        assert!(View::of(&[0, 3]).reshape(&[3, 0]).unwrap_err().contains("empty"));
    }
}
