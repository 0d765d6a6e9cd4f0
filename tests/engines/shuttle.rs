//! The shuttle engine on the corpus: random and PCT campaigns at N = 2, 4 and 8 for every
//! protocol and mutant, judged by the one corpus judge; every counterexample found replays
//! on the model (reaching the same rule) and under shuttle; and the committed shuttle
//! traces in `counterexamples/shuttle/` replay both ways.

use std::path::{Path, PathBuf};

use semcheck::checker::counterexample::{replay as replay_on_model, TraceFile};
use semcheck::checker::runtime::schedule::on_model;
use semcheck::checker::runtime::shuttle_engine::{check, replay, Campaign, RecordedSchedule, SchedulerKind};
use semcheck::corpus::{cases, cell, judge, run, Budget, Engine, Judgement};
use semcheck::{Outcome, Verdict};

/// A shuttle counterexample replays on the model, breaking the runtime's rule at its last
/// event, and its engine schedule replays under shuttle to the same events and rule.
fn replays_both_ways(program: &semcheck::Program, outcome: &Outcome) -> Result<(), String> {
    let Verdict::Violation(cex) = &outcome.verdict else { return Ok(()) };
    on_model(program, cex).map_err(|e| format!("on the model: {e}"))?;
    let schedule = RecordedSchedule::parse(cex.engine_schedule.as_deref().ok_or("no engine schedule")?)?;
    let again = replay(program, &schedule).map_err(|e| format!("under shuttle: {e}"))?;
    match &again.verdict {
        Verdict::Violation(c) if c.violation.rule == cex.violation.rule && c.schedule == cex.schedule => Ok(()),
        other => Err(format!("under shuttle the schedule gives {other:?}")),
    }
}

fn campaign(n: usize, engine: Engine) {
    let mut failures = Vec::new();
    let budget = Budget::default();
    for entry in cases().iter().filter(|c| c.case.devices == n && c.skipped_by(engine).is_none()) {
        let outcome = run(engine, entry, &budget).unwrap();
        let program = semcheck::program(&entry.case).unwrap();
        let mut judgement = judge(entry, &outcome);
        let mut note = String::new();
        if let Err(e) = replays_both_ways(&program, &outcome) {
            judgement = Judgement::Disagree;
            note = format!(": {e}");
        }
        println!(
            "{} {} {} [{:.2} s, {}]{note}",
            if judgement == Judgement::Agree { "ok  " } else { "FAIL" },
            entry.name(),
            cell(&outcome),
            outcome.stats.seconds,
            engine.name()
        );
        if judgement != Judgement::Agree {
            failures.push(entry.name());
        }
    }
    assert!(failures.is_empty(), "shuttle disagrees with the corpus on {failures:?}");
}

#[test]
fn random_scheduler_at_2_devices() {
    campaign(2, Engine::ShuttleRandom);
}

#[test]
fn pct_scheduler_at_2_devices() {
    campaign(2, Engine::ShuttlePct);
}

#[test]
fn random_scheduler_at_4_devices() {
    campaign(4, Engine::ShuttleRandom);
}

#[test]
fn pct_scheduler_at_4_devices() {
    campaign(4, Engine::ShuttlePct);
}

#[test]
fn random_scheduler_at_8_devices() {
    campaign(8, Engine::ShuttleRandom);
}

#[test]
fn pct_scheduler_at_8_devices() {
    campaign(8, Engine::ShuttlePct);
}

fn committed() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("counterexamples/shuttle");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("counterexamples/shuttle/ exists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != "README.md"))
        .collect();
    files.sort();
    files
}

