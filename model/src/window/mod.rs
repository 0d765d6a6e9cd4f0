//! # Ring windows: the local rules of an N-ring checked on a few devices
//!
//! (The soundness argument is written out below, after the definitions.)

mod build;
mod reduction;
mod step;

pub use build::{check_conditions, ring_distance, Inapplicable};
pub use reduction::WindowScratch;
pub use step::WindowEvent;

use crate::mesh::DeviceId;
use crate::program::{Program, SemSlot};
use crate::violation::Rule;

/// The rules a window decides: the *local* rules, each about one device's cells,
/// semaphores and lifecycle.
pub const LOCAL_RULES: [Rule; 3] = [Rule::Race, Rule::OutsideKernel, Rule::SemaphoreLeak];

/// A class of environment tokens: increments that devices outside the window make to
/// one semaphore of a tracked device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// The tracked device whose semaphore is incremented.
    pub target: DeviceId,
    /// The semaphore.
    pub sem: SemSlot,
    /// The increment of one token (a signal's `inc`, a copy's byte count).
    pub inc: u32,
    /// The invocation the increments belong to (they can only arrive while the target
    /// runs it), or `None` for the barrier semaphore (no such constraint).
    pub invocation: Option<u32>,
    /// How many such increments the untracked devices' programs make: the most tokens of
    /// this class a window execution may use.
    pub budget: u32,
    /// The untracked devices that make them.
    pub sources: Vec<DeviceId>,
}

/// The window of a compiled ring program around one device (the *center*): the devices
/// within a ring distance `radius` of it run their programs exactly; the others are
/// dropped and replaced by environment [`Token`]s; cell values are dropped; the local
/// rules are checked at the center only.
#[derive(Clone, Debug)]
pub struct Window<'p> {
    program: &'p Program,
    center: DeviceId,
    radius: usize,
    /// The tracked devices, in id order.
    tracked: Vec<DeviceId>,
    /// Per device of the ring: its position in `tracked`, or `u32::MAX`.
    position: Vec<u32>,
    tokens: Vec<Token>,
    /// Per tracked device and local semaphore index: the token classes into it.
    tokens_of: Vec<Vec<u32>>,
    /// Static indexes for the reduction.
    indexes: reduction::Indexes,
}

impl<'p> Window<'p> {
    /// The program of the whole ring.
    pub fn program(&self) -> &'p Program {
        self.program
    }

    /// The device whose rules are checked.
    pub fn center(&self) -> DeviceId {
        self.center
    }

    /// The window radius: devices within this ring distance of the center are tracked.
    pub fn radius(&self) -> usize {
        self.radius
    }

    /// The tracked devices, in id order.
    pub fn tracked(&self) -> &[DeviceId] {
        &self.tracked
    }

    /// Whether a device is tracked.
    pub fn is_tracked(&self, d: DeviceId) -> bool {
        self.position.get(d.index()).is_some_and(|&p| p != u32::MAX)
    }

    /// Whether the window tracks every device of the ring (no environment left: the
    /// window is then the exact system without values, checked at the center).
    pub fn covers_ring(&self) -> bool {
        self.tracked.len() == self.program.num_devices()
    }

    /// The environment token classes.
    pub fn tokens(&self) -> &[Token] {
        &self.tokens
    }
}
