//! `semcheck semantics`: every modelling choice a verdict rests on, its options, the default,
//! and what the seeds and JAX say about it.

use serde::Serialize;

use super::{emitln, EXIT_PROVED};

/// One modelling choice.
#[derive(Serialize)]
struct Choice {
    /// A stable name.
    name: &'static str,
    /// The command-line option that switches it, if any.
    flag: Option<&'static str>,
    /// The choices the option offers (or the one fixed choice), each with its meaning.
    options: &'static [(&'static str, &'static str)],
    /// The choice semcheck makes unless told otherwise.
    default: &'static str,
    /// Why, and what the seeds and JAX say, with the files that say it.
    evidence: &'static [&'static str],
}

const CHOICES: &[Choice] = &[
    Choice {
        name: "dma-order",
        flag: Some("--dma-order"),
        options: &[
            ("any", "every DMA completes at any time after its start, in any order relative to every other DMA, also between the same two devices"),
            ("pair-fifo", "DMAs from one device to one device are received in the order they were started (a device's local copies are done in start order); only receipt is ordered: `sent` (the issuer's send semaphore) is not, the weakest assumption that lets a receiver reuse one receive semaphore per neighbour"),
        ],
        default: "any",
        evidence: &[
            "seed 000 §2: one receive semaphore per step, recv_sems.at[step], \"so that several in-flight DMAs do not share one receive counter\"; the catalogue's all_gather/shared-recv-sem breaks under any and is proved under pair-fifo (`check all_gather --mutant shared-recv-sem --devices 3`)",
            "JAX's tutorial (docs/pallas/tpu/distributed.md, all-gather): \"we allocate num_devices-1 semaphores so there is no risk of reuse ... on larger kernels there is more chance for devices to fall out of sync and potentially cause a silent failure\"",
            "JAX's TPU interpret mode (jax/_src/pallas/mosaic/interpret/shared_memory.py, Semaphore.wait, default dma_execution_mode=\"on_wait\") completes a waiting device's pending DMAs last-started first: \"this approach will tend to run DMAs as late as possible, as well as out-of-order\"",
            "against: JAX's shipped all-gather (jax/experimental/pallas/ops/tpu/all_gather.py, ag_kernel) reuses recv_sem[0] and recv_sem[1] for every step of each direction; it is correct only under pair-fifo (tests/assumptions.rs models it: a race under any, proved under pair-fifo)",
            "no public statement on whether the ICI delivers two DMAs of one pair in order was found; any is kept as the default because a proof under any also holds under pair-fifo, and a violation says when it needs reordering (\"requires dma-reorder\")",
        ],
    },
    Choice {
        name: "dma-landing",
        flag: Some("--dma-landing"),
        options: &[
            ("whole", "a copy lands all at once: its cells are written and its bytes added to the receive semaphore in one step"),
            ("cells", "a copy of several cells lands cell by cell, in any order; each cell adds its bytes to the receive semaphore as it lands, so a wait for fewer bytes than the copy can pass with part of it landed; a cell is read and written until it lands"),
        ],
        default: "whole",
        evidence: &[
            "seed 001's instruction listing of a remote copy shows wait_recv as `vwait.ge [sflag:54], 8`, the peer's DMA adding 8 \"after the data arrives\": the receive semaphore counts the copy's data",
            "JAX's tutorial (DMA Semaphores): \"on DMA start, the local device will begin to increment the value of send_sem and the receiver's recv_sem asynchronously\"; waits block until the value reaches the bytes expected, and \"the value may not represent exactly the number of bytes sent\": partial progress is visible, the granularity is not documented",
            "JAX's TPU interpret mode lands each DMA whole (one store, then one signal of its full size)",
            "no seed kernel waits with a smaller descriptor than its copy, and every seed copy is one cell in the model, so cells changes no seed verdict; whole is kept as the default, cells is the conservative choice for kernels that wait on part of a copy",
        ],
    },
    Choice {
        name: "dma-semaphore-units",
        flag: None,
        options: &[("bytes", "a DMA adds its byte count to its semaphores; .wait_send() and .wait_recv() wait for the descriptor's byte count")],
        default: "bytes",
        evidence: &[
            "seed 001's instruction listing: `vwait.ge [sflag:53], 8` (wait_send) and `vwait.ge [sflag:54], 8` (wait_recv), the DMA adding 8 to each",
            "JAX's tutorial (DMA Semaphores): \"waiting on a semaphore will block until the value of the semaphore reaches the total bytes of data sent/received\"",
        ],
    },
    Choice {
        name: "implicit-entry-barrier",
        flag: None,
        options: &[("jax-rule", "a kernel that communicates (a remote copy, or a signal with a device id, in any branch), does not take the barrier semaphore and does not set skip_device_barrier gets an entry barrier: no device starts its body before every device has entered")],
        default: "jax-rule",
        evidence: &[
            "JAX builds it so (jax/_src/tpu_custom_call.py); semcheck applies the same rule (model/src/ir.rs, implicit_entry_barrier) and refuses kernels JAX refuses (barrier semaphore without collective_id, collective_id without it)",
            "JAX's tutorial (Barrier Semaphores): \"if you do not specify a barrier semaphore, Pallas will automatically insert a barrier semaphore at the beginning of your program\"",
            "seed 001 shows the compiler-inserted rendezvous's instructions and that an explicit wait on the barrier semaphore compiles to the same ones",
            "synchronisation XLA may add around the pallas_call is not modelled",
        ],
    },
    Choice {
        name: "barrier-persistence",
        flag: None,
        options: &[("persistent", "the barrier semaphore belongs to the collective_id: never reset at entry, may be signalled whatever the target's state, must be 0 only after every device's last invocation")],
        default: "persistent",
        evidence: &[
            "JAX's tutorial: barrier semaphores are \"globally-allocated semaphores\" understood \"no matter where in the XLA program the device is currently executing\"; its double barrier exists because \"one neighbor can re-enter the kernel again on a subsequent call and increment the barrier semaphore a second time\"",
            "seed 000 §3 (neighbor_barrier, double_barrier=True) makes the same argument; `check psum --mutant single-barrier` answers it for the model",
        ],
    },
    Choice {
        name: "scoped-semaphore-lifetime",
        flag: None,
        options: &[("whole-kernel", "a semaphore of pl.run_scoped lives for the whole kernel: a peer's signal that arrives before this device enters the scope is kept, and it is checked for 0 at kernel exit like other scratch semaphores")],
        default: "whole-kernel",
        evidence: &[
            "the double barrier of seed 000 §3 and of JAX's tutorial signals a neighbour's run_scoped REGULAR semaphore, which the neighbour may not have entered yet; the kernels are correct only if that signal is kept",
            "neither the seeds nor JAX document the semaphore's lifetime beyond the scope",
        ],
    },
    Choice {
        name: "outstanding-dmas-at-exit",
        flag: None,
        options: &[("sent-suffices", "a device may exit while a remote copy it issued is sent but not received (receipt is the target's business; a landing after the target left breaks rule 5); a local copy not done, or a remote copy not yet sent, at exit is a semaphore-leak")],
        default: "sent-suffices",
        evidence: &[
            "JAX's tutorial (Failure modes): \"if DMAs are started but the semaphores are not waited on, the program may crash due to non-zero semaphore states\"",
            "seed 000 waits every DMA it starts; the ppermute seed's .wait() is wait_send then wait_recv",
        ],
    },
];

pub(crate) fn run(json: bool) -> Result<i32, semcheck::ModelError> {
    if json {
        emitln!("{}", serde_json::to_string_pretty(CHOICES).expect("JSON of plain data"));
        return Ok(EXIT_PROVED);
    }
    for (i, c) in CHOICES.iter().enumerate() {
        if i > 0 {
            emitln!("");
        }
        match c.flag {
            Some(flag) => emitln!("{} ({flag}, default {})", c.name, c.default),
            None => emitln!("{} (fixed: {})", c.name, c.default),
        }
        for (option, meaning) in c.options {
            emitln!("  {option:<14} {meaning}");
        }
        for e in c.evidence {
            emitln!("  - {e}");
        }
    }
    Ok(EXIT_PROVED)
}
