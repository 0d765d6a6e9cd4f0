//! The threaded runtime's engines (shuttle, stress) against the corpus, and shuttle's
//! counterexamples replayed on the model and under shuttle. The loom suite is
//! `tests/loom.rs`, built with the `loom` feature.

mod assumptions;
mod engines;
// Shared with tests/model, which uses more of it (single kernels, programs).
#[path = "../common/random_kernel.rs"]
#[allow(dead_code)]
mod random_kernel;
mod shuttle;
