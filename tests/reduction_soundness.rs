//! Partial-order reduction must never change a verdict. This test builds a corpus of
//! plausible buggy kernels, every single-edit mutant of `semcheck mutate`
//! (`semcheck_model::mutate`: deleted, duplicated and swapped statements, signals and
//! copies to the other neighbour or on another semaphore, indices off by one, dropped
//! guards, shrunk waits, dropped handshakes) of each seed kernel, and explores each one
//! with and without reduction: the verdicts must be the same (a violation found without
//! reduction must be found with it, and a kernel proved without reduction must be proved
//! with it).

use semcheck::checker::{explore, Budget, Config, Reduction, Verdict};
use semcheck::model::mutate::{mutations, Operator};
use semcheck::model::{compile, Program};
use semcheck::protocols::find;

fn verdict(program: &Program, reduction: Reduction) -> Verdict {
    let budget = Budget { max_states: Some(3_000_000), ..Budget::default() };
    explore(program, &Config { reduction, budget, ..Config::default() }).verdict
}

#[test]
fn reduction_agrees_with_full_exploration_on_mutated_kernels() {
    let mut compared = 0;
    let mut violations = 0;
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
                    let full = verdict(&program, Reduction::None);
                    if matches!(full, Verdict::Incomplete { .. }) {
                        continue;
                    }
                    let reduced = verdict(&program, Reduction::PartialOrder);
                    assert_eq!(
                        full.name(),
                        reduced.name(),
                        "{protocol} N={n} repeat={repeat} {what}: full {full:?}\nreduced {reduced:?}"
                    );
                    compared += 1;
                    violations += usize::from(matches!(full, Verdict::Violation(_)));
                }
            }
        }
    }
    eprintln!("{compared} variants compared, {violations} with a violation");
    // The corpus must be substantial and mostly buggy, or the test proves little.
    assert!(compared > 400, "only {compared} variants compared");
    assert!(violations > compared / 2, "only {violations} of {compared} variants are buggy");
}
