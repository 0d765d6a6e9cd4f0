//! Statement coverage: a statement that never runs at a mesh size makes a proof vacuous
//! there, and the check says so.

use semcheck::checker::{explore, Budget, Config, Verdict};
use semcheck::coverage::never_executed;
use semcheck::model::dsl::trace;
use semcheck::model::ir::{Kernel, MemorySpace};
use semcheck::model::{compile, Mesh, Notation, Program, Rule, Spec};

/// A ring kernel walking a grid of N - 1 steps (like all_gather): every step passes its
/// shard right; step 1 also does a handshake with the neighbours, which waits for `wait`
/// signals where one arrives. At N = 2 the grid has one step, so the handshake never runs.
fn kernel(n: usize, wait: i64) -> Kernel {
    trace("late_handshake", |k| {
        k.grid(&[n - 1]);
        let x = k.input("x", MemorySpace::Hbm, &[]);
        let out = k.output("out", MemorySpace::Hbm, &[n - 1]);
        let (send, recv) = (k.dma_semaphore("send"), k.dma_semaphore("recv"));
        let ready = k.regular_semaphore("ready");
        let step = k.program_id(0);
        let right = (k.axis_index("x") + 1) % n;
        let dma = k.make_async_remote_copy(&x, &out.at(&step), &send, &recv, &right);
        dma.start();
        dma.wait();
        k.when(step.clone().equals(1), |k| {
            k.semaphore_signal(&ready, 1, &right);
            k.semaphore_wait(&ready, wait);
        });
    })
    .unwrap()
}

fn program(n: usize, wait: i64) -> Program {
    let spec = Spec { notation: Notation::Plain, outputs: vec![] };
    compile(&kernel(n, wait), &Mesh::ring(n).unwrap(), &spec, 1).unwrap()
}

#[test]
fn a_statement_that_runs_from_three_devices_on_is_never_executed_at_two() {
    let two = program(2, 1);
    let outcome = explore(&two, &Config::default());
    assert_eq!(outcome.verdict, Verdict::Proved);
    let missed = never_executed(&two, &outcome).unwrap();
    assert_eq!(missed.len(), 1, "{missed:?}");
    assert_eq!(missed[0].statement, "@pl.when(program_id(0) == 1)");
    let loc = missed[0].location.as_ref().unwrap();
    assert!(loc.file.ends_with("coverage.rs"), "{loc}");
    assert!(missed[0].label.starts_with("coverage.rs:"), "{}", missed[0].label);

    let three = program(3, 1);
    let outcome = explore(&three, &Config::default());
    assert_eq!(outcome.verdict, Verdict::Proved);
    assert_eq!(never_executed(&three, &outcome).unwrap(), []);
}

#[test]
fn the_vacuous_proof_hides_a_bug_that_the_next_size_finds() {
    // Waiting for two signals where one arrives: "proved" at N = 2, where the wait never
    // runs (and coverage says so); a deadlock at N = 3.
    let two = program(2, 2);
    let outcome = explore(&two, &Config::default());
    assert_eq!(outcome.verdict, Verdict::Proved);
    assert_eq!(never_executed(&two, &outcome).unwrap().len(), 1);
    let three = program(3, 2);
    let outcome = explore(&three, &Config::default());
    assert_eq!(outcome.verdict.violation().map(|v| v.rule), Some(Rule::Deadlock));
    assert!(never_executed(&three, &outcome).is_err(), "a violation stops the exploration early");
}

#[test]
fn an_incomplete_exploration_does_not_claim_coverage() {
    let three = program(3, 1);
    let config = Config { budget: Budget { max_states: Some(5), ..Budget::default() }, ..Config::default() };
    let outcome = explore(&three, &config);
    assert!(matches!(outcome.verdict, Verdict::Incomplete { .. }));
    let why = never_executed(&three, &outcome).unwrap_err();
    assert!(why.contains("stopped early"), "{why}");
}
