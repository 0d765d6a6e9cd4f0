//! The explorer's column of the agreement table: every corpus case (N = 2, 4, 8) that the
//! explorer is not skip-listed for must get the corpus's expected verdict. (The shuttle
//! and loom columns are `tests/shuttle.rs` and `tests/loom.rs`; `semcheck engines` prints
//! the whole table.)

use semcheck::checker::{explore, Budget, Config, Verdict};
use semcheck::corpus::{cases, Engine, Expect};

#[test]
fn explorer_agrees_with_the_corpus() {
    let mut failures = Vec::new();
    for case in cases().iter().filter(|c| c.skipped_by(Engine::Explore).is_none()) {
        let program = semcheck::program(&case.case).unwrap();
        let config = Config { budget: Budget { max_seconds: Some(60.0), ..Budget::default() }, ..Config::default() };
        let verdict = explore(&program, &config).verdict;
        let ok = match (&verdict, case.expect) {
            (Verdict::Proved, Expect::Clean) => true,
            (Verdict::Violation(c), Expect::Broken(rules)) => rules.contains(&c.violation.rule),
            _ => false,
        };
        println!("{} {}: {}", if ok { "ok  " } else { "FAIL" }, case.name(), verdict.name());
        if !ok {
            failures.push(case.name());
        }
    }
    assert!(failures.is_empty(), "the explorer disagrees with the corpus on {failures:?}");
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
