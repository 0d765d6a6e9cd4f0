//! # semcheck-checker: the engines
//!
//! Three independent engines interpret the same kernel IR ([`semcheck_model::Program`])
//! and report violations of the same rules ([`semcheck_model::Rule`]):
//!
//! | engine | how | verdicts |
//! |---|---|---|
//! | [`explore`] | the model's pure step function, every reachable state | proved / violation / incomplete |
//! | shuttle ([`runtime::shuttle_engine`]) | [`runtime::sim`]: one shuttle thread per device and per DMA completion event, random or PCT schedules | violation / incomplete (never proved) |
//! | loom (`tests/loom.rs`, the `loom` feature) | [`runtime::os`] on loom's threads, N = 2 | violation / no violation within the stated bound |
//! | std ([`runtime::stress`]) | [`runtime::os`] on OS threads, real `f32` data | violation / incomplete (never proved) |
//!
//! ## What each engine can and cannot reach
//!
//! * **Explorer**: every interleaving of device steps and DMA events (`sent`, `received`,
//!   `done` of every DMA in any order). It is the only engine that proves.
//! * **Shuttle** ([`runtime::DmaMode::PerEvent`]): every completion event is a thread of
//!   its own, so every order the model allows is *a* schedule; the random and PCT
//!   schedulers sample them and a failing schedule replays exactly from its file. It
//!   reaches remote copies completing out of start order (pinned:
//!   `all_gather/shared-recv-sem` at N = 4 in `tests/shuttle.rs`, which needs a later
//!   step's bytes to land before an earlier step's). The random scheduler rarely delays one
//!   thread for long, so bugs that need one DMA to stay in flight across many steps take
//!   it thousands of iterations; PCT finds them at once (see the table in docs/engines.md).
//! * **Loom** ([`runtime::DmaMode::ByKind`]): loom's limit is 5 threads, so at N = 2 the
//!   run is the main thread (device 1), device 0, and two DMA engines, one completing the
//!   local copies and one the remote copies, each in start order. Loom explores every
//!   interleaving of these four threads (within the preemption bound of the case): a local
//!   copy and a remote copy complete in either order whoever issued them, relative to every
//!   device operation. It **cannot** reorder two remote copies (or two local copies)
//!   among themselves, nor deliver a remote copy before it is sent. One engine per issuing
//!   device ([`runtime::DmaMode::PerIssuer`]) was tried first and cannot reach
//!   `psum/no-capacity` at all (a device's local copy always completes before its next
//!   remote copy); pinned by `per_issuer_engines_miss_psum_no_capacity` in `tests/loom.rs`.
//!   Besides the runtime's own race rule, loom's `UnsafeCell` causality check sees every
//!   unsynchronised cell access (it reports `race`; pinned by
//!   `loom_causality_check_catches_psum_no_capacity_by_itself`, which switches the
//!   runtime's rule off), and loom's deadlock detection reports `deadlock`.
//! * **std** ([`runtime::stress`]): the OS schedules; nothing is controlled or replayable
//!   except the inputs' seed. Buggy schedules that need an unlucky delay are rare on real
//!   threads, so a mutant may run clean thousands of times (docs/engines.md gives the counts).
//!
//! The runtime observes the execution rather than re-running the step function: checks
//! happen at the moment a thread acts, so a check and the action it guards are not one
//! atomic step as in the model. This can only *miss* violations (a signal checked while
//! its target is inside the kernel and applied after it left), never invent one; shared
//! outputs are checked after every device thread has been joined (the last invocation's
//! only, when `repeat > 1`).
//!
//! ## The explorer
//!
//! [`explore`] is the exhaustive explicit-state explorer: it hashes every visited state,
//! explores breadth-first by default (so a counterexample is a shortest schedule of the
//! explored graph) or depth-first, and returns an [`Outcome`] with a [`Verdict`]:
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
//! use semcheck_model::dsl::trace;
//! use semcheck_model::ir::MemorySpace;
//! use semcheck_model::{compile, Mesh, Rule, Spec};
//!
//! // A right shift on a 2-ring that reads its landing buffer before waiting for it.
//! let kernel = trace("early_read", |k| {
//!     let x = k.input("x", MemorySpace::Vmem, &[]);
//!     let y = k.scratch("y", MemorySpace::Vmem, &[]);
//!     let o = k.output("o", MemorySpace::Vmem, &[]);
//!     let (send, recv) = (k.dma_semaphore("send"), k.dma_semaphore("recv"));
//!     let dma = k.make_async_remote_copy(&x, &y, &send, &recv, (k.axis_index("x") + 1) % 2);
//!     dma.start();
//!     dma.wait_send();
//!     o.assign(&y); // too early: the neighbour's copy into `y` may still be landing
//!     dma.wait_recv();
//! })
//! .unwrap();
//! let spec = Spec::plain(vec![]);
//! let program = compile(&kernel, &Mesh::ring(2).unwrap(), &spec, 1).unwrap();
//! let outcome = explore(&program, &Config::default());
//! assert_eq!(outcome.verdict.violation().map(|v| v.rule), Some(Rule::Race));
//! ```

mod config;
mod control;
pub mod counterexample;
mod explore;
pub mod focused;
mod outcome;
mod sequential_store;
pub mod single_run;
mod store;
mod values;
pub mod window;

pub use config::{Budget, Config, Reduction, Strategy, Symmetry, Threads};
pub use control::{Control, Progress, Stop};
pub use explore::{explore, explore_with, rotation_symmetry};
pub use outcome::{Counterexample, EngineRun, Outcome, Stats, StopReason, StressTally, Verdict};
pub mod runtime;
