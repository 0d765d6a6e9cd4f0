//! The cells of the system as backend cells (loom's `UnsafeCell` with the `loom` feature),
//! with the in-flight access counters of the race rule.

use semcheck_model::program::CellId;
use semcheck_model::{DeviceId, DmaKey, Program, Violation};

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
    /// written. `fifo` is the DMA being started under `--dma-order pair-fifo`: an in-flight
    /// DMA of its queue lands before it writes anything, so its writes do not conflict with
    /// that DMA (its reads still do), as in the model.
    pub(crate) fn check(
        &self,
        program: &Program,
        reads: &[CellId],
        writes: &[CellId],
        who: &str,
        d: DeviceId,
        fifo: Option<DmaKey>,
    ) -> Result<(), Violation> {
        let ordered = |other: &DmaKey| {
            fifo.is_some_and(|k| other.issuer == k.issuer && program.dma_queue(*other) == program.dma_queue(k))
        };
        for &c in writes.iter().chain(reads) {
            let t = self.tracking[c.0 as usize].inflight.lock().unwrap_or_else(|e| e.into_inner());
            let writing = writes.contains(&c);
            let unordered = |keys: &[DmaKey]| keys.iter().filter(|k| !writing || !ordered(k)).min().copied();
            let reading = reads.contains(&c);
            let written = match (writing, reading) {
                (true, true) => t.writers.iter().min().copied(),
                _ => unordered(&t.writers),
            };
            if let Some(other) = written {
                let access = if writing && !ordered(&other) { "writes" } else { "reads" };
                return Err(race(program, c.0, who, access, "written", other, d));
            }
            if let Some(other) = unordered(&t.readers).filter(|_| writing) {
                return Err(race(program, c.0, who, "writes", "read", other, d));
            }
        }
        Ok(())
    }

    /// Registers an in-flight DMA reading `src` and writing `dst`.
    pub(crate) fn start_dma(&self, src: &[CellId], dst: &[CellId], key: DmaKey) {
        for c in src {
            self.tracking[c.0 as usize].inflight.lock().unwrap_or_else(|e| e.into_inner()).readers.push(key);
        }
        for c in dst {
            self.tracking[c.0 as usize].inflight.lock().unwrap_or_else(|e| e.into_inner()).writers.push(key);
        }
    }

    /// The DMA `key` has read these cells of its source.
    pub(crate) fn end_read(&self, src: &[CellId], key: DmaKey) {
        for c in src {
            let mut t = self.tracking[c.0 as usize].inflight.lock().unwrap_or_else(|e| e.into_inner());
            let at = t.readers.iter().position(|k| *k == key).expect("a registered reader");
            t.readers.swap_remove(at);
        }
    }

    /// The DMA `key` has written these cells of its destination.
    pub(crate) fn end_write(&self, dst: &[CellId], key: DmaKey) {
        for c in dst {
            let mut t = self.tracking[c.0 as usize].inflight.lock().unwrap_or_else(|e| e.into_inner());
            let at = t.writers.iter().position(|k| *k == key).expect("a registered writer");
            t.writers.swap_remove(at);
        }
    }
}
