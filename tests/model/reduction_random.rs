//! Randomised differential test of the reductions: small random kernels (signals, waits,
//! local and remote copies of whole two-cell buffers or of single cells, waits with a
//! smaller descriptor than the copy, computations, branches on the device id, with and
//! without a collective id) are explored in every mode (`modes.rs`: with and without
//! partial-order reduction and rotation symmetry, on one and two threads), under every
//! combination of the hardware assumptions (`--dma-order`, `--dma-landing`), and the
//! verdicts, outcomes and counterexamples must agree. Finer than the verdicts: the reduced
//! graph must keep every *first violation* of the full graph (an event, named by its device
//! and pc or its DMA, and the rule it breaks, reached by a path that breaks no rule) and
//! every terminal state (final or deadlocked), which is what the stubborn-set argument
//! promises and what a breadth-first search that stops at its first violation cannot see.

use std::cell::Cell;
use std::collections::{BTreeSet, HashSet};

use crate::modes;
use crate::random_kernel::{kernel, stmt, S, SEMANTICS};
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, RngAlgorithm, TestRng, TestRunner};
use semcheck::checker::Budget;
use semcheck::model::reduction::PorScratch;
use semcheck::model::{compile, Event, Mesh, Notation, Program, Spec, StepOutcome, ValueTable};

/// What a graph search reaches: first violations and terminal states.
#[derive(Debug, PartialEq, Eq)]
struct Reached {
    violations: BTreeSet<String>,
    terminal: BTreeSet<Vec<u32>>,
}

/// The first violations and terminal states of `program`'s graph (full, or reduced by its
/// stubborn sets), or `None` beyond `cap` states. `values` is shared by the searches that
/// are compared, so that equal states are equal vectors.
fn reach(program: &Program, reduced: bool, values: &mut ValueTable, cap: usize) -> Option<Reached> {
    let initial = program.initial_state();
    let mut seen: HashSet<Vec<u32>> = HashSet::from([initial.clone()]);
    let mut queue = vec![initial];
    let mut reached = Reached { violations: BTreeSet::new(), terminal: BTreeSet::new() };
    let (mut enabled, mut chosen, mut next) = (Vec::new(), Vec::new(), Vec::new());
    let mut scratch = PorScratch::default();
    while let Some(state) = queue.pop() {
        enabled.clear();
        program.enabled(&state, &mut enabled);
        if enabled.is_empty() {
            reached.terminal.insert(state);
            continue;
        }
        if reduced {
            program.persistent_set(&state, &enabled, &mut scratch, &mut chosen);
            std::mem::swap(&mut enabled, &mut chosen);
        }
        for &e in &enabled {
            match program.step(&state, e, values, &mut next) {
                StepOutcome::Violation(v) => {
                    let who = match e {
                        Event::Step(d) => format!("{d}@{}", program.pc(&state, d)),
                        other => other.to_string(),
                    };
                    reached.violations.insert(format!("{who} breaks {}", v.rule));
                }
                StepOutcome::Next => {
                    if seen.insert(next.clone()) {
                        if seen.len() > cap {
                            return None;
                        }
                        queue.push(next.clone());
                    }
                }
            }
        }
    }
    Some(reached)
}

/// Fails when the reduced graph of `program` misses a first violation or a terminal state
/// of the full graph.
fn keeps_everything(program: &Program) -> Result<(), String> {
    let mut values = program.values.clone();
    let Some(full) = reach(program, false, &mut values, 50_000) else { return Ok(()) };
    let reduced = reach(program, true, &mut values, 50_000).expect("smaller than the full graph");
    let missed: Vec<_> = full.violations.difference(&reduced.violations).collect();
    let _ = &missed;
    if reduced.terminal != full.terminal {
        return Err(format!(
            "the reduced graph misses first violations {missed:?}, and has {} of the full graph's {} terminal states",
            reduced.terminal.intersection(&full.terminal).count(),
            full.terminal.len()
        ));
    }
    Ok(())
}

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
        keeps_everything(&program).map_err(|e| format!("{semantics}: {e}"))?;
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