#[test]
fn committed_shuttle_traces_replay_on_the_model_and_under_shuttle() {
    let files = committed();
    for path in &files {
        assert!(path.extension().is_some_and(|x| x == "trace"), "{}: only trace files belong here", path.display());
    }
    let mutants: usize = semcheck::protocols::catalogue()
        .iter()
        .map(|p| p.mutants.iter().filter(|m| !m.expected.is_empty()).count())
        .sum();
    assert_eq!(files.len(), mutants, "one committed shuttle trace per mutant with an expected rule: {files:?}");
    for path in files {
        let at = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        let trace = TraceFile::parse(&std::fs::read_to_string(&path).unwrap()).unwrap_or_else(|e| panic!("{}", at(&e)));
        let program = semcheck::trace_program(&trace).unwrap_or_else(|e| panic!("{}", at(&e)));
        let (rule, _) = trace.rule;
        let on_the_model = replay_on_model(&program, &trace).unwrap_or_else(|e| panic!("{}", at(&e)));
        assert_eq!(on_the_model.run.ending.violation().map(|v| v.rule), Some(rule), "{}", path.display());
        let schedule = RecordedSchedule::parse(trace.header.engine_schedule.as_deref().expect("an engine schedule"))
            .unwrap_or_else(|e| panic!("{}", at(&e)));
        let under_shuttle = replay(&program, &schedule).unwrap_or_else(|e| panic!("{}", at(&e)));
        let Verdict::Violation(cex) = &under_shuttle.verdict else { panic!("{}: no violation", path.display()) };
        assert_eq!(cex.violation.rule, rule, "{}", path.display());
        assert_eq!(
            cex.schedule,
            on_the_model.run.events,
            "{}: shuttle's events differ from the file's",
            path.display()
        );
    }
}

#[test]
fn a_recorded_schedule_round_trips_as_text() {
    let s = RecordedSchedule { seed: 42, steps: vec![Some(0), Some(1), None, Some(2)] };
    assert_eq!(s.to_text(), "execution-seed=42 steps=0 1 r 2");
    assert_eq!(RecordedSchedule::parse(&s.to_text()).unwrap(), s);
    for bad in ["42 0 1", "execution-seed=x steps=1", "execution-seed=1 0 1", "execution-seed=1 steps=0 q"] {
        assert!(RecordedSchedule::parse(bad).is_err(), "{bad}");
    }
}

/// A kernel whose devices wait on a semaphore nobody signals: the runtime's own deadlock
/// detection reports `deadlock` (before shuttle's), and the model is stuck after the
/// recorded events.
#[test]
fn a_deadlock_is_rule_deadlock_and_the_model_is_stuck_after_the_schedule() {
    use semcheck::model::{compile, dsl::trace, Mesh, Notation, Spec};
    let kernel = trace("stuck", |k| {
        let sem = k.regular_semaphore("never_signalled");
        k.semaphore_wait(&sem, 1);
    })
    .unwrap();
    let spec = Spec { notation: Notation::Plain, outputs: Vec::new() };
    let program = compile(&kernel, &Mesh::ring(2).unwrap(), &spec, 1).unwrap();
    let Verdict::Violation(c) = semcheck::explore(&program, &Default::default()).verdict else { panic!("explorer") };
    assert_eq!(c.violation.rule, semcheck::Rule::Deadlock);
    let outcome = check(&program, Campaign::new(SchedulerKind::Random, 10, 0)).unwrap();
    let Verdict::Violation(cex) = &outcome.verdict else { panic!("shuttle: {outcome:?}") };
    assert_eq!(cex.violation.rule, semcheck::Rule::Deadlock, "{}", cex.violation);
    assert!(cex.violation.message.contains("never_signalled >= 1 (it is 0)"), "{}", cex.violation);
    assert_eq!(cex.violation.devices.len(), 2, "{}", cex.violation);
    on_model(&program, cex).unwrap();
}

/// A time budget stops a campaign early and says so: `incomplete` for the time, with the
/// iterations it ran.
#[test]
fn a_time_budget_is_incomplete_with_the_bound() {
    let program = semcheck::catalogue_program("psum", None, 4, 1).unwrap();
    let campaign = Campaign { max_seconds: Some(0.2), ..Campaign::new(SchedulerKind::Random, 10_000_000, 0) };
    let outcome = check(&program, campaign).unwrap();
    let Verdict::Incomplete { reason, detail } = &outcome.verdict else { panic!("{outcome:?}") };
    assert_eq!(*reason, semcheck::checker::StopReason::Time);
    assert!(detail.contains("0.2 s") && outcome.stats.executions < 10_000_000, "{detail}");
}
