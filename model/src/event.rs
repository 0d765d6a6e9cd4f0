//! The events of an execution: a device's next operation, or a DMA completion.

use std::fmt;

use serde::Serialize;

use crate::error::{ErrorKind, ModelError};
use crate::mesh::DeviceId;
use crate::program::{Op, Program};

/// Identifies a DMA of one execution: the issuing device and the pc of its start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct DmaKey {
    /// The device that started it.
    pub issuer: DeviceId,
    /// The pc of the start operation in the issuer's program.
    pub pc: u32,
}

/// One step of an execution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Event {
    /// The device runs its next operation.
    Step(DeviceId),
    /// A remote copy's source has been read (issuer's `send_sem += size`).
    Sent(DmaKey),
    /// A remote copy's destination has been written (target's `recv_sem += size`).
    Received(DmaKey),
    /// A local copy has completed.
    Done(DmaKey),
    /// Under [`DmaLanding::Cells`](crate::DmaLanding::Cells), one cell of a copy of several
    /// cells lands: the copy's `i`-th destination cell is written and that cell's bytes are
    /// added to the receive semaphore (to the copy's semaphore for a local copy). The last
    /// cell to land completes the receipt (or the local copy). A copy of one cell lands by
    /// [`Event::Received`] or [`Event::Done`] under every option.
    CellLanded(DmaKey, u32),
}

impl Event {
    /// The DMA an event completes part of, `None` for a device step.
    pub fn dma(self) -> Option<DmaKey> {
        match self {
            Event::Step(_) => None,
            Event::Sent(k) | Event::Received(k) | Event::Done(k) | Event::CellLanded(k, _) => Some(k),
        }
    }

    /// The device whose program the event belongs to: the device that steps, or the
    /// device that started the DMA.
    pub fn issuer(self) -> DeviceId {
        match self {
            Event::Step(d) => d,
            Event::Sent(k) | Event::Received(k) | Event::Done(k) | Event::CellLanded(k, _) => k.issuer,
        }
    }

    /// Whether the event writes (part of) a DMA's destination.
    pub fn is_landing(self) -> bool {
        matches!(self, Event::Received(_) | Event::Done(_) | Event::CellLanded(..))
    }
}

/// Bits of the pc in an encoded event.
const PC_BITS: u32 = 18;
/// Bits of the device in an encoded event.
const DEV_BITS: u32 = 12;

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Step(d) => write!(f, "{d} step"),
            Event::Sent(k) => write!(f, "dma {}@{} sent", k.issuer, k.pc),
            Event::Received(k) => write!(f, "dma {}@{} received", k.issuer, k.pc),
            Event::Done(k) => write!(f, "dma {}@{} done", k.issuer, k.pc),
            Event::CellLanded(k, i) => write!(f, "dma {}@{} cell {i} landed", k.issuer, k.pc),
        }
    }
}

/// Numbers the cells of every copy of several cells, so that a cell landing fits in the
/// `u32` [`Program::encode_event`] gives the explorer to store per state. Built by
/// [`Program::with_semantics`] under [`DmaLanding::Cells`](crate::DmaLanding::Cells); empty
/// otherwise.
#[derive(Clone, Debug, Default)]
pub struct CellSlots {
    /// Per device: `(pc, first slot)` of each copy of several cells it starts, in pc order;
    /// the copy's cell `i` is slot `first + i`.
    per_device: Vec<Vec<(u32, u32)>>,
}

/// Slots a device can number: the low bits of an encoded step, minus the step itself.
const MAX_SLOTS: u32 = (1 << PC_BITS) - 1;

impl CellSlots {
    /// Numbers the cells of the copies of several cells of `program`, or says which device
    /// has more than an encoded event can name.
    pub(crate) fn build(program: &Program) -> Result<CellSlots, ModelError> {
        let mut per_device = Vec::with_capacity(program.num_devices());
        for (d, dp) in program.devices.iter().enumerate() {
            let mut slots = Vec::new();
            let mut next = 0u32;
            for (pc, op) in dp.ops.iter().enumerate() {
                if let Op::LocalDma { src, .. } | Op::RemoteDma { src, .. } = op {
                    if src.len > 1 {
                        slots.push((pc as u32, next));
                        next = next.saturating_add(src.len);
                    }
                }
            }
            if next > MAX_SLOTS {
                return Err(ModelError::new(
                    ErrorKind::TooLarge,
                    format!(
                        "kernel {}: with --dma-landing cells, {} copies {next} cells in copies of several cells, more than the {MAX_SLOTS} a counterexample can name",
                        program.kernel,
                        DeviceId(d as u16)
                    ),
                ));
            }
            per_device.push(slots);
        }
        Ok(CellSlots { per_device })
    }
}

impl Program {
    /// Packs an event of this program in a `u32`: 2 bits kind, 12 bits device, 18 bits pc
    /// for `sent`, `received` and `done`; a step has kind 0 and low bits 0; a cell landing
    /// has kind 0, the issuer, and `1 +` the cell's slot in the low bits (see [`CellSlots`]).
    pub fn encode_event(&self, event: Event) -> u32 {
        let (tag, d, low) = match event {
            Event::Step(d) => (0, d, 0),
            Event::Sent(k) => (1, k.issuer, k.pc),
            Event::Received(k) => (2, k.issuer, k.pc),
            Event::Done(k) => (3, k.issuer, k.pc),
            Event::CellLanded(k, i) => {
                let slots = &self.cell_slots.per_device[k.issuer.index()];
                let at = slots.binary_search_by_key(&k.pc, |&(pc, _)| pc).expect("a copy of several cells");
                (0, k.issuer, 1 + slots[at].1 + i)
            }
        };
        (tag << (DEV_BITS + PC_BITS)) | ((d.0 as u32) << PC_BITS) | low
    }

    /// Unpacks an event packed by [`Program::encode_event`].
    pub fn decode_event(&self, word: u32) -> Event {
        let tag = word >> (DEV_BITS + PC_BITS);
        let d = DeviceId(((word >> PC_BITS) & ((1 << DEV_BITS) - 1)) as u16);
        let low = word & ((1 << PC_BITS) - 1);
        let key = DmaKey { issuer: d, pc: low };
        match tag {
            0 if low == 0 => Event::Step(d),
            0 => {
                let slots = &self.cell_slots.per_device[d.index()];
                let slot = low - 1;
                let (pc, first) = slots[slots.partition_point(|&(_, first)| first <= slot) - 1];
                Event::CellLanded(DmaKey { issuer: d, pc }, slot - first)
            }
            1 => Event::Sent(key),
            2 => Event::Received(key),
            _ => Event::Done(key),
        }
    }
}
