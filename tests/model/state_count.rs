//! The explorer on a tiny protocol whose state graph is counted by hand.

use semcheck::checker::{explore, Config, Reduction, Verdict};
use semcheck::model::dsl::trace;
use semcheck::model::{compile, Mesh, Notation, Spec};

/// Two devices, each signalling its own REGULAR semaphore and waiting on it. The kernel
/// talks to no other device, so JAX inserts no implicit entry barrier.
///
/// Each device's program is `Enter, Signal(self), Wait, Exit`, pcs 0..=3, and pc 4 once
/// finished. The semaphore of a device is 1 exactly at pc 2 and there are no cells or DMAs,
/// so a state is determined by `(pc0, pc1)`, and every pair of 0..=4 is reachable: 25
/// states. Transitions: every device below pc 4 can step in every state, whatever the
/// other's pc: 2 devices * 4 steps * 5 positions of the other = 40. One final state,
/// (4,4), at depth 8.
#[test]
fn self_signal_pair_has_25_states_and_40_transitions() {
    let kernel = trace("self_signal", |k| {
        let sem = k.regular_semaphore("sem");
        k.semaphore_signal(&sem, 1, None);
        k.semaphore_wait(&sem, 1);
    })
    .unwrap();
    let spec = Spec { notation: Notation::Plain, outputs: vec![] };
    let program = compile(&kernel, &Mesh::ring(2).unwrap(), &spec, 1).unwrap();
    let report = explore(&program, &Config { reduction: Reduction::None, ..Config::default() });
    assert_eq!(report.verdict, Verdict::Proved);
    assert_eq!(report.stats.states, 25);
    assert_eq!(report.stats.transitions, 40);
    assert_eq!(report.stats.finished_states, 1);
    assert_eq!(report.stats.max_depth, 8);

    // With partial-order reduction (stubborn sets): nobody signals or copies into the
    // other device, so entries and exits have no dependents, and the self-signal and the
    // wait never do. One event per state is explored: d0's four steps, then d1's: 9 states.
    let reduced = explore(&program, &Config::default());
    assert_eq!(reduced.verdict, Verdict::Proved);
    assert_eq!(reduced.stats.states, 9);
    assert_eq!(reduced.stats.transitions, 8);
}
