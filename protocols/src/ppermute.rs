//! `lax.ppermute` (seed 000 §1): every device pushes its shard to its right neighbour.

use semcheck_model::dsl::trace;
use semcheck_model::ir::{Kernel, MemorySpace};
use semcheck_model::{Expected, ModelError, Spec};

use crate::catalogue::{unsupported, Change, MeshKind, Protocol};
use crate::expect::{atom, expect};

pub(crate) const PROTOCOL: Protocol = Protocol::new(
    "ppermute",
    "right shift: every device sends its shard to its right neighbour",
    "seed 000 §1 right_shift_kernel",
    MeshKind::Ring,
    &[],
    kernel,
    spec,
);

fn kernel(num_devices: usize, change: Option<Change>) -> Result<Kernel, ModelError> {
    if let Some(c) = change {
        return Err(unsupported("ppermute", c));
    }
    trace("ppermute", |k| {
        let x_ref = k.input("x_ref", MemorySpace::Hbm, &[]);
        let y_ref = k.output("y_ref", MemorySpace::Hbm, &[]);
        let send_sem = k.dma_semaphore("send_sem");
        let recv_sem = k.dma_semaphore("recv_sem");

        let my_id = k.axis_index("x");
        let target = (my_id + 1) % num_devices;

        let dma = k.make_async_remote_copy(&x_ref, &y_ref, &send_sem, &recv_sem, target);
        dma.start();
        dma.wait();
    })
}

fn spec(n: usize) -> Spec {
    let outputs = (0..n).map(|d| expect(d, "y_ref", &[], Expected::Sum(vec![atom((d + n - 1) % n, 0, 0)]))).collect();
    Spec::plain(outputs)
}
