//! # semcheck-model: the semantics semcheck checks
//!
//! This crate is the project's own statement of the semantics of Pallas TPU
//! collectives, the contract every engine interprets. Its sources are the JAX
//! documentation's ring collectives ("Distributed Computing in Pallas for TPUs": ppermute,
//! all_gather, psum, bidirectional psum_scatter, with their step-by-step traversal tables
//! for N = 4), notes on TensorCore-to-TensorCore remote DMA and producer/consumer
//! synchronisation (with the instruction listings of the barrier and of `wait_recv`), and
//! JAX's own build rules (`jax/_src/tpu_custom_call.py`). It holds:
//!
//! * [`mesh`]: devices and named axes (`x` for the ring, `tc` for TensorCores);
//! * [`ir`]: the kernel IR, plain data produced by front ends;
//! * [`dsl`]: a Rust front end that traces Pallas-shaped code into the IR;
//! * [`compile`](mod@compile): resolving a kernel on a mesh into per-device
//!   straight-line [`program::Program`]s, rejecting malformed kernels;
//! * [`value`]: symbolic cell values in the seed's notation (`T2(2+1+0)`);
//! * [`state`], [`step`](mod@step), [`event`]: the packed global state and the pure step
//!   function (events enabled in a state, and the state after one);
//! * [`violation`]: the rules (below) and the violations that break them;
//! * [`reduction`]: the events that may be explored alone (partial-order reduction);
//! * [`ring`]: the ring structure read off the compiled programs (rotation symmetry,
//!   communication radius);
//! * [`symmetry`]: one representative state per orbit of the ring's rotations;
//! * [`semantics`]: the hardware assumptions a verdict rests on, as options;
//! * [`case`]: what one check is about (kernel source, mesh size, repeat, assumptions);
//! * [`window`]: ring windows, and the soundness argument for checking every ring size
//!   with them (window soundness, confluence);
//! * [`stmt_text`]: a statement in the kernel's own words, for reports;
//! * [`mutate`]: single-edit mutants of a kernel (which synchronisation is load-bearing);
//! * [`remap`]: renumbering a kernel's buffers and semaphores, to merge the kernels of a
//!   program of several kernels ([`ir::Launch`]);
//! * [`coverage`]: the statements a check never executed (a proof that is vacuous there).
//!
//! ## What counts as a bug: the rules
//!
//! Every execution is checked against five rules ([`Rule`]); a violation names the rule,
//! the devices, the cells or semaphores, and the schedule that reaches it.
//!
//! 1. **race**: a cell is read while a write to it is in flight, or written while a read or
//!    write of it is in flight (local access against a DMA, or two DMAs);
//! 2. **wrong-result** (silent corruption): a device exits with an output cell that differs
//!    from the specification (each input contribution exactly once, where it belongs);
//! 3. **deadlock**: no event is enabled and some device has not finished (the report gives
//!    who waits on which semaphore and who could still signal it);
//! 4. **semaphore-leak**: a semaphore is not zero, or a DMA this device started is still
//!    unsent (a local copy not done), when the device exits;
//! 5. **outside-kernel**: a DMA lands in, or a non-barrier semaphore is signalled on, a
//!    device that has not entered this invocation or has already left it.
//!
//! A kernel is **proved** for a mesh size and a repeat count only when every reachable
//! state was explored with no bound on depth, preemptions or schedules.
//!
//! ## The semantics, and the choices made where the sources are silent
//!
//! * **Devices** run the same kernel; each walks the grid row-major, one body per index.
//!   Every device's run (all invocations) compiles to a straight-line program, because
//!   `pl.when` conditions depend only on `axis_index`, `program_id` and constants.
//! * **Lifecycle.** Each invocation is `Enter` → body → `Exit`; entering is an event of its
//!   own, so other devices can act before a device has entered. At `Enter` the device's own
//!   buffers are reset (inputs to their atoms, everything else to `Undef`) and its
//!   non-barrier semaphores to 0. Shared HBM buffers are initialised once, before the first
//!   invocation.
//! * **Implicit entry barrier, as JAX builds it** (`jax/_src/tpu_custom_call.py`). A
//!   kernel that communicates (a remote copy, or a signal with a `device_id`, in any
//!   branch), does not take the barrier semaphore and does not set `skip_device_barrier`
//!   gets the compiler-inserted entry barrier: no device starts its body before every
//!   device has entered (seed 001 §1 shows its instructions). JAX refuses to build a kernel
//!   that takes the barrier semaphore without a `collective_id`, or has a `collective_id`
//!   without taking it (unless `allow_collective_id_without_custom_barrier`); [`compile()`]
//!   refuses the same kernels with JAX's reason, so a verdict is always about a kernel
//!   that can exist. The catalogue's `no-barrier` mutants therefore drop the barrier calls
//!   *and* the `collective_id`, and set `skip_device_barrier` (without it JAX's own
//!   barrier would make them safe).
//! * **Barrier semaphore.** One per kernel, persistent across invocations, never reset;
//!   signalling it is allowed whatever the target's lifecycle. It is exempt from the
//!   zero-at-exit check of each invocation (a peer already in the next invocation may
//!   legitimately have signalled it) and must instead be 0 once every device has finished
//!   its last invocation.
//! * **Scoped semaphores** (`run_scoped`) live for the whole kernel in the model and are
//!   checked at kernel exit like other scratch semaphores.
//! * **DMAs.** `start` captures the source values; a remote copy then completes by two
//!   events, *sent* and *received*, in either order, a local copy by *done*. The source is
//!   being read until the first of *sent*/*received*, the destination written until
//!   *received*. `wait_recv` waits on the receive semaphore of the current device.
//!   DMA semaphores count bytes: a DMA adds its bytes, a wait waits for its descriptor's.
//! * **Hardware assumptions, as options** ([`Semantics`], one per [`Program`]):
//!   `--dma-order any` (default: DMAs complete in any order, also two between one pair of
//!   devices) or `pair-fifo` (a pair's DMAs are received in start order, a device's local
//!   copies done in start order); `--dma-landing whole` (default: a copy lands in one
//!   step) or `cells` (a copy of several cells lands cell by cell in any order, each cell
//!   adding its share of the bytes, so a wait for part of a copy can pass with part of it
//!   landed). A proof under `any` holds under `pair-fifo`, one under `cells` holds under
//!   `whole`. [`semantics::CHOICES`] (printed by `semcheck semantics`) lists every choice of
//!   this section with its options, default and the evidence from the seeds and JAX.
//! * **Outstanding DMAs at exit.** A device may exit while a remote copy it issued has been
//!   sent but not received: receipt is the target's business, and a landing after the
//!   target left is reported by rule 5. A local copy not done, or a remote copy not yet
//!   sent, at the issuer's exit is a `semaphore-leak`.
//! * **Outputs** of a device are checked at its exit; outputs in shared buffers when the
//!   last device exits the invocation.
//! * **Values.** `Undef + x = Undef`; functions (`vmem * 2.0`) are uninterpreted.
//!
//! ## Limitations
//!
//! * **Per size, not parametric.** A proof covers one mesh size and one repeat count
//!   (`tests/protocols.rs`, `tests/open_questions.rs` list the sizes proved); nothing is
//!   claimed for sizes not checked. Ring sizes beyond exact exploration are decided one by
//!   one with [`window`]s and one run each, under the assumptions stated there.
//! * **Cells, not bytes.** Buffers are split at the granularity the kernel slices them;
//!   two views that partly overlap one cell are treated as touching the whole cell, and
//!   data inside a cell is one symbolic value (`tests/rules.rs`).
//! * **Every completion order is possible** (under `--dma-order any`). DMA engines are
//!   modelled with no bandwidth: a schedule the checker reports may be one hardware makes
//!   rare, never one the semantics forbids. Partial arrival is visible to semaphores only
//!   under `--dma-landing cells`, and at the granularity of cells.
//! * **No arithmetic.** Sums are multisets and other computations uninterpreted functions,
//!   so a kernel is checked for *which* contributions reach an output, not for rounding.
//! * **Scoped semaphores** live for the whole kernel, and shared HBM buffers are initialised
//!   once per run, not per invocation (see above).
//! * **Implicit entry barrier** decided by JAX's rule (above), from the kernel alone:
//!   synchronisation XLA may add around the `pallas_call` is not modelled
//!   (`tests/protocols.rs`).

pub mod case;
pub mod compile;
pub mod coverage;
pub mod dsl;
pub mod error;
pub mod event;
pub mod expr;
pub mod formula;
pub mod ir;
pub mod mesh;
pub mod mutate;
pub mod program;
pub mod reduction;
pub mod remap;
pub mod ring;
pub mod semantics;
pub mod spec;
pub mod state;
pub mod step;
pub mod stmt_text;
mod stubborn;
pub mod symmetry;
pub mod value;
pub mod violation;
pub mod violations;
pub mod window;

pub use case::{Case, Source};
pub use compile::compile;
pub use error::{ErrorKind, ModelError};
pub use event::{DmaKey, Event};
pub use mesh::{DeviceId, Mesh};
pub use program::Program;
pub use semantics::{DmaLanding, DmaOrder, Semantics};
pub use spec::{Expectation, Expected, Spec};
pub use step::StepOutcome;
pub use value::{Atom, Notation, ValueId, ValueTable};
pub use violation::{Rule, Violation};
