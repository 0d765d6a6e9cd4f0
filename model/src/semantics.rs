//! The hardware assumptions a verdict rests on, named and switchable.
//!
//! The seeds do not settle every behaviour of the DMA engines; each such choice is an
//! option here, with the default semcheck has always used. Every engine interprets a
//! [`crate::Program`] under its [`Semantics`] (or refuses an option it cannot honour).

use std::fmt;

use serde::{Deserialize, Serialize};

/// May a later DMA between the same two devices land before an earlier one?
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DmaOrder {
    /// Every DMA completes at any time after its start, in any order relative to every
    /// other DMA, including other DMAs between the same two devices.
    #[default]
    Any,
    /// DMAs from one source device to one destination device are received in the order
    /// they were started (and a device's local copies are done in start order).
    PairFifo,
}

/// How a copy of several cells lands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DmaLanding {
    /// A copy lands whole: all its cells at once, and its bytes are added to the receive
    /// semaphore in one step.
    #[default]
    Whole,
    /// A copy lands cell by cell in any order; each cell adds its bytes to the receive
    /// semaphore as it lands, so a wait for fewer bytes can pass with part of it landed.
    Cells,
}

/// The hardware assumptions of one check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Semantics {
    /// DMA delivery order.
    pub dma_order: DmaOrder,
    /// DMA landing granularity.
    pub dma_landing: DmaLanding,
}

impl DmaOrder {
    /// The name on the command line: `any`, `pair-fifo`.
    pub fn name(self) -> &'static str {
        match self {
            DmaOrder::Any => "any",
            DmaOrder::PairFifo => "pair-fifo",
        }
    }

    /// The option with this name.
    pub fn from_name(name: &str) -> Option<DmaOrder> {
        [DmaOrder::Any, DmaOrder::PairFifo].into_iter().find(|o| o.name() == name)
    }
}

impl DmaLanding {
    /// The name on the command line: `whole`, `cells`.
    pub fn name(self) -> &'static str {
        match self {
            DmaLanding::Whole => "whole",
            DmaLanding::Cells => "cells",
        }
    }

    /// The option with this name.
    pub fn from_name(name: &str) -> Option<DmaLanding> {
        [DmaLanding::Whole, DmaLanding::Cells].into_iter().find(|o| o.name() == name)
    }
}

impl Semantics {
    /// Whether every option has its default value.
    pub fn is_default(&self) -> bool {
        *self == Semantics::default()
    }
}

impl fmt::Display for Semantics {
    /// `dma-order=any dma-landing=whole`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dma-order={} dma-landing={}", self.dma_order.name(), self.dma_landing.name())
    }
}
