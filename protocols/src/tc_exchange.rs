//! The two-TensorCore exchange of seed 001: rendezvous on the barrier semaphore, then a
//! remote DMA from each core's `send_vmem` into the other core's `recv_vmem`.

use semcheck_model::dsl::trace;
use semcheck_model::ir::{BufferRole, Kernel, MemorySpace};
use semcheck_model::{Expected, ModelError, Rule, Spec};

use crate::barrier::without_any_barrier;
use crate::catalogue::{unsupported, Change, MeshKind, Mutant, Protocol};
use crate::expect::{atom, expect};

pub(crate) const PROTOCOL: Protocol = Protocol::new(
    "tc_exchange",
    "two TensorCores swap their blocks by remote DMA after a barrier rendezvous",
    "seed 001, semaphores and remote DMA between TensorCores (collective_id=1)",
    MeshKind::TensorCores,
    &[Mutant {
        name: "no-barrier",
        change: Change::NoBarrier,
        description: "drop the rendezvous before the remote DMA (and collective_id=1, with skip_device_barrier=True so JAX inserts none): it can write into a TensorCore that has not entered",
        expected: &[Rule::OutsideKernel],
        repeat: 1,
        manifests_from: Some(2),
    }],
    kernel,
    spec,
);

fn kernel(_devices: usize, change: Option<Change>) -> Result<Kernel, ModelError> {
    let rendezvous = match change {
        None => true,
        Some(Change::NoBarrier) => false,
        Some(c) => return Err(unsupported("tc_exchange", c)),
    };
    trace("tc_exchange", |k| {
        if rendezvous {
            k.collective_id(1);
        } else {
            without_any_barrier(k);
        }
        let x_hbm = k.shared_hbm("x_hbm", BufferRole::Input, &[2]);
        let o_hbm = k.shared_hbm("o_hbm", BufferRole::Output, &[2]);
        let send_vmem = k.scratch("send_vmem", MemorySpace::Vmem, &[]);
        let recv_vmem = k.scratch("recv_vmem", MemorySpace::Vmem, &[]);
        let sems = k.dma_semaphores("sems", 4);

        let core = k.axis_index("tc");
        k.async_copy(&x_hbm.at(&core), &send_vmem, &sems.at(0)).wait();

        if rendezvous {
            let ready = k.get_barrier_semaphore();
            k.semaphore_signal(&ready, 1, k.device(&[("tc", 1 - &core)]));
            k.semaphore_wait(&ready, 1);
        }

        let transfer =
            k.make_async_remote_copy(&send_vmem, &recv_vmem, &sems.at(1), &sems.at(2), k.device(&[("tc", 1 - &core)]));
        transfer.start();
        transfer.wait_send();
        transfer.wait_recv();
        k.async_copy(&recv_vmem, &o_hbm.at(&core), &sems.at(3)).wait();
    })
}

fn spec(_devices: usize) -> Spec {
    // "Output block 0 comes from TensorCore 1, block 1 from TensorCore 0."
    let outputs = (0..2).map(|c| expect(c, "o_hbm", &[c], Expected::Sum(vec![atom(1 - c, 0, 0)]))).collect();
    Spec::plain(outputs)
}
