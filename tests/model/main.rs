//! The model and the explorer through the library: the catalogue's verdicts, each rule,
//! the seed documents' tables, state counts, the soundness of the reductions
//! (partial-order, rotation symmetry) and of parallel exploration, the ring structure,
//! malformed kernels, counterexamples, coverage and the trace format; and the links of the
//! README and docs/.
//!
//! One test executable for all of them: each executable links the whole crate graph, so
//! few executables build much faster than one per file.

mod assumptions;
mod counterexamples;
mod coverage;
mod docs_links;
mod golden_counts;
mod index_dims;
mod malformed;
mod modes;
mod open_questions;
mod protocols;
#[path = "../common/random_kernel.rs"]
mod random_kernel;
mod reduction_random;
mod reduction_soundness;
mod ring;
mod rules;
mod seed_tables;
mod spec_once;
mod state_count;
mod trace_fuzz;
mod window;
mod window_reduction;
