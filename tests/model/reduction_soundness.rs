//! Partial-order reduction must never change a verdict. This test builds a corpus of
//! plausible buggy kernels, every single-edit mutant of `semcheck mutate`
//! (`semcheck_model::mutate`: deleted, duplicated and swapped statements, signals and
//! copies to the other neighbour or on another semaphore, indices off by one, dropped
//! guards, shrunk waits, dropped handshakes) of each seed kernel, and explores each one
//! with and without reduction: the verdicts must be the same (a violation found without
//! reduction must be found with it, and a kernel proved without reduction must be proved
//! with it), under the default assumptions and under `--dma-order pair-fifo`.

use semcheck::checker::{explore, Budget, Config, Reduction, Verdict};
use semcheck::model::mutate::{mutations, Operator};
use semcheck::model::{compile, DmaLanding, DmaOrder, Program, Semantics};
use semcheck::protocols::find;

fn verdict(program: &Program, reduction: Reduction) -> Verdict {
    let budget = Budget { max_states: Some(3_000_000), ..Budget::default() };
    explore(program, &Config { reduction, budget, ..Config::default() }).verdict
}

/// The corpus of one run: per protocol, the mesh sizes and repeat counts to mutate.
type Corpus<'a> = &'a [(&'a str, &'a [usize], &'a [u32])];

/// Explores every mutated kernel of `corpus` under `semantics` with and without reduction;
/// returns (compared, with a violation).
fn compare(semantics: Semantics, corpus: Corpus<'_>) -> (usize, usize) {
    let mut compared = 0;
    let mut violations = 0;
    for &(protocol, sizes, repeats) in corpus {
        let p = find(protocol).unwrap();
        for &n in sizes {
            let kernel = p.kernel(n, None).unwrap();
            let mesh = p.mesh(n).unwrap();
            for m in mutations(&kernel, &Operator::ALL) {
                let what = &m.edit;
                for &repeat in repeats {
                    let Ok(program) = compile(&m.kernel, &mesh, &p.spec(n), repeat) else { continue };
                    let program = program.with_semantics(semantics).unwrap();
                    let full = verdict(&program, Reduction::None);
                    if matches!(full, Verdict::Incomplete { .. }) {
                        continue;
                    }
                    let reduced = verdict(&program, Reduction::PartialOrder);
                    assert_eq!(
                        full.name(),
                        reduced.name(),
                        "{protocol} N={n} repeat={repeat} {what} ({semantics}): full {full:?}\nreduced {reduced:?}"
                    );
                    compared += 1;
                    violations += usize::from(matches!(full, Verdict::Violation(_)));
                }
            }
        }
    }
    eprintln!("{semantics}: {compared} variants compared, {violations} with a violation");
    (compared, violations)
}

#[test]
fn reduction_agrees_with_full_exploration_on_mutated_kernels() {
    let (compared, violations) = compare(
        Semantics::default(),
        &[
            ("ppermute", &[2, 3][..], &[1, 2][..]),
            ("all_gather", &[2, 3, 4], &[1]),
            ("psum", &[2, 3], &[1, 2]),
            ("psum_scatter", &[2], &[1, 2]),
            ("tc_exchange", &[2], &[1, 2]),
            ("producer_consumer", &[2], &[1, 2]),
        ],
    );
    // The corpus must be substantial and mostly buggy, or the test proves little.
    assert!(compared > 400, "only {compared} variants compared");
    assert!(violations > compared / 2, "only {violations} of {compared} variants are buggy");
}

/// The same under `--dma-order pair-fifo`, where a landing can wait for an earlier DMA of its
/// queue. (`--dma-landing cells` changes nothing here: every copy of the seed kernels is of
/// one cell; `tests/model/reduction_random.rs` covers it with copies of two cells.)
#[test]
fn reduction_agrees_with_full_exploration_under_pair_fifo() {
    let semantics = Semantics { dma_order: DmaOrder::PairFifo, dma_landing: DmaLanding::Whole };
    let (compared, violations) = compare(
        semantics,
        &[
            ("ppermute", &[2, 3][..], &[1, 2][..]),
            ("all_gather", &[2, 3, 4], &[1]),
            ("psum", &[2], &[1, 2]),
            ("psum_scatter", &[2], &[1]),
            ("tc_exchange", &[2], &[1, 2]),
            ("producer_consumer", &[2], &[1, 2]),
        ],
    );
    assert!(compared > 300, "only {compared} variants compared");
    assert!(violations > compared / 2, "only {violations} of {compared} variants are buggy");
}
