//! The packed global state of an execution.
//!
//! A state is a flat `[u32]`: one pc per device, one value per semaphore of the system,
//! one [`ValueId`] per cell, then the in-flight DMAs sorted by `(issuer, pc)`. Each DMA is
//! a header word (`issuer << 20 | pc << 2 | flags`) followed by the values its source
//! held when it started (the payload it will write). The encoding is canonical, so two
//! equal states are equal slices and hash alike.
//!
//! Under `--dma-landing cells` a copy of several cells lands cell by cell: the payload word
//! of a cell that has landed becomes [`LANDED`], so a partly landed copy is still one record
//! of the same length (no extra word), and it is received (or done) once every word is
//! [`LANDED`]. Under the default options no payload word is ever [`LANDED`].

use crate::event::DmaKey;
use crate::mesh::DeviceId;
use crate::program::{Op, Program};
use crate::semantics::DmaLanding;
use crate::value::ValueId;

/// Flag of a remote copy whose source has been read, or of a finished local copy.
pub const SENT: u32 = 1;
/// Flag of a remote copy whose destination has been written.
pub const RECEIVED: u32 = 2;

/// The payload word of a cell that has landed (under `--dma-landing cells`): its value is in
/// the destination now. No interned value has this id (a value table never holds 2^32
/// values).
pub const LANDED: u32 = u32::MAX;

/// An in-flight DMA as stored in a state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaRecord {
    /// Which DMA.
    pub key: DmaKey,
    /// `SENT` and `RECEIVED` bits.
    pub flags: u32,
    /// Offset of the header word in the state.
    pub offset: usize,
    /// Number of payload words after the header.
    pub payload: usize,
}

impl DmaRecord {
    pub(crate) fn header(key: DmaKey, flags: u32) -> u32 {
        ((key.issuer.0 as u32) << 20) | (key.pc << 2) | flags
    }

    /// What one cell of this copy of `bytes` adds to its semaphore as it lands
    /// (`--dma-landing cells`): a view's cells are of one buffer, so each carries the same
    /// share.
    pub(crate) fn cell_share(&self, bytes: u32) -> u32 {
        bytes / self.payload as u32
    }

    /// Whether the DMA still has cells to write: a local copy in flight always does, a
    /// remote copy until it is received.
    pub fn landing_pending(&self) -> bool {
        self.flags & RECEIVED == 0
    }

    /// Whether its `i`-th cell has landed (only ever under `--dma-landing cells`).
    pub fn cell_landed(&self, state: &[u32], i: usize) -> bool {
        state[self.offset + 1 + i] == LANDED
    }
}

impl Program {
    /// Word offset of the semaphores.
    pub fn sem_offset(&self) -> usize {
        self.devices.len()
    }

    /// Word offset of the cells.
    pub fn cell_offset(&self) -> usize {
        self.devices.len() + self.num_sems()
    }

    /// Word offset of the in-flight DMAs.
    pub fn dma_offset(&self) -> usize {
        self.cell_offset() + self.cells.len()
    }

    /// The state before any device has entered: pcs 0, semaphores 0, inputs filled.
    pub fn initial_state(&self) -> Vec<u32> {
        let mut s = vec![0u32; self.dma_offset()];
        let off = self.cell_offset();
        for (i, v) in self.initial_cells.iter().enumerate() {
            s[off + i] = v.0;
        }
        s
    }

    /// The pc of a device.
    pub fn pc(&self, state: &[u32], d: DeviceId) -> u32 {
        state[d.index()]
    }

    /// Whether the device has finished every invocation.
    pub fn finished(&self, state: &[u32], d: DeviceId) -> bool {
        state[d.index()] as usize >= self.devices[d.index()].ops.len()
    }

    /// The value of a cell.
    pub fn cell_value(&self, state: &[u32], cell: crate::program::CellId) -> ValueId {
        ValueId(state[self.cell_offset() + cell.0 as usize])
    }

    /// The value of a semaphore.
    pub fn sem_value(&self, state: &[u32], slot: crate::program::SemSlot) -> u32 {
        state[self.sem_offset() + slot.0 as usize]
    }

    /// Number of payload words of the DMA started at `pc` by `issuer`.
    pub fn payload_len(&self, key: DmaKey) -> usize {
        match self.devices[key.issuer.index()].ops[key.pc as usize] {
            Op::LocalDma { src, .. } | Op::RemoteDma { src, .. } => src.len as usize,
            _ => 0,
        }
    }

    /// The in-flight DMAs of a state, in canonical order.
    pub fn dmas<'s>(&'s self, state: &'s [u32]) -> impl Iterator<Item = DmaRecord> + 's {
        let mut i = self.dma_offset();
        std::iter::from_fn(move || {
            if i >= state.len() {
                return None;
            }
            let h = state[i];
            let key = DmaKey { issuer: DeviceId((h >> 20) as u16), pc: (h >> 2) & 0x3FFFF };
            let payload = self.payload_len(key);
            let rec = DmaRecord { key, flags: h & 3, offset: i, payload };
            i += 1 + payload;
            Some(rec)
        })
    }

    /// Whether a DMA lands cell by cell: a copy of several cells under `--dma-landing cells`.
    pub fn lands_by_cell(&self, rec: &DmaRecord) -> bool {
        self.lands_by_cells(rec.payload)
    }

    /// Whether a copy of `cells` cells lands cell by cell: several cells under
    /// `--dma-landing cells`.
    pub fn lands_by_cells(&self, cells: usize) -> bool {
        cells > 1 && self.semantics.dma_landing == DmaLanding::Cells
    }

    /// The op that started a DMA.
    pub fn dma_op(&self, key: DmaKey) -> Op {
        self.devices[key.issuer.index()].ops[key.pc as usize]
    }
}
