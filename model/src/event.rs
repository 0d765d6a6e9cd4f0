//! The events of an execution: a device's next operation, or a DMA completion.

use std::fmt;

use serde::Serialize;

use crate::mesh::DeviceId;

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
}

const PC_BITS: u32 = 18;
const DEV_BITS: u32 = 12;

impl Event {
    /// Packs the event in a `u32` (2 bits kind, 12 bits device, 18 bits pc).
    pub fn encode(self) -> u32 {
        let (tag, d, pc) = match self {
            Event::Step(d) => (0, d, 0),
            Event::Sent(k) => (1, k.issuer, k.pc),
            Event::Received(k) => (2, k.issuer, k.pc),
            Event::Done(k) => (3, k.issuer, k.pc),
        };
        (tag << (DEV_BITS + PC_BITS)) | ((d.0 as u32) << PC_BITS) | pc
    }

    /// Unpacks an event packed by [`Event::encode`].
    pub fn decode(word: u32) -> Event {
        let tag = word >> (DEV_BITS + PC_BITS);
        let d = DeviceId(((word >> PC_BITS) & ((1 << DEV_BITS) - 1)) as u16);
        let key = DmaKey { issuer: d, pc: word & ((1 << PC_BITS) - 1) };
        match tag {
            0 => Event::Step(d),
            1 => Event::Sent(key),
            2 => Event::Received(key),
            _ => Event::Done(key),
        }
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Step(d) => write!(f, "{d} step"),
            Event::Sent(k) => write!(f, "dma {}@{} sent", k.issuer, k.pc),
            Event::Received(k) => write!(f, "dma {}@{} received", k.issuer, k.pc),
            Event::Done(k) => write!(f, "dma {}@{} done", k.issuer, k.pc),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_through_u32() {
        let key = DmaKey { issuer: DeviceId(4095), pc: (1 << 18) - 1 };
        for e in [Event::Step(DeviceId(7)), Event::Sent(key), Event::Received(key), Event::Done(key)] {
            assert_eq!(Event::decode(e.encode()), e);
        }
    }
}
