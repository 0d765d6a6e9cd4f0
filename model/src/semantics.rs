//! The hardware assumptions a verdict rests on, named and switchable.
//!
//! The seeds do not settle every behaviour of the DMA engines; each such choice is an
//! option here, with the default semcheck has always used. Every engine interprets a
//! [`crate::Program`] under its [`Semantics`] (or refuses an option it cannot honour).

use std::fmt;

use serde::{Deserialize, Serialize};

/// May a later DMA between the same two devices land before an earlier one?
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DmaOrder {
    /// Every DMA completes at any time after its start, in any order relative to every
    /// other DMA, including other DMAs between the same two devices.
    #[default]
    Any,
    /// DMAs from one source device to one destination device are received in the order
    /// they were started (and a device's local copies are done in start order).
    PairFifo,
}

/// How a copy of several cells lands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DmaLanding {
    /// A copy lands whole: all its cells at once, and its bytes are added to the receive
    /// semaphore in one step.
    #[default]
    Whole,
    /// A copy lands cell by cell in any order; each cell adds its bytes to the receive
    /// semaphore as it lands, so a wait for fewer bytes can pass with part of it landed.
    Cells,
}

/// The hardware assumptions of one check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Semantics {
    /// DMA delivery order.
    pub dma_order: DmaOrder,
    /// DMA landing granularity.
    pub dma_landing: DmaLanding,
}

impl DmaOrder {
    /// The name on the command line: `any`, `pair-fifo`.
    pub fn name(self) -> &'static str {
        match self {
            DmaOrder::Any => "any",
            DmaOrder::PairFifo => "pair-fifo",
        }
    }

    /// The option with this name.
    pub fn from_name(name: &str) -> Option<DmaOrder> {
        [DmaOrder::Any, DmaOrder::PairFifo].into_iter().find(|o| o.name() == name)
    }
}

impl DmaLanding {
    /// The name on the command line: `whole`, `cells`.
    pub fn name(self) -> &'static str {
        match self {
            DmaLanding::Whole => "whole",
            DmaLanding::Cells => "cells",
        }
    }

    /// The option with this name.
    pub fn from_name(name: &str) -> Option<DmaLanding> {
        [DmaLanding::Whole, DmaLanding::Cells].into_iter().find(|o| o.name() == name)
    }
}

impl Semantics {
    /// Whether every option has its default value.
    pub fn is_default(&self) -> bool {
        *self == Semantics::default()
    }
}

impl fmt::Display for Semantics {
    /// `dma-order=any dma-landing=whole`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dma-order={} dma-landing={}", self.dma_order.name(), self.dma_landing.name())
    }
}

/// One modelling choice a verdict rests on: its options, the default, and the evidence
/// for it (what the seeds and JAX say). [`CHOICES`] lists them all; `semcheck semantics`
/// prints them.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Choice {
    /// A stable name.
    pub name: &'static str,
    /// The command-line option that switches it, `None` for a fixed choice.
    pub flag: Option<&'static str>,
    /// The choices the option offers (or the one fixed choice), each with its meaning.
    pub options: &'static [(&'static str, &'static str)],
    /// The choice semcheck makes unless told otherwise.
    pub default: &'static str,
    /// Why, and what the seeds and JAX say, with where they say it.
    pub evidence: &'static [&'static str],
}

