//! The shuttle engine on the corpus: random and PCT campaigns at N = 4 and N = 8 for every
//! protocol and mutant, and the replay of every committed schedule.

use std::path::{Path, PathBuf};
use std::time::Instant;

use semcheck::checker::runtime::shuttle_engine::{
    check, replay, Campaign, RecordedSchedule, ScheduleFile, SchedulerKind, ShuttleVerdict,
};
use semcheck::corpus::{cases, Engine, Entry, Expect};
use semcheck::Verdict;

/// Iterations per campaign: the budget within which every mutant must be caught. The
/// random scheduler needs thousands for `all_gather/shared-recv-sem` (one DMA must stay in
/// flight across a whole step; measured first failures are in the README); PCT finds every
/// mutant in its first iterations.
fn budget(n: usize, scheduler: SchedulerKind) -> usize {
    match (scheduler, n) {
        (SchedulerKind::Random, _) => 10_000,
        (SchedulerKind::Pct { .. }, 2 | 4) => 1_000,
        (SchedulerKind::Pct { .. }, _) => 300,
    }
}

fn run_case(entry: &Entry, scheduler: SchedulerKind) -> (ShuttleVerdict, f64) {
    let program = semcheck::program(&entry.case).unwrap();
    let start = Instant::now();
    let iterations = budget(entry.case.devices, scheduler);
    let report = check(&program, Campaign { scheduler, iterations, seed: 0 }).unwrap();
    (report.verdict, start.elapsed().as_secs_f64())
}

fn campaign(n: usize, scheduler: SchedulerKind) {
    let mut failures = Vec::new();
    for case in cases().iter().filter(|c| c.case.devices == n && c.skipped_by(Engine::Shuttle).is_none()) {
        let (verdict, secs) = run_case(case, scheduler);
        let line = match (&verdict, case.expect) {
            (ShuttleVerdict::Incomplete { iterations }, Expect::Clean) => {
                format!("ok   {} clean after {iterations} iterations", case.name())
            }
            (ShuttleVerdict::Violation { violation, iteration, .. }, Expect::Broken(rules))
                if rules.contains(&violation.rule) =>
            {
                format!("ok   {} {} at iteration {iteration}", case.name(), violation.rule)
            }
            _ => {
                failures.push(case.name());
                format!("FAIL {} {verdict:?}", case.name())
            }
        };
        println!("{} [{:.2} s, {}]", line, secs, scheduler.name());
    }
    assert!(failures.is_empty(), "shuttle disagrees with the corpus on {failures:?}");
}

#[test]
fn random_scheduler_at_2_devices() {
    campaign(2, SchedulerKind::Random);
}

#[test]
fn pct_scheduler_at_2_devices() {
    campaign(2, SchedulerKind::Pct { depth: 3 });
}

#[test]
fn random_scheduler_at_4_devices() {
    campaign(4, SchedulerKind::Random);
}

#[test]
fn pct_scheduler_at_4_devices() {
    campaign(4, SchedulerKind::Pct { depth: 3 });
}

#[test]
fn random_scheduler_at_8_devices() {
    campaign(8, SchedulerKind::Random);
}

#[test]
fn pct_scheduler_at_8_devices() {
    campaign(8, SchedulerKind::Pct { depth: 3 });
}

fn committed() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("counterexamples/shuttle");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "schedule"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn committed_schedules_replay() {
    let files = committed();
    let mutants: usize = semcheck::protocols::catalogue()
        .iter()
        .map(|p| p.mutants.iter().filter(|m| !m.expected.is_empty()).count())
        .sum();
    assert_eq!(files.len(), mutants, "one committed schedule per mutant with an expected rule: {files:?}");
    for path in files {
        let f = ScheduleFile::read(&path).unwrap();
        let program = semcheck::catalogue_program(&f.protocol, f.mutant.as_deref(), f.devices, f.repeat).unwrap();
        let v = replay(&program, &f.schedule).unwrap();
        let v = v.unwrap_or_else(|| panic!("{}: the schedule no longer breaks a rule", path.display()));
        assert_eq!(v.rule, f.rule, "{}: {v}", path.display());
    }
}

#[test]
fn a_schedule_file_round_trips() {
    let f = ScheduleFile {
        protocol: "psum".into(),
        mutant: Some("no-capacity".into()),
        devices: 4,
        repeat: 1,
        rule: semcheck::Rule::Race,
        found_by: "random scheduler, seed 0, iteration 3".into(),
        message: "race on d1 hbm_buf[0]".into(),
        schedule: RecordedSchedule { seed: 42, steps: vec![Some(0), Some(1), None, Some(2)] },
    };
    let text = f.to_text("x.schedule");
    assert_eq!(ScheduleFile::parse(&text).unwrap(), f);
    assert!(ScheduleFile::parse("protocol psum\n").unwrap_err().contains("needs"));
    assert!(ScheduleFile::parse("bogus 1\n").unwrap_err().contains("unknown key"));
}

/// Shuttle's own deadlock detection is reported as the model's `deadlock`: a kernel whose
/// devices wait on a semaphore nobody signals.
#[test]
fn shuttle_deadlock_detection_is_rule_deadlock() {
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
    let report = check(&program, Campaign { scheduler: SchedulerKind::Random, iterations: 10, seed: 0 }).unwrap();
    let ShuttleVerdict::Violation { violation, .. } = report.verdict else { panic!("shuttle: {report:?}") };
    assert_eq!(violation.rule, semcheck::Rule::Deadlock, "{violation}");
    assert!(violation.message.contains("shuttle detected it"), "{violation}");
}
