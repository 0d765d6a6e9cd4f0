//! # semcheck-protocols: the collectives of the seed documents, and their mutants
//!
//! Every kernel here is written in the DSL of [`semcheck_model::dsl`] so that it reads
//! like the Pallas code of the seeds (`000_…` §1–§4 and `001_…`). Each protocol comes
//! with its specification (the expected output cells as symbolic values) and its mutants:
//! named one-idea changes a kernel author could plausibly make, each with the rule it is
//! expected to break (or none, when the sources leave the answer to the checker).

mod all_gather;
mod barrier;
mod catalogue;
mod expect;
mod guarded_shift;
mod ppermute;
mod producer_consumer;
mod psum;
mod psum_scatter;
mod split_ppermute;
mod tc_exchange;

pub use catalogue::{catalogue, find, Change, MeshKind, Mutant, Protocol};
