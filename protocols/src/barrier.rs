//! `neighbor_barrier` of seed 000 §3.3.

use semcheck_model::dsl::KernelBuilder;
use semcheck_model::expr::Expr;
use semcheck_model::ir::SemKind;
use semcheck_model::Rule;

use crate::catalogue::Mutant;

/// The `no-barrier` mutant of the kernels that use [`neighbor_barrier`].
pub(crate) const NO_BARRIER: Mutant = Mutant {
    name: "no-barrier",
    description: "drop neighbor_barrier: the first DMA can land in a device that has not entered the kernel",
    expected: &[Rule::OutsideKernel],
    repeat: 1,
};

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
