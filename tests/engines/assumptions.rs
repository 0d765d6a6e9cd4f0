//! The threaded runtime under the hardware assumptions (`--dma-order`, `--dma-landing`).

use semcheck::checker::{explore, Budget, Config, Verdict};
use semcheck::model::{compile, Mesh};

/// The threaded runtime under shuttle honours every assumption. On small random kernels
/// (`tests/common/random_kernel.rs`), under each combination of the options, every
/// violation shuttle finds replays on the model under the same options, every event enabled
/// and the same rule broken at its end: shuttle never takes a step the model rules out (a
/// later DMA of a pair landing first under pair-fifo, part of a copy landing under whole),
/// so it never breaks a kernel the model proves. And it does find the violations that only
/// a reordering or a partial landing allows. Two kernels in three have outputs, checked
/// against their lock-step values or against a specification with two values exchanged
/// (`random_kernel::Outputs`), so shuttle's wrong results (shared outputs included) replay too.
#[test]
fn shuttle_honours_every_assumption_on_random_kernels() {
    use crate::random_kernel::{checked, outputs, stmt, SEMANTICS};
    use proptest::prelude::*;
    use proptest::test_runner::{Config as RunnerConfig, RngAlgorithm, TestRng, TestRunner};
    use semcheck::checker::runtime::schedule::on_model;
    use semcheck::checker::runtime::shuttle_engine::{check, Campaign, SchedulerKind};
    use semcheck::model::Rule;
    use std::cell::Cell;

    let config = RunnerConfig { cases: 500, failure_persistence: None, ..RunnerConfig::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let (runs, found, needs_order, needs_landing) = (Cell::new(0), Cell::new(0), Cell::new(0), Cell::new(0));
    let wrong = Cell::new(0);
    let strategy = (2..4usize, any::<bool>(), prop::collection::vec(stmt(), 1..7), outputs());
    runner
        .run(&strategy, |(n, collective, body, outputs)| {
            let Some((kernel, spec)) = checked(n, collective, 1, &body, outputs) else { return Ok(()) };
            let mesh = Mesh::ring(n).unwrap();
            let Ok(compiled) = compile(&kernel, &mesh, &spec, 1) else { return Ok(()) };
            let budget = Budget { max_states: Some(50_000), ..Budget::default() };
            let mut model = Vec::new();
            for semantics in SEMANTICS {
                let program = compiled.clone().with_semantics(semantics).expect("a small kernel");
                let verdict = explore(&program, &Config { budget, ..Config::default() }).verdict;
                if matches!(verdict, Verdict::Incomplete { .. }) {
                    return Ok(());
                }
                model.push((program, verdict));
            }
            for (i, (program, verdict)) in model.iter().enumerate() {
                let outcome = check(program, Campaign::new(SchedulerKind::Random, 100, 0)).expect("no panic");
                runs.set(runs.get() + 1);
                let Verdict::Violation(cex) = &outcome.verdict else { continue };
                let replay = on_model(program, cex);
                prop_assert!(
                    replay.is_ok(),
                    "{}: shuttle's {} does not replay on the model ({:?}): {:?}\nmodel: {:?}",
                    program.semantics,
                    cex.violation,
                    replay.err(),
                    body,
                    verdict.name()
                );
                found.set(found.get() + 1);
                wrong.set(wrong.get() + usize::from(cex.violation.rule == Rule::WrongResult));
                // SEMANTICS: any/whole, pair-fifo/whole, any/cells, pair-fifo/cells.
                let stronger_order = [Some(1), None, Some(3), None][i];
                let stronger_landing = [None, None, Some(0), Some(1)][i];
                let proved = |j: Option<usize>| j.is_some_and(|j| model[j].1 == Verdict::Proved);
                needs_order.set(needs_order.get() + usize::from(proved(stronger_order)));
                needs_landing.set(needs_landing.get() + usize::from(proved(stronger_landing)));
            }
            Ok(())
        })
        .unwrap();
    let (runs, found, order, landing) = (runs.get(), found.get(), needs_order.get(), needs_landing.get());
    let wrong = wrong.get();
    eprintln!(
        "{runs} shuttle campaigns: {found} violations, each replayed on the model ({wrong} wrong results); {order} need a reordering, {landing} a partial landing"
    );
    assert!(runs > 300, "only {runs} campaigns");
    assert!(wrong >= 3, "shuttle found only {wrong} wrong results");
    assert!(
        order >= 3 && landing >= 3,
        "shuttle found too few violations that need an assumption: order {order}, landing {landing}"
    );
}
