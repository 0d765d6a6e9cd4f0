//! The producer/consumer of seed 001: TensorCore 0 writes `2x` to shared HBM and signals
//! a REGULAR semaphore on TensorCore 1, which waits, reads it, adds 1 and writes it back.

use std::sync::Arc;

use semcheck_model::dsl::trace;
use semcheck_model::ir::{BufferRole, Kernel, MemorySpace};
use semcheck_model::{Expected, ModelError, Notation, Rule, Spec};

use crate::catalogue::{unsupported, Change, MeshKind, Mutant, Protocol};
use crate::expect::{atom, expect};

pub(crate) const PROTOCOL: Protocol = Protocol::new(
    "producer_consumer",
    "TensorCore 0 produces 2x in shared HBM, TensorCore 1 consumes it after a REGULAR semaphore",
    "seed 001, explicit producer/consumer synchronisation",
    MeshKind::TensorCores,
    &[Mutant {
        name: "no-signal",
        change: Change::NoSignal,
        description: "drop the REGULAR semaphore signal and wait: the consumer reads HBM before the producer wrote it",
        expected: &[Rule::Race, Rule::WrongResult],
        repeat: 1,
        manifests_from: Some(2),
    }],
    kernel,
    spec,
);

const DOUBLE: &str = "2*{}";
const PLUS_ONE: &str = "{}+1";

fn kernel(_devices: usize, change: Option<Change>) -> Result<Kernel, ModelError> {
    let signalled = match change {
        None => true,
        Some(Change::NoSignal) => false,
        Some(c) => return Err(unsupported("producer_consumer", c)),
    };
    trace("producer_consumer", |k| {
        let x_hbm = k.shared_hbm("x_hbm", BufferRole::Input, &[]);
        let o_hbm = k.shared_hbm("o_hbm", BufferRole::Output, &[2]);
        let vmem = k.scratch("vmem", MemorySpace::Vmem, &[]);
        let sem = k.dma_semaphore("sem");
        let ready = k.regular_semaphore("ready");

        let core = k.axis_index("tc");

        k.when(core.clone().equals(0), |k| {
            k.async_copy(&x_hbm, &vmem, &sem).wait();
            vmem.assign(vmem.map(DOUBLE));
            k.async_copy(&vmem, &o_hbm.at(0), &sem).wait();
            if signalled {
                k.semaphore_signal(&ready, 1, k.device(&[("tc", 1.into())]));
            }
        });

        k.when(core.equals(1), |k| {
            if signalled {
                k.semaphore_wait(&ready, 1);
            }
            k.async_copy(&o_hbm.at(0), &vmem, &sem).wait();
            vmem.assign(vmem.map(PLUS_ONE));
            k.async_copy(&vmem, &o_hbm.at(1), &sem).wait();
        });
    })
}

fn spec(_devices: usize) -> Spec {
    let x = Expected::Sum(vec![atom(0, 0, 0)]);
    let doubled = Expected::Apply(DOUBLE.into(), Arc::new(x));
    let consumed = Expected::Apply(PLUS_ONE.into(), Arc::new(doubled.clone()));
    Spec {
        notation: Notation::Plain,
        outputs: vec![expect(0, "o_hbm", &[0], doubled), expect(1, "o_hbm", &[1], consumed)],
    }
}
