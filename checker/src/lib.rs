//! # semcheck-checker: the engines
//!
//! [`explore`] is the exhaustive explicit-state explorer: it hashes every visited state,
//! explores breadth-first by default (so a counterexample is a shortest schedule of the
//! explored graph) or depth-first, and returns a [`Report`] with a [`Verdict`]:
//!
//! * `Proved` only when every reachable state was explored with no bound;
//! * `Violation` with the rule, a message naming the devices, cells and semaphores, and
//!   the schedule;
//! * `Incomplete` when a state, time or memory budget stopped it, with how far it got.
//!
//! [`counterexample`] turns a violation into something people can read and replay: stable
//! event names, the versioned trace file, replay against the current model, a minimiser,
//! the lock-step simulator of the seed's traversal tables, and text, table, Mermaid, DOT
//! and JSON renderings.
//!
//! ## Debugging a counterexample
//!
//! 1. `semcheck trace P --mutant M --devices N` prints the minimised schedule as a column
//!    per device; `--format table` shows every slot and semaphore after each event, which
//!    is where a run-ahead becomes visible (a slot written before its owner got there).
//! 2. `--format dot | dot -Tsvg` draws why each event could happen (program order, the
//!    signal or DMA a wait consumed); a wait satisfied by the wrong DMA stands out.
//! 3. `--format trace > counterexamples/P--M.trace` keeps it; `cargo test` replays it.
//!
//! ```
//! use semcheck_checker::{explore, Config, Verdict};
//!
//! let psum = semcheck_protocols::find("psum").unwrap();
//! let program = psum.program(2, None, 1).unwrap();
//! let report = explore(&program, &Config::default());
//! assert_eq!(report.verdict, Verdict::Proved);
//! ```

mod config;
pub mod counterexample;
mod explore;
mod report;
mod store;

pub use config::{Budget, Config, Reduction, Strategy};
pub use explore::{describe_schedule, explore};
pub use report::{Counterexample, Report, Stats, StopReason, TraceStep, Verdict};
