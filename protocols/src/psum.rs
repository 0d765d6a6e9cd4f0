//! `lax.psum` (seed 000 §3): one-directional ring all-reduce with double-buffered HBM
//! slots and a capacity semaphore.
//!
//! **What the checker finds for the mutants.**
//!
//! * `no-capacity` (N = 2): a race. Without the capacity handshake a device can start its
//!   step-0 DMA into its neighbour before its own prologue DMA has landed there; both DMAs
//!   count on the one `remote_recv_sem`, so the neighbour's `wait_recv` is satisfied by the
//!   later DMA and its local copy reads `hbm_buf[0]` while the prologue DMA is still
//!   writing it. Run ahead further and the same mechanism overwrites a working slot.
//! * `no-barrier` (N = 2): the prologue DMA lands in a device that has not entered.
//! * `single-barrier` (open question; invoked twice): proved at every size `check all`
//!   reaches (N = 2..8, repeat 2; `tests/open_questions.rs` also has N = 4, repeat 3). The
//!   double barrier protects a slow neighbour from consuming a fast device's barrier
//!   signal of the *next* invocation. In psum a device cannot finish an invocation before
//!   both neighbours passed their barrier wait: it needs its right neighbour's capacity
//!   signals and its left neighbour's data, both sent after that neighbour's wait. A kernel
//!   without that two-sided dependency does break with a single barrier (from 5 devices on),
//!   which the same test shows.

use semcheck_model::dsl::{trace, zeros_like};
use semcheck_model::ir::{Kernel, MemorySpace};
use semcheck_model::{Expected, ModelError, Rule, Spec};

use crate::barrier::{neighbor_barrier, Barrier, NO_BARRIER};
use crate::catalogue::{unsupported, Change, MeshKind, Mutant, Protocol};
use crate::expect::{atom, expect};

pub(crate) const PROTOCOL: Protocol = Protocol::new(
    "psum",
    "ring all-reduce sum: inputs travel the ring, each device accumulates what it receives",
    "seed 000 §3 psum_kernel with neighbor_barrier(double_barrier=True)",
    MeshKind::Ring,
    &[
        Mutant {
            name: "no-capacity",
            change: Change::NoCapacity,
            description:
                "drop the capacity_sem signal and wait: a device one step ahead writes its neighbour's working slot",
            expected: &[Rule::Race, Rule::WrongResult],
            repeat: 1,
            manifests_from: Some(2),
        },
        NO_BARRIER,
        Mutant {
            name: "single-barrier",
            change: Change::SingleBarrier,
            description:
                "neighbor_barrier(double_barrier=False), invoked twice back to back (an open question: the checker answers it)",
            expected: &[],
            repeat: 2,
            manifests_from: None,
        },
    ],
    kernel,
    spec,
);

struct Variant {
    capacity: bool,
    barrier: Barrier,
}

fn kernel(num_devices: usize, change: Option<Change>) -> Result<Kernel, ModelError> {
    if let Some(c) = change.filter(|c| !matches!(c, Change::NoCapacity | Change::NoBarrier | Change::SingleBarrier)) {
        return Err(unsupported("psum", c));
    }
    let v = Variant { capacity: change != Some(Change::NoCapacity), barrier: Barrier::for_change(change) };
    trace("psum", |k| {
        k.grid(&[num_devices]);
        v.barrier.compiler_params(k, 0);
        let x_ref = k.input("x_ref", MemorySpace::Vmem, &[]);
        let mut o_ref = k.output("o_ref", MemorySpace::Vmem, &[]);
        let hbm_buf = k.output("hbm_buf", MemorySpace::Hbm, &[2]);
        let local_copy_sem = k.dma_semaphore("local_copy_sem");
        let remote_recv_sem = k.dma_semaphore("remote_recv_sem");
        let remote_send_sem = k.dma_semaphore("remote_send_sem");
        let capacity_sem = k.regular_semaphore("capacity_sem");
        let vmem_recv = k.scratch("vmem_recv", MemorySpace::Vmem, &[]);

        let step = k.program_id(0);
        let working = step.clone() % 2;
        let receiving = 1 - &working;

        let my_id = k.axis_index("x");
        let right = (&my_id + 1) % num_devices;
        let left = (&my_id - 1 + num_devices as i64) % num_devices;

        k.when(step.equals(0), |k| {
            neighbor_barrier(k, &left, &right, v.barrier);
            o_ref.assign(zeros_like(&o_ref));
            vmem_recv.assign(zeros_like(&vmem_recv));

            let first =
                k.make_async_remote_copy(&x_ref, &hbm_buf.at(&working), &remote_send_sem, &remote_recv_sem, &right);
            first.start();
            first.wait();
        });

        // Tell the left neighbour: I am ready for its next write.
        if v.capacity {
            k.semaphore_signal(&capacity_sem, 1, &left);
        }

        // Local HBM -> VMEM copy, for accumulation.
        let local = k.make_async_copy(&hbm_buf.at(&working), &vmem_recv, &local_copy_sem);
        local.start();

        // Before writing the right neighbour, wait until it said it is ready.
        if v.capacity {
            k.semaphore_wait(&capacity_sem, 1);
        }

        let remote = k.make_async_remote_copy(
            &hbm_buf.at(&working),
            &hbm_buf.at(&receiving),
            &remote_send_sem,
            &remote_recv_sem,
            &right,
        );
        remote.start();

        local.wait();
        o_ref += &vmem_recv;
        remote.wait();
    })
}

fn spec(n: usize) -> Spec {
    let all: Vec<_> = (0..n).map(|e| atom(e, 0, 0)).collect();
    let outputs = (0..n).map(|d| expect(d, "o_ref", &[], Expected::Sum(all.clone()))).collect();
    Spec::plain(outputs)
}
