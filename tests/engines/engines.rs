//! The explorer's and stress's columns of the agreement table, run and judged by the one
//! corpus runner: every corpus case (N = 2, 4, 8) that the explorer is not skip-listed for
//! must get the corpus's expected verdict, and no clean case may break a rule on OS
//! threads. (The shuttle and loom columns are `tests/shuttle.rs` and `tests/loom.rs`;
//! `semcheck engines` prints the whole table.)

use semcheck::corpus::{cases, cell, judge, run, Budget, Engine, Expect, Judgement};

fn column(engine: Engine, only: impl Fn(&semcheck::corpus::Entry) -> bool) {
    let budget = Budget::default();
    let mut failures = Vec::new();
    for entry in cases().iter().filter(|c| c.skipped_by(engine).is_none() && only(c)) {
        let outcome = run(engine, entry, &budget).unwrap();
        let judgement = judge(entry, &outcome);
        let ok = judgement == Judgement::Agree;
        println!("{} {}: {} ({judgement:?})", if ok { "ok  " } else { "FAIL" }, entry.name(), cell(&outcome));
        if !ok {
            failures.push(entry.name());
        }
    }
    assert!(failures.is_empty(), "{} disagrees with the corpus on {failures:?}", engine.name());
}

#[test]
fn explorer_agrees_with_the_corpus() {
    column(Engine::Explore, |_| true);
}

/// Stress samples too few schedules to be held to the broken cases (see docs/engines.md's
/// table); it must never break a rule in a clean one.
#[test]
fn stress_breaks_no_clean_case() {
    column(Engine::Stress, |e| e.expect == Expect::Clean && e.case.devices <= 4);
}

#[test]
fn every_case_has_a_visible_skip_reason_and_loom_runs_only_n_2() {
    for case in cases() {
        for (engine, why) in &case.skip {
            assert!(!why.is_empty(), "{} skips {engine:?} without a reason", case.name());
        }
        assert_eq!(case.skipped_by(Engine::Loom).is_none(), case.case.devices == 2, "{}", case.name());
    }
}

/// The judge of every engine: missed is not a contradiction, and a proof of a broken case
/// or a rule in a clean one is.
#[test]
fn the_judge_tells_agree_missed_and_disagree_apart() {
    use semcheck::checker::{Counterexample, EngineRun, Outcome, Stats, StopReason, Verdict};
    use semcheck::model::Violation;
    use semcheck::Rule;
    let all = cases();
    let clean = all.iter().find(|e| e.expect == Expect::Clean).unwrap();
    let broken = all.iter().find(|e| matches!(e.expect, Expect::Broken(r) if r.contains(&Rule::Race))).unwrap();
    let outcome = |verdict| Outcome {
        verdict,
        stats: Stats::default(),
        run: EngineRun::Shuttle { scheduler: "random".into(), iterations: 1, seed: 0 },
    };
    let broke = |rule| {
        outcome(Verdict::Violation(Counterexample {
            violation: Violation::new(rule, vec![], String::new()),
            schedule: vec![],
            engine_schedule: None,
        }))
    };
    let sampled = || outcome(Verdict::Incomplete { reason: StopReason::Sampled, detail: String::new() });
    let timed_out = || outcome(Verdict::Incomplete { reason: StopReason::Time, detail: String::new() });
    assert_eq!(judge(clean, &outcome(Verdict::Proved)), Judgement::Agree);
    assert_eq!(judge(clean, &sampled()), Judgement::Agree);
    assert_eq!(judge(clean, &timed_out()), Judgement::Missed);
    assert_eq!(judge(clean, &broke(Rule::Race)), Judgement::Disagree);
    assert_eq!(judge(broken, &broke(Rule::Race)), Judgement::Agree);
    assert_eq!(judge(broken, &broke(Rule::Deadlock)), Judgement::Disagree);
    assert_eq!(judge(broken, &sampled()), Judgement::Missed);
    assert_eq!(judge(broken, &outcome(Verdict::Proved)), Judgement::Disagree);
}
