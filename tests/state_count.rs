//! The explorer on a tiny protocol whose state graph is counted by hand.

use semcheck::checker::{explore, Config, Reduction, Verdict};
use semcheck::model::dsl::trace;
use semcheck::model::{compile, Mesh, Notation, Spec};

/// Two devices, no collective id (so Pallas' implicit entry barrier applies), each
/// signalling its own REGULAR semaphore and waiting on it.
///
/// Each device's program is `Enter, EntryBarrier, Signal(self), Wait, Exit`, pcs 0..=4, and
/// pc 5 once finished. The semaphore of a device is 1 exactly at pc 3 and there are no
/// cells or DMAs, so a state is determined by `(pc0, pc1)`. The entry barrier lets a device
/// past pc 1 only once the other has entered (pc >= 1), so the reachable pairs are every
/// pair of 0..=5 except those with one pc >= 2 and the other 0: 36 - 2 * 4 = 28 states.
///
/// Transitions: in the 25 states with both pcs >= 1, each device below pc 5 can step:
/// 25 * 2 - 5 - 5 = 40. (0,0) has 2 (either enters), (1,0) and (0,1) one each (the device
/// at the barrier waits): 44 in all. One final state, (5,5), at depth 10.
#[test]
fn self_signal_pair_has_28_states_and_44_transitions() {
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
    assert_eq!(report.stats.states, 28);
    assert_eq!(report.stats.transitions, 44);
    assert_eq!(report.stats.finished_states, 1);
    assert_eq!(report.stats.max_depth, 10);

    // With partial-order reduction (stubborn sets): nobody signals or copies into the
    // other device, so entries and exits have no dependents, and the barrier, the
    // self-signal and the wait never do. One event per state is explored:
    // (0,0) -> (1,0) -> (1,1) [d0 waits at the barrier for d1] -> (2,1) -> (3,1) -> (4,1)
    // -> (5,1) -> (5,2) -> (5,3) -> (5,4) -> (5,5): 11 states.
    let reduced = explore(&program, &Config::default());
    assert_eq!(reduced.verdict, Verdict::Proved);
    assert_eq!(reduced.stats.states, 11);
    assert_eq!(reduced.stats.transitions, 10);
}
