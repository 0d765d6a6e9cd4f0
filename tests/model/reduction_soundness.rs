//! Reductions must never change a verdict. This test builds a corpus of plausible buggy
//! kernels, every single-edit mutant of `semcheck mutate` (`semcheck_model::mutate`:
//! deleted, duplicated and swapped statements, signals and copies to the other neighbour
//! or on another semaphore, indices off by one, dropped guards, shrunk waits, dropped
//! handshakes) of each seed kernel, and explores each one in every mode (`modes.rs`):
//! with and without partial-order reduction and rotation symmetry, on one and two
//! threads. The verdicts must be the same (a violation found without reduction must be
//! found with it, and a kernel proved without reduction must be proved with it), two
//! threads must give one thread's outcome exactly, and every counterexample must replay
//! on the program.

use crate::modes;

use semcheck::checker::Budget;
use semcheck::model::compile;
use semcheck::model::mutate::{mutations, Operator};
use semcheck::protocols::find;

#[test]
fn reductions_agree_with_full_exploration_on_mutated_kernels() {
    let budget = Budget { max_states: Some(3_000_000), ..Budget::default() };
    let mut compared = 0;
    let mut violations = 0;
    let mut symmetric = 0;
    for (protocol, sizes, repeats) in [
        ("ppermute", &[2, 3][..], &[1, 2][..]),
        ("all_gather", &[2, 3, 4], &[1]),
        ("psum", &[2, 3], &[1, 2]),
        ("psum_scatter", &[2], &[1, 2]),
        ("tc_exchange", &[2], &[1, 2]),
        ("producer_consumer", &[2], &[1, 2]),
    ] {
        let p = find(protocol).unwrap();
        for &n in sizes {
            let kernel = p.kernel(n, None).unwrap();
            let mesh = p.mesh(n).unwrap();
            for m in mutations(&kernel, &Operator::ALL) {
                let what = &m.edit;
                for &repeat in repeats {
                    let Ok(program) = compile(&m.kernel, &mesh, &p.spec(n), repeat) else { continue };
                    let agreed = modes::agree(&program, budget)
                        .unwrap_or_else(|e| panic!("{protocol} N={n} repeat={repeat} {what}: {e}"));
                    let Some(agreed) = agreed else { continue };
                    compared += 1;
                    violations += usize::from(agreed.verdict == "violation");
                    symmetric += usize::from(agreed.symmetric);
                }
            }
        }
    }
    eprintln!("{compared} variants compared, {violations} with a violation, {symmetric} rotation-symmetric");
    // The corpus must be substantial and mostly buggy, or the test proves little.
    assert!(compared > 400, "only {compared} variants compared");
    assert!(violations > compared / 2, "only {violations} of {compared} variants are buggy");
    assert!(symmetric > compared / 2, "only {symmetric} of {compared} variants are rotation-symmetric");
}
