//! A right shift guarded by `neighbor_barrier` (PARAMETRIC.md's `guarded_shift`): after
//! the barrier a device waits only for its left neighbour's data, so nothing stops it from
//! finishing an invocation early.
//!
//! **`single-barrier`, invoked twice**: broken from N = 5 on (`outside-kernel`), proved at
//! N = 2..4. A device that heard only from its left neighbour finishes, re-enters and
//! signals its right neighbour's persistent barrier semaphore twice, so that neighbour
//! passes its first barrier without its own right neighbour, whose DMA then lands in a
//! device that has not entered. It takes five *distinct* devices, which is why checking
//! N = 2..4 proves nothing about N = 5. The seed's double barrier fixes it.

use semcheck_model::dsl::trace;
use semcheck_model::ir::{Kernel, MemorySpace};
use semcheck_model::{Expected, ModelError, Rule, Spec};

use crate::barrier::{neighbor_barrier, Barrier};
use crate::catalogue::{unsupported, Change, MeshKind, Mutant, Protocol};
use crate::expect::{atom, expect};

pub(crate) const PROTOCOL: Protocol = Protocol::new(
    "guarded_shift",
    "right shift after neighbor_barrier: a device may finish as soon as its left neighbour's data arrived",
    "PARAMETRIC.md (tests/open_questions.rs): the kernel behind the single-barrier question",
    MeshKind::Ring,
    &[Mutant {
        name: "single-barrier",
        change: Change::SingleBarrier,
        description:
            "neighbor_barrier(double_barrier=False), invoked twice: a fast device re-enters and over-signals a neighbour's barrier",
        expected: &[Rule::OutsideKernel],
        repeat: 2,
        manifests_from: Some(5),
    }],
    kernel,
    spec,
);

fn kernel(n: usize, change: Option<Change>) -> Result<Kernel, ModelError> {
    let barrier = match change {
        None => Barrier::Double,
        Some(Change::SingleBarrier) => Barrier::Single,
        Some(c) => return Err(unsupported("guarded_shift", c)),
    };
    trace("guarded_shift", |k| {
        barrier.compiler_params(k, 0);
        let x_ref = k.input("x_ref", MemorySpace::Hbm, &[]);
        let y_ref = k.output("y_ref", MemorySpace::Hbm, &[]);
        let send_sem = k.dma_semaphore("send_sem");
        let recv_sem = k.dma_semaphore("recv_sem");
        let my_id = k.axis_index("x");
        let right = (&my_id + 1) % n;
        let left = (&my_id - 1 + n as i64) % n;
        neighbor_barrier(k, &left, &right, barrier);
        let dma = k.make_async_remote_copy(&x_ref, &y_ref, &send_sem, &recv_sem, &right);
        dma.start();
        dma.wait();
    })
}

fn spec(n: usize) -> Spec {
    let outputs = (0..n).map(|d| expect(d, "y_ref", &[], Expected::Sum(vec![atom((d + n - 1) % n, 0, 0)]))).collect();
    Spec::plain(outputs)
}
