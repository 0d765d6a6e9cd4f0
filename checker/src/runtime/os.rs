//! The runtime on `std` threads, or on loom's with the `loom` feature: the engine of
//! `runtime/engine/` mounted on [`super::sync::os`].

use super::sync::os as sync;

#[path = "engine/device.rs"]
mod device;
#[path = "engine/dma.rs"]
mod dma;
#[path = "engine/memory.rs"]
mod memory;
#[path = "engine/semaphore.rs"]
mod semaphore;

pub use device::{run, run_into};
