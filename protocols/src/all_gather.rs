//! `lax.all_gather` (seed 000 §2): each step forwards one slot to the right neighbour.
//!
//! **`shared-recv-sem`.** From N = 3 on, the checker finds the corruption the seed warns
//! about: a device's step-0 `wait_recv` is satisfied by the bytes of its left neighbour's
//! step-1 DMA, so at step 1 it forwards slot `my_id - 1` while the step-0 DMA is still
//! writing it (`race`; had the DMA landed later still, the forwarded value would be `-`, a
//! `wrong-result`). At N = 2 the grid has a single step: one DMA per device, nothing to
//! confuse, and the checker proves the mutant correct.

use semcheck_model::dsl::trace;
use semcheck_model::ir::{Kernel, MemorySpace};
use semcheck_model::{Expected, ModelError, Rule, Spec};

use crate::catalogue::{unsupported, Change, MeshKind, Mutant, Protocol};
use crate::expect::{atom, expect};

pub(crate) const PROTOCOL: Protocol = Protocol::new(
    "all_gather",
    "ring all-gather: every device ends with every shard, one hop per grid step",
    "seed 000 §2 all_gather_kernel",
    MeshKind::Ring,
    &[Mutant {
        name: "shared-recv-sem",
        change: Change::SharedRecvSem,
        description:
            "one recv_sem for every step instead of recv_sems.at[step]: a later DMA's bytes can satisfy an earlier wait",
        expected: &[Rule::Race, Rule::WrongResult],
        repeat: 1,
        manifests_from: Some(3),
    }],
    kernel,
    spec,
);

fn kernel(num_devices: usize, change: Option<Change>) -> Result<Kernel, ModelError> {
    let shared_recv_sem = match change {
        None => false,
        Some(Change::SharedRecvSem) => true,
        Some(c) => return Err(unsupported("all_gather", c)),
    };
    trace("all_gather", |k| {
        k.grid(&[num_devices - 1]);
        let x_ref = k.input("x_ref", MemorySpace::Hbm, &[]);
        let out_ref = k.output("out_ref", MemorySpace::Hbm, &[num_devices]);
        let local_sem = k.dma_semaphore("local_sem");
        let send_sem = k.dma_semaphore("send_sem");
        let recv_sems =
            if shared_recv_sem { k.dma_semaphore("recv_sem") } else { k.dma_semaphores("recv_sems", num_devices - 1) };

        let step = k.program_id(0);
        let my_id = k.axis_index("x");
        let right = (&my_id + 1) % num_devices;
        let slot = (&my_id - &step + num_devices as i64) % num_devices;

        k.when(step.clone().equals(0), |k| {
            let local = k.make_async_copy(&x_ref, &out_ref.at(&my_id), &local_sem);
            local.start();
            local.wait();
        });

        let recv_sem = if shared_recv_sem { recv_sems.clone() } else { recv_sems.at(step) };
        let remote = k.make_async_remote_copy(&out_ref.at(&slot), &out_ref.at(&slot), &send_sem, &recv_sem, right);
        remote.start();
        remote.wait();
    })
}

fn spec(n: usize) -> Spec {
    let mut outputs = Vec::new();
    for d in 0..n {
        for s in 0..n {
            outputs.push(expect(d, "out_ref", &[s], Expected::Sum(vec![atom(s, 0, 0)])));
        }
    }
    Spec::plain(outputs)
}
