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
//! ```
//! use semcheck_checker::{explore, Config, Verdict};
//!
//! let psum = semcheck_protocols::find("psum").unwrap();
//! let program = psum.program(2, None, 1).unwrap();
//! let report = explore(&program, &Config::default());
//! assert_eq!(report.verdict, Verdict::Proved);
//! ```

mod config;
mod explore;
mod report;
mod store;

pub use config::{Budget, Config, Reduction, Strategy};
pub use explore::{describe_schedule, explore};
pub use report::{Counterexample, Report, Stats, StopReason, TraceStep, Verdict};
pub mod runtime;
