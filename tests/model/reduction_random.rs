//! Randomised differential test of the reductions: small random kernels (signals, waits,
//! local and remote copies of whole two-cell buffers or of single cells, waits with a
//! smaller descriptor than the copy, computations, branches on the device id, with and
//! without a collective id) are explored in every mode (`modes.rs`: with and without
//! partial-order reduction and rotation symmetry, on one and two threads), under every
//! combination of the hardware assumptions (`--dma-order`, `--dma-landing`), and the
//! verdicts, outcomes and counterexamples must agree.

use std::cell::Cell;

use crate::modes;
use crate::random_kernel::{kernel, stmt, S, SEMANTICS};
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, RngAlgorithm, TestRng, TestRunner};
use semcheck::checker::Budget;
use semcheck::model::{compile, Mesh, Notation, Spec};

/// The verdict of full exploration under each of [`SEMANTICS`] once every mode agreed, or
/// `None` when the kernel does not compile or a full exploration runs out of budget.
fn verdicts(n: usize, collective: bool, repeat: u32, body: &[S]) -> Result<Option<Vec<&'static str>>, String> {
    let Some(kernel) = kernel(n, collective, body) else { return Ok(None) };
    let spec = Spec { notation: Notation::Plain, outputs: vec![] };
    let Ok(compiled) = compile(&kernel, &Mesh::ring(n).unwrap(), &spec, repeat) else { return Ok(None) };
    let budget = Budget { max_states: Some(50_000), ..Budget::default() };
    let mut out = Vec::new();
    for semantics in SEMANTICS {
        let program = compiled.clone().with_semantics(semantics).expect("a small kernel");
        match modes::agree(&program, budget).map_err(|e| format!("{semantics}: {e}"))? {
            Some(agreed) => out.push(agreed.verdict),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

#[test]
fn reductions_never_change_a_verdict_under_any_assumption() {
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
            let all = verdicts(n, collective, repeat, &body);
            prop_assert!(all.is_ok(), "{}", all.unwrap_err());
            let Ok(Some(name)) = all else { return Ok(()) };
            compared.set(compared.get() + 1);
            proved.set(proved.get() + usize::from(name[0] == "proved"));
            order_matters.set(order_matters.get() + usize::from(name[0] != name[1] || name[2] != name[3]));
            landing_matters.set(landing_matters.get() + usize::from(name[0] != name[2] || name[1] != name[3]));
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
