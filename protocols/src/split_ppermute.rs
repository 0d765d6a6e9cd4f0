//! A split-phase `ppermute` (JAX's asynchronous remote copy, "Pallas Async Operations"):
//! a program of three kernels. `start_kernel` meets its left neighbour at the barrier and
//! starts the copy of its shard into its right neighbour's `o_ref`, handing out the copy's
//! two DMA semaphores while the copy is still in flight; `send_done_kernel` waits until
//! the shard has been sent, `recv_done_kernel` until the neighbour's shard has arrived
//! (the compute a split-phase collective is written to overlap would go between the start
//! and the done kernels). A kernel that reads the block after `recv_done_kernel` is not
//! part of the program (nothing is in flight any more); the `early-read` mutant's
//! `use_kernel` reads it before, and is. `protocols/pallas/split_ppermute.py` is the same
//! program as JAX code.

use semcheck_model::dsl::trace;
use semcheck_model::ir::{Kernel, MemorySpace};
use semcheck_model::{Expected, ModelError, Rule, Spec};

use crate::catalogue::{unsupported, Change, MeshKind, Mutant, Protocol};
use crate::expect::{atom, expect};

pub(crate) const PROTOCOL: Protocol = Protocol::new(
    "split_ppermute",
    "right shift as a program of three kernels: start, send_done, recv_done",
    "JAX's Pallas async remote copy (docs/pallas/tpu async note; tests/pallas/tpu_pallas_async_test.py)",
    MeshKind::Ring,
    &[
        Mutant {
            name: "no-send-done",
            change: Change::NoSendDone,
            description: "drop send_done_kernel: nothing waits for the send semaphore start_kernel hands out",
            expected: &[Rule::SemaphoreLeak],
            repeat: 1,
            manifests_from: Some(2),
        },
        Mutant {
            name: "wrong-semaphore",
            change: Change::WrongSemaphore,
            description: "recv_done_kernel is handed the send semaphore instead of the receive semaphore",
            expected: &[Rule::Deadlock],
            repeat: 1,
            manifests_from: Some(2),
        },
        Mutant {
            name: "early-read",
            change: Change::EarlyRead,
            description: "use_kernel reads the received block before recv_done_kernel waits for it",
            expected: &[Rule::Race, Rule::WrongResult],
            repeat: 1,
            manifests_from: Some(2),
        },
    ],
    kernel,
    spec,
);

fn kernel(n: usize, change: Option<Change>) -> Result<Kernel, ModelError> {
    if let Some(
        c @ (Change::NoCapacity
        | Change::SharedRecvSem
        | Change::NoBarrier
        | Change::NoFinalDrain
        | Change::SingleBarrier
        | Change::NoSignal),
    ) = change
    {
        return Err(unsupported("split_ppermute", c));
    }
    trace("split_ppermute", |k| {
        let x_ref = k.input_output("x_ref", MemorySpace::Hbm, &[]);
        let o_ref = k.output("o_ref", MemorySpace::Hbm, &[]);

        let (send_sem, recv_sem) = k.launch("start_kernel", |k| {
            k.collective_id(0);
            let send_sem = k.dma_semaphore("send_sem");
            let recv_sem = k.dma_semaphore("recv_sem");
            k.hand_out(&send_sem);
            k.hand_out(&recv_sem);
            let me = k.axis_index("x");
            let left = (me.clone() + n - 1) % n;
            let right = (me + 1) % n;
            let barrier = k.get_barrier_semaphore();
            k.semaphore_signal(&barrier, 1, left);
            k.semaphore_wait(&barrier, 1);
            k.make_async_remote_copy(&x_ref, &o_ref, &send_sem, &recv_sem, right).start();
            (send_sem, recv_sem)
        });

        if change != Some(Change::NoSendDone) {
            k.launch("send_done_kernel", |k| {
                k.make_async_copy(&x_ref, &x_ref, &send_sem).wait();
            });
        }
        let recv_done = || {
            k.launch("recv_done_kernel", |k| {
                let sem = if change == Some(Change::WrongSemaphore) { &send_sem } else { &recv_sem };
                k.make_async_copy(&x_ref, &o_ref, sem).wait();
            })
        };
        let use_block = || {
            k.launch("use_kernel", |k| {
                let y_ref = k.output("y_ref", MemorySpace::Hbm, &[]);
                let sem = k.dma_semaphore("sem");
                let copy = k.make_async_copy(&o_ref, &y_ref, &sem);
                copy.start();
                copy.wait();
            })
        };
        // A kernel that reads the received block is part of the program while a semaphore
        // of the program is alive: before recv_done_kernel (early-read), or to the end when
        // one is never taken (the send semaphore in no-send-done, the receive semaphore in
        // wrong-semaphore). Read after the last done kernel, it is a kernel of its own, with
        // nothing in flight, as in the correct program.
        if change == Some(Change::EarlyRead) {
            use_block();
        }
        recv_done();
        if matches!(change, Some(Change::NoSendDone | Change::WrongSemaphore)) {
            use_block();
        }
    })
}

fn spec(n: usize) -> Spec {
    let outputs = (0..n).map(|d| expect(d, "o_ref", &[], Expected::Sum(vec![atom((d + n - 1) % n, 0, 0)]))).collect();
    Spec::plain(outputs)
}
