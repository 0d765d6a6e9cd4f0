//! Randomised differential test of partial-order reduction: small random kernels (signals,
//! waits, local and remote copies of whole two-cell buffers or of single cells, waits with
//! a smaller descriptor than the copy, computations, branches on the device id, with and
//! without a collective id) are explored with and without reduction, under every
//! combination of the hardware assumptions (`--dma-order`, `--dma-landing`), and the
//! verdicts must agree.

use std::cell::Cell;

use crate::random_kernel::{kernel, stmt, S, SEMANTICS};
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, RngAlgorithm, TestRng, TestRunner};
use semcheck::checker::{explore, Budget, Config, Reduction, Verdict};
use semcheck::model::{compile, Mesh, Notation, Spec};

/// The (full, reduced) verdicts under each of [`SEMANTICS`], or `None` when the kernel does
/// not compile or a full exploration runs out of budget.
fn verdicts(n: usize, collective: bool, repeat: u32, body: &[S]) -> Option<Vec<(Verdict, Verdict)>> {
    let kernel = kernel(n, collective, body)?;
    let spec = Spec { notation: Notation::Plain, outputs: vec![] };
    let compiled = compile(&kernel, &Mesh::ring(n).unwrap(), &spec, repeat).ok()?;
    let budget = Budget { max_states: Some(50_000), ..Budget::default() };
    let mut out = Vec::new();
    for semantics in SEMANTICS {
        let program = compiled.clone().with_semantics(semantics).expect("a small kernel");
        let full = explore(&program, &Config { reduction: Reduction::None, budget, ..Config::default() }).verdict;
        if matches!(full, Verdict::Incomplete { .. }) {
            return None;
        }
        let reduced =
            explore(&program, &Config { reduction: Reduction::PartialOrder, budget, ..Config::default() }).verdict;
        out.push((full, reduced));
    }
    Some(out)
}

#[test]
fn reduction_never_changes_a_verdict_under_any_assumption() {
    // A fixed seed: the same corpus every run, so the coverage floors below are stable.
    let config = RunnerConfig { cases: 1000, failure_persistence: None, ..RunnerConfig::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let compared = Cell::new(0usize);
    let proved = Cell::new(0usize);
    let order_matters = Cell::new(0usize);
    let landing_matters = Cell::new(0usize);
    let strategy = (2..4usize, any::<bool>(), 1..3u32, prop::collection::vec(stmt(), 1..9));
    runner
        .run(&strategy, |(n, collective, repeat, body)| {
            let Some(all) = verdicts(n, collective, repeat, &body) else { return Ok(()) };
            for ((full, reduced), semantics) in all.iter().zip(SEMANTICS) {
                prop_assert_eq!(full.name(), reduced.name(), "{}\nfull {:?}\nreduced {:?}", semantics, full, reduced);
            }
            let name = |i: usize| all[i].0.name();
            compared.set(compared.get() + 1);
            proved.set(proved.get() + usize::from(name(0) == "proved"));
            order_matters.set(order_matters.get() + usize::from(name(0) != name(1) || name(2) != name(3)));
            landing_matters.set(landing_matters.get() + usize::from(name(0) != name(2) || name(1) != name(3)));
            Ok(())
        })
        .unwrap();
    let (compared, proved) = (compared.get(), proved.get());
    let (order, landing) = (order_matters.get(), landing_matters.get());
    eprintln!("{compared} kernels compared under 4 assumptions each: {proved} proved by default; the DMA order decides {order}, the landing {landing}");
    // The corpus must be substantial, hold correct kernels, and exercise both options, or the
    // test proves little.
    assert!(compared > 400, "only {compared} kernels compared");
    assert!(proved > 20, "only {proved} kernels proved");
    assert!(order >= 5 && landing >= 5, "the options decide too few verdicts: order {order}, landing {landing}");
}
