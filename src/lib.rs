//! # semcheck
//!
//! A model checker for the semaphore and remote-DMA protocols that TPU collective kernels
//! (Pallas) are built from. semcheck takes a protocol, explores every interleaving of
//! devices and DMA completions, and either **proves** it correct for a mesh size or
//! returns the **shortest schedule that breaks it**.
//!
//! This crate is a thin façade over the workspace:
//!
//! * [`model`]: the semantics (mesh, kernel IR, DSL, symbolic values, step function);
//! * [`protocols`]: the seed collectives and their mutants;
//! * [`checker`]: the engines (the exhaustive explorer).
//!
//! Checking from your own `cargo test`:
//!
//! ```
//! let report = semcheck::check("all_gather", Some("shared-recv-sem"), 3, 1).unwrap();
//! let semcheck::Verdict::Violation(cex) = &report.verdict else { panic!("expected a violation") };
//! println!("{}", cex.violation);
//! for step in &cex.trace {
//!     println!("  {}", step.description);
//! }
//! ```

pub mod corpus;

pub use semcheck_checker as checker;
pub use semcheck_model as model;
pub use semcheck_protocols as protocols;

pub use semcheck_checker::{explore, Config, Report, Verdict};
pub use semcheck_model::{ModelError, Rule};

/// Checks a catalogue protocol (optionally a mutant) on `devices` devices with `repeat`
/// back-to-back invocations, with the default configuration (BFS, partial-order
/// reduction, no budget).
pub fn check(protocol: &str, mutant: Option<&str>, devices: usize, repeat: u32) -> Result<Report, ModelError> {
    let program = semcheck_protocols::find(protocol)?.program(devices, mutant, repeat)?;
    Ok(explore(&program, &Config::default()))
}
