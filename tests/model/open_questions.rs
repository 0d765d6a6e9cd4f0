//! The two open questions of the catalogue (mutants whose effect the sources leave open), and why the checker's answers make sense.
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
use semcheck::Rule;

fn verdict(protocol: &str, mutant: Option<&str>, n: usize, repeat: u32) -> Verdict {
    let program = semcheck::catalogue_program(protocol, mutant, n, repeat).unwrap();
    explore(&program, &Config::default()).verdict
}

/// `guarded_shift` (in the catalogue): a right shift guarded by `neighbor_barrier`; after
/// the barrier a device only waits for its left neighbour's data, so nothing stops it from
/// finishing early.
#[test]
fn single_barrier_breaks_a_kernel_that_can_finish_early_and_double_barrier_fixes_it() {
    let single = verdict("guarded_shift", Some("single-barrier"), 5, 2);
    let Verdict::Violation(c) = &single else { panic!("single barrier not caught: {single:?}") };
    assert_eq!(c.violation.rule, Rule::OutsideKernel, "{}", c.violation.message);
    assert_eq!(verdict("guarded_shift", None, 5, 2), Verdict::Proved);
    // Invoked once, the single barrier is enough.
    assert_eq!(verdict("guarded_shift", Some("single-barrier"), 5, 1), Verdict::Proved);
    // It takes five devices: d2 finishes having heard only from d1, re-enters and signals
    // d3 twice, so d3 passes its first barrier without d4 and its DMA lands in d4 before d4
    // has entered. On smaller rings every device's neighbours are close enough that the
    // one it skips has already entered.
    for n in [2, 3, 4] {
        assert_eq!(verdict("guarded_shift", Some("single-barrier"), n, 2), Verdict::Proved, "N={n}");
    }
}

#[test]
fn psum_with_a_single_barrier_is_proved_when_invoked_repeatedly() {
    for (n, repeat) in [(2, 2), (3, 2), (4, 3)] {
        assert_eq!(verdict("psum", Some("single-barrier"), n, repeat), Verdict::Proved, "N={n} repeat={repeat}");
    }
}

#[test]
fn psum_scatter_without_capacity_semaphores_is_proved() {
    for (n, repeat) in [(2, 1), (3, 1), (4, 1), (3, 2)] {
        assert_eq!(verdict("psum_scatter", Some("no-capacity"), n, repeat), Verdict::Proved, "N={n} repeat={repeat}");
    }
}
