//! The two open questions of SPEC §6, and why the checker's answers make sense.
//!
//! * `psum --mutant single-barrier` (invoked twice): proved. The double barrier guards
//!   against a device that finishes an invocation, re-enters and signals the persistent
//!   barrier semaphore of a neighbour that has not yet consumed the previous invocation's
//!   signals. In psum that cannot happen: a device finishes an invocation only after its
//!   right neighbour's capacity signals (sent after that neighbour's barrier wait) and its
//!   left neighbour's data (sent after that neighbour's barrier wait). The kernel below, in
//!   which a device hears only from its left neighbour after the barrier, shows the checker
//!   does find the bug the double barrier exists for (from five devices on).
//! * `psum_scatter --mutant no-capacity`: proved. Every phase of the bidirectional kernel
//!   ends with a `wait_recv` for data *from* the neighbour it writes to, sent after that
//!   neighbour finished the phase that reads the slot, so the receive semaphores already
//!   give the back-pressure the capacity semaphores were added for.

use semcheck::checker::{explore, Config, Verdict};
use semcheck::model::dsl::trace;
use semcheck::model::ir::{Kernel, MemorySpace, SemKind};
use semcheck::model::{compile, Mesh, Notation, Rule, Spec};
use semcheck::protocols::find;

fn verdict_of(kernel: &Kernel, n: usize, repeat: u32) -> Verdict {
    let spec = Spec { notation: Notation::Plain, outputs: vec![] };
    let program = compile(kernel, &Mesh::ring(n).unwrap(), &spec, repeat).unwrap();
    explore(&program, &Config::default()).verdict
}

/// A right shift guarded by `neighbor_barrier`: after the barrier a device only waits for
/// its left neighbour's data, so nothing stops it from finishing early.
fn guarded_shift(n: usize, double_barrier: bool) -> Kernel {
    trace("guarded_shift", |k| {
        k.collective_id(0);
        let x_ref = k.input("x_ref", MemorySpace::Hbm, &[]);
        let y_ref = k.output("y_ref", MemorySpace::Hbm, &[]);
        let send_sem = k.dma_semaphore("send_sem");
        let recv_sem = k.dma_semaphore("recv_sem");
        let my_id = k.axis_index("x");
        let right = (&my_id + 1) % n;
        let left = (&my_id - 1 + n as i64) % n;

        let barrier = k.get_barrier_semaphore();
        for nbr in [&left, &right] {
            k.semaphore_signal(&barrier, 1, nbr);
        }
        k.semaphore_wait(&barrier, 2);
        if double_barrier {
            k.run_scoped("second", SemKind::Regular, |k, second| {
                for nbr in [&left, &right] {
                    k.semaphore_signal(&second, 1, nbr);
                }
                k.semaphore_wait(&second, 2);
            });
        }
        let dma = k.make_async_remote_copy(&x_ref, &y_ref, &send_sem, &recv_sem, &right);
        dma.start();
        dma.wait();
    })
    .unwrap()
}

#[test]
fn single_barrier_breaks_a_kernel_that_can_finish_early_and_double_barrier_fixes_it() {
    let single = verdict_of(&guarded_shift(5, false), 5, 2);
    let Verdict::Violation(c) = &single else { panic!("single barrier not caught: {single:?}") };
    assert_eq!(c.violation.rule, Rule::OutsideKernel, "{}", c.violation.message);
    assert_eq!(verdict_of(&guarded_shift(5, true), 5, 2), Verdict::Proved);
    // Invoked once, the single barrier is enough.
    assert_eq!(verdict_of(&guarded_shift(5, false), 5, 1), Verdict::Proved);
    // It takes five devices: d2 finishes having heard only from d1, re-enters and signals
    // d3 twice, so d3 passes its first barrier without d4 and its DMA lands in d4 before d4
    // has entered. On smaller rings every device's neighbours are close enough that the
    // one it skips has already entered.
    for n in [3, 4] {
        assert_eq!(verdict_of(&guarded_shift(n, false), n, 2), Verdict::Proved, "N={n}");
    }
}

#[test]
fn psum_with_a_single_barrier_is_proved_when_invoked_repeatedly() {
    let psum = find("psum").unwrap();
    for (n, repeat) in [(2, 2), (3, 2), (4, 3)] {
        let program = psum.program(n, Some("single-barrier"), repeat).unwrap();
        assert_eq!(explore(&program, &Config::default()).verdict, Verdict::Proved, "N={n} repeat={repeat}");
    }
}

#[test]
fn psum_scatter_without_capacity_semaphores_is_proved() {
    let p = find("psum_scatter").unwrap();
    for (n, repeat) in [(2, 1), (3, 1), (4, 1), (3, 2)] {
        let program = p.program(n, Some("no-capacity"), repeat).unwrap();
        assert_eq!(explore(&program, &Config::default()).verdict, Verdict::Proved, "N={n} repeat={repeat}");
    }
}