/// Every modelling choice, the two options first.
pub const CHOICES: &[Choice] = &[
    Choice {
        name: "dma-order",
        flag: Some("--dma-order"),
        options: &[
            (
                "any",
                "every DMA completes at any time after its start, in any order relative to every other DMA, also between the same two devices",
            ),
            (
                "pair-fifo",
                "DMAs from one device to one device are received in the order they were started (a device's local copies are done in start order); only receipt is ordered, not `sent` (the issuer's send semaphore): the weakest assumption under which a receiver may reuse one receive semaphore per neighbour",
            ),
        ],
        default: "any",
        evidence: &[
            "seed 000 §2 (all_gather) allocates one receive semaphore per step, recv_sems.at[step], \"so that several in-flight DMAs do not reuse one receive counter\"; the catalogue's all_gather --mutant shared-recv-sem breaks under any (it requires dma-reorder) and is proved under pair-fifo (`semcheck check all_gather --mutant shared-recv-sem --devices 3`)",
            "JAX's tutorial (docs/pallas/tpu/distributed.md, all-gather): \"we allocate `num_devices-1` semaphores so there is no risk of reuse. While this race condition is unlikely to happen on such a small kernel, on larger kernels there is more chance for devices to fall out of sync and potentially cause a silent failure\"",
            "JAX's TPU interpret mode (jax/_src/pallas/mosaic/interpret/shared_memory.py, Semaphore.wait, with the default dma_execution_mode=\"on_wait\") runs a waiting device's pending DMAs last-started first: \"This approach will tend to run DMAs as late as possible, as well as out-of-order\"",
            "against: JAX's shipped all-gather (jax/experimental/pallas/ops/tpu/all_gather.py, ag_kernel) reuses recv_sem[0] and recv_sem[1] in every step of each direction; it is correct only under pair-fifo (docs/public-kernels.md; tests/model/assumptions.rs models its shape: a race under any, proved under pair-fifo)",
            "no public statement on whether the interconnect delivers two DMAs between one pair of devices in order was found; any stays the default because a proof under any also holds under pair-fifo, and a violation says when it needs the reordering (\"requires dma-reorder\")",
        ],
    },
    Choice {
        name: "dma-landing",
        flag: Some("--dma-landing"),
        options: &[
            (
                "whole",
                "a copy lands all at once: its cells are written and its bytes added to the receive semaphore in one step",
            ),
            (
                "cells",
                "a copy of several cells lands cell by cell, in any order; each cell adds its share of the bytes to the receive semaphore as it lands, so a wait for fewer bytes than the copy can pass with part of it landed; each cell is read and written until it lands",
            ),
        ],
        default: "whole",
        evidence: &[
            "seed 001's listing of a remote copy: `dma.general ... length=8 ... dst_flag=[sflag:54]`, then `vwait.ge [sflag:54], 8` for wait_recv; the peer's receive semaphore gains the copy's length \"after the data arrives\": the receive semaphore counts the copy's data",
            "JAX's tutorial (DMA semaphores): \"DMA semaphores can be thought of as integer-valued progress trackers. On DMA start, the local device will begin to increment the value of `send_sem` and the receiver's `recv_sem` asynchronously\"; partial progress is visible to a wait, but in which order the parts of a copy land is not documented",
            "JAX's TPU interpret mode lands a DMA whole (interpret_pallas_call.py, execute_write: one store of the whole destination, then one signal of the copy's data_size)",
            "no seed kernel waits with a smaller descriptor than its copy, and every copy of the seed kernels is one cell, so cells changes no catalogue verdict and no state count; whole stays the default; cells is the conservative choice for a kernel that waits for part of a copy (protocols/pallas/half_wait.py: proved with whole, a race with cells)",
        ],
    },
    Choice {
        name: "dma-semaphore-units",
        flag: None,
        options: &[(
            "bytes",
            "a DMA adds its byte count to its semaphores; .wait_send() and .wait_recv() wait for the byte count of their descriptor",
        )],
        default: "bytes",
        evidence: &[
            "seed 001's listing: a copy of `length=8` adds 8 to the send semaphore (`vwait.ge [sflag:53], 8` for wait_send) and 8 to the peer's receive semaphore (`vwait.ge [sflag:54], 8` for wait_recv): each wait is for the size of its own descriptor; bytes are proportional to that length, so the verdicts are the same",
            "JAX's tutorial (DMA semaphores): \"Waiting on a semaphore will block until the value of the semaphore reaches the total bytes of data sent/received\", though \"the value may not represent exactly the number of bytes sent\"",
        ],
    },
    Choice {
        name: "implicit-entry-barrier",
        flag: None,
        options: &[(
            "jax-rule",
            "a kernel that communicates (a remote copy, or a signal with a device id, in any branch), does not take the barrier semaphore and does not set skip_device_barrier gets an entry barrier: no device starts its body before every device has entered",
        )],
        default: "jax-rule",
        evidence: &[
            "JAX's tutorial (Barrier semaphores): \"By default, if you do not specify a barrier semaphore, Pallas will automatically insert a barrier semaphore at the beginning of your program\"",
            "JAX passes the compiler has_communication and skip_device_barrier (jax/_src/tpu_custom_call.py); semcheck applies the same rule (model::ir, implicit_entry_barrier) and refuses the kernels JAX refuses (the barrier semaphore without a collective_id, a collective_id without it)",
            "seed 001 §1 shows the compiler-inserted rendezvous's instructions, and that an explicit signal and wait on the barrier semaphore compile to the same ones",
            "synchronisation XLA may add around the pallas_call is not modelled",
        ],
    },
    Choice {
        name: "barrier-persistence",
        flag: None,
        options: &[(
            "persistent",
            "the barrier semaphore belongs to the collective_id: never reset at entry, may be signalled whatever the target's state, must be 0 only after every device's last invocation",
        )],
        default: "persistent",
        evidence: &[
            "JAX's tutorial: barrier semaphores are \"globally-allocated semaphores\", understood \"no matter where in the XLA program the device is currently executing\"; its local_barrier explains the double barrier: it \"prevents a race condition where one neighbor can re-enter the kernel again on a subsequent call and increment the barrier semaphore a second time\"",
            "seed 000 §3 keeps that double barrier (neighbor_barrier, double_barrier=True) without saying why; the catalogue's single-barrier mutants check the argument in the model: psum's is proved (repeat 2), guarded_shift's breaks from N = 5 (`semcheck check all`)",
        ],
    },
    Choice {
        name: "scoped-semaphore-lifetime",
        flag: None,
        options: &[(
            "whole-kernel",
            "a semaphore of pl.run_scoped lives for the whole kernel: a peer's signal that arrives before this device enters the scope is kept, and it is checked for 0 at kernel exit like other scratch semaphores",
        )],
        default: "whole-kernel",
        evidence: &[
            "the double barrier of seed 000 §3 and of JAX's tutorial signals a neighbour's run_scoped REGULAR semaphore, which the neighbour may not have entered yet; the kernels are correct only if that signal is kept",
            "neither the seeds nor JAX document the semaphore's life outside the scope",
        ],
    },
    Choice {
        name: "outstanding-dmas-at-exit",
        flag: None,
        options: &[(
            "sent-suffices",
            "a device may exit while a remote copy it issued is sent but not received (receipt is the target's business; a landing after the target left breaks outside-kernel); a local copy not done, or a remote copy not yet sent, at exit is a semaphore-leak",
        )],
        default: "sent-suffices",
        evidence: &[
            "JAX's tutorial (Failure modes): \"If DMAs are started but the semaphores are not waited on, the program may crash due to non-zero semaphore states\"",
            "seed 000 waits for every DMA it starts; the ppermute seed's .wait() is wait_send then wait_recv",
        ],
    },
    Choice {
        name: "empty-copies",
        flag: None,
        options: &[(
            "no-operation",
            "a copy whose size, computed per device (a slice of dynamic size), is 0 moves nothing and adds nothing to its semaphores, and a wait for its 0 bytes passes at once: neither is an operation of the checked program",
        )],
        default: "no-operation",
        evidence: &[
            "tpu-inference's ragged paged attention (rpa_v3_cp/kernel.py) copies a KV page with `sz = 0` for a page past the sequence: \"there will be no copy since sz will be 0\"; its fused MoE sizes a copy `lax.select(is_valid, bt, 0)`",
            "neither the seeds nor JAX say whether a zero-length DMA signals its semaphores; it can only add 0 bytes, so a wait for it passes whether it completed or not; all that is in question is whether it still counts as in flight when its device exits",
        ],
    },
    Choice {
        name: "pipelined-blocks",
        flag: None,
        options: &[(
            "step-boundary-copies",
            "a kernel read from a file whose BlockSpec hands it a block smaller than the array gets Pallas's copies as statements: an input's block copied in before a grid step that is the first or whose block index differs from the previous step's, an output's copied out after a step that is the last or whose next step's index differs; each a synchronous copy into one VMEM buffer per operand",
        )],
        default: "step-boundary-copies",
        evidence: &[
            "JAX's TPU interpret mode runs a pallas_call's grid this way (jax/_src/pallas/mosaic/interpret/interpret_pallas_call.py: an input's block is stored into the kernel's buffer when `iteration_idx == initial_iteration_idx` or its start indices differ from the previous step's, an output's block is stored back when `iteration_idx + 1 == loop_bound` or its start indices differ from the next step's)",
            "JAX's own pipeline scheduler follows the same rule (jax/_src/pallas/mosaic/pipeline.py, emit_pipeline's Scheduler: an input waited for when `has_changed | first_step`, an output copied out when `will_change_current | last_step`)",
            "the array of a pipelined operand is touched by nothing but those copies (the kernel sees only the block), so when the prefetch of the next block runs, and into which of the two buffers, changes no value the kernel reads or the output gets",
            "not modelled: which of the two buffers holds a block; a remote copy into a pipelined block (it lands in whichever buffer is current on the receiver) is refused, and an output block read before it is written holds the previous block's values here, the other buffer's on a TPU",
        ],
    },
    Choice {
        name: "kernel-file-inputs",
        flag: None,
        options: &[(
            "values-passed",
            "a kernel read from a file is read with the values its script passes to its scalar-prefetch operands and whole-array integer SMEM inputs (computed on the CPU, nothing of the kernel run); its verdicts cover those values only, and the check says so",
        )],
        default: "values-passed",
        evidence: &[
            "what a kernel's test does: tpu-inference's MoE, GMM and attention kernels take their routing and length tables as scalar prefetch, and their synchronisation (trip counts, copy sizes, double-buffer indices) follows from them",
            "other inputs (VMEM/HBM data) stay symbolic: control flow, indices or sizes computed from them are refused as run-time data",
        ],
    },
    Choice {
        name: "unused-values",
        flag: None,
        options: &[(
            "not-read",
            "a value a kernel file loads from SMEM scratch it never wrote, or from outside an SMEM array, holds nothing: using it (an index, a size, a device id, a condition, stored data) is an error, loading it is not; a copy whose size is computed as 0 does not read its start; a load of an index window (SMEM a copy of known integers fills) reads its cell, and so races with a copy still filling it, only where its value is used, when the front end can tell that condition where the load is (every use follows the load in its statement list, the condition reads only values bound before it); else always",
        )],
        default: "not-read",
        evidence: &[
            "tokamax's routing GMM (routing_moe/gmm/memory_ref.py, `_copy_out_row`): \"A dead row may read a stale index, so its empty DMA is aimed at a real device\": its branchless copy loop loads an index for every row of a tile and copies a dead row with size 0 to device `jnp.where(live, dev, 0)`",
            "Mosaic does not check an SMEM index: a load outside the array reads another allocation's word, which a kernel may load and discard (a select)",
            "what follows: a race on a value nothing uses is not reported; a loaded value that is used is checked as before, and where the condition of its use cannot be told its load is checked as a read of its cell (python/semcheck/frontend/probes.py)",
        ],
    },
    Choice {
        name: "float-index-data",
        flag: None,
        options: &[(
            "one-symbol",
            "an index value (computed from axis_index, program_id, a loop counter or scalar-prefetch data) that goes through a float and is then stored as data becomes one symbol, `float-index`: the same on every device and at every use; such a value used as an index, a device id, a size or a condition is refused (`float index arithmetic`), never read as an index",
        )],
        default: "one-symbol",
        evidence: &[
            "python/semcheck/frontend/compute.py: Compute.index_primitive binds any arithmetic with a float operand or result (a cast to float, and a cast back) as an uninterpreted float value, and Compute.as_value makes that value the constant `float-index` when it is used as data; walker.py (KernelWalker.expr) refuses it where an index is needed",
            "what follows: the wrong-result rule does not tell such values apart: two devices that store float(axis_index) hold the same symbol, so outputs that differ only in them are not reported as wrong; races, deadlocks and the semaphore rules do not depend on data values and are unaffected",
            "integer index data is kept as its expression (per device); for floats semcheck does not model rounding, so it claims nothing about their values: this choice can hide a wrong result, never a race or a deadlock",
        ],
    },
];
