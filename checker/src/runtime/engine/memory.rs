//! The cells of the system as backend cells (loom's `UnsafeCell` under `--cfg loom`),
//! with the in-flight access counters of the race rule.

use std::sync::atomic::Ordering::SeqCst;

use semcheck_model::program::CellId;
use semcheck_model::{DeviceId, Program, Violation};

use super::sync;
use crate::runtime::checks::{race, Tracking};
use crate::runtime::numeric::Reference;

/// Every cell of the system: real numbers in backend cells, plus race instrumentation.
#[derive(Debug)]
pub struct Memory {
    cells: Vec<sync::UnsafeCell<Box<[f32]>>>,
    tracking: Vec<Tracking>,
}

impl Memory {
    /// The memory before the first invocation: `initial_cells` evaluated on `reference`.
    pub fn new(program: &Program, reference: &Reference) -> Memory {
        let cells =
            program.initial_cells.iter().map(|&v| sync::UnsafeCell::new(reference.concrete(program, v))).collect();
        let tracking = program.cells.iter().map(|_| Tracking::default()).collect();
        Memory { cells, tracking }
    }

    /// A copy of a cell's numbers.
    pub fn read(&self, cell: CellId) -> Box<[f32]> {
        // SAFETY: see `StdCell`; under loom the access is checked for causality.
        self.cells[cell.0 as usize].with(|p| unsafe { (*p).clone() })
    }

    /// Overwrites a cell.
    pub fn write(&self, cell: CellId, value: &[f32]) {
        // SAFETY: as for `read`.
        self.cells[cell.0 as usize].with_mut(|p| unsafe { (*p).copy_from_slice(value) })
    }

    /// The race rule for a device operation or a DMA start that reads `reads` and writes
    /// `writes`: `Err` if an in-flight DMA is writing a cell accessed, or reading a cell
    /// written.
    pub(crate) fn check(
        &self,
        program: &Program,
        reads: &[CellId],
        writes: &[CellId],
        who: &str,
        d: DeviceId,
    ) -> Result<(), Violation> {
        for &c in writes.iter().chain(reads) {
            let t = &self.tracking[c.0 as usize];
            let access = if writes.contains(&c) { "writes" } else { "reads" };
            if t.writers.load(SeqCst) > 0 {
                return Err(race(program, c.0, who, access, "written", t.last.load(SeqCst), d));
            }
            if writes.contains(&c) && t.readers.load(SeqCst) > 0 {
                return Err(race(program, c.0, who, access, "read", t.last.load(SeqCst), d));
            }
        }
        Ok(())
    }

    /// Registers an in-flight DMA reading `src` and writing `dst`.
    pub(crate) fn start_dma(&self, src: &[CellId], dst: &[CellId], key: u64) {
        for c in src {
            let t = &self.tracking[c.0 as usize];
            t.readers.fetch_add(1, SeqCst);
            t.last.store(key, SeqCst);
        }
        for c in dst {
            let t = &self.tracking[c.0 as usize];
            t.writers.fetch_add(1, SeqCst);
            t.last.store(key, SeqCst);
        }
    }

    /// The DMA has read its source.
    pub(crate) fn end_read(&self, src: &[CellId]) {
        for c in src {
            self.tracking[c.0 as usize].readers.fetch_sub(1, SeqCst);
        }
    }

    /// The DMA has written its destination.
    pub(crate) fn end_write(&self, dst: &[CellId]) {
        for c in dst {
            self.tracking[c.0 as usize].writers.fetch_sub(1, SeqCst);
        }
    }
}
