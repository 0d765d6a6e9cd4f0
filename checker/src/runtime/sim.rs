//! The runtime on shuttle's controlled threads: the engine of `runtime/engine/` mounted on
//! [`super::sync::shuttle`].

#![allow(clippy::duplicate_mod, reason = "the engine is mounted once per backend on purpose (`os` is the other)")]

use super::sync::shuttle as sync;

#[path = "engine/device.rs"]
mod device;
#[path = "engine/dma.rs"]
mod dma;
#[path = "engine/memory.rs"]
mod memory;
#[path = "engine/semaphore.rs"]
mod semaphore;

pub use device::{run, run_into};
