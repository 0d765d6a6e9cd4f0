//! `neighbor_barrier` of seed 000 §3.3.

use semcheck_model::dsl::KernelBuilder;
use semcheck_model::expr::Expr;
use semcheck_model::ir::SemKind;
use semcheck_model::Rule;

use crate::catalogue::{Change, Mutant};

/// The `no-barrier` mutant of the kernels that use [`neighbor_barrier`].
pub(crate) const NO_BARRIER: Mutant = Mutant {
    name: "no-barrier",
    change: Change::NoBarrier,
    description: "drop neighbor_barrier (and collective_id, with skip_device_barrier=True so that JAX inserts no barrier either): the first DMA can land in a device that has not entered the kernel",
    expected: &[Rule::OutsideKernel],
    repeat: 1,
    manifests_from: Some(2),
};

/// Drops the kernel's custom barrier entirely: no `collective_id` (JAX refuses one without
/// a custom barrier) and `skip_device_barrier=True` (else JAX's implicit entry barrier
/// would make the kernel safe). The only way to build the `no-barrier` mutants as kernels
/// that can exist.
pub(crate) fn without_any_barrier(k: &KernelBuilder) {
    k.skip_device_barrier();
}

/// How a kernel synchronises with its neighbours before the first DMA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Barrier {
    /// No barrier at all (the `no-barrier` mutant).
    None,
    /// `neighbor_barrier(left, right, double_barrier=False)`.
    Single,
    /// `neighbor_barrier(left, right, double_barrier=True)`: the seed's version.
    Double,
}

impl Barrier {
    /// The barrier of a ring kernel for its change: `no-barrier`, `single-barrier`, or the
    /// seed's double barrier.
    pub(crate) fn for_change(change: Option<Change>) -> Barrier {
        match change {
            Some(Change::NoBarrier) => Barrier::None,
            Some(Change::SingleBarrier) => Barrier::Single,
            _ => Barrier::Double,
        }
    }

    /// `CompilerParams` for this barrier: `collective_id=id` with a custom barrier;
    /// without one, no `collective_id` and `skip_device_barrier=True`.
    pub(crate) fn compiler_params(self, k: &KernelBuilder, id: u32) {
        if self == Barrier::None {
            without_any_barrier(k);
        } else {
            k.collective_id(id);
        }
    }
}

/// Signals the barrier semaphore of both neighbours and waits for both; with
/// `double_barrier`, repeats the handshake on a scoped REGULAR semaphore.
pub(crate) fn neighbor_barrier(k: &KernelBuilder, left: &Expr, right: &Expr, barrier: Barrier) {
    if barrier == Barrier::None {
        return;
    }
    let sem = k.get_barrier_semaphore();
    for nbr in [left, right] {
        k.semaphore_signal(&sem, 1, nbr);
    }
    k.semaphore_wait(&sem, 2);
    if barrier == Barrier::Double {
        k.run_scoped("second", SemKind::Regular, |k, second| {
            for nbr in [left, right] {
                k.semaphore_signal(&second, 1, nbr);
            }
            k.semaphore_wait(&second, 2);
        });
    }
}
