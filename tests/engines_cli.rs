//! The command line of the threaded engines: verdicts, exit codes, bad input.

mod common;
use common::semcheck;

#[test]
fn shuttle_never_says_proved() {
    let (code, out, _) =
        semcheck(&["check", "ppermute", "--devices", "3", "--engine", "shuttle", "--iterations", "50"]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("INCOMPLETE") && out.contains("50 iterations") && out.contains("random"), "{out}");
    assert!(!out.to_lowercase().contains("proved"), "{out}");
}

#[test]
fn shuttle_violation_saves_a_schedule_that_replays() {
    let dir = std::env::temp_dir().join(format!("semcheck-shuttle-cli-{}", std::process::id()));
    let d = dir.to_str().unwrap();
    let args = ["check", "psum", "--mutant", "no-capacity", "--devices", "4", "--engine", "shuttle"];
    let (code, out, _) =
        semcheck(&[&args[..], &["--scheduler", "pct", "--iterations", "100", "--schedule-dir", d]].concat());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("VIOLATION (race)") && out.contains("saved to"), "{out}");
    let file = dir.join("psum-no-capacity-n4.schedule");
    let f = file.to_str().unwrap();
    let (code, out, _) = semcheck(&[&args[..], &["--replay", f]].concat());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("VIOLATION (race)"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stress_reports_runs_and_never_proves() {
    let (code, out, _) = semcheck(&["stress", "psum", "--devices", "8", "--runs", "20"]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("0 of 20 runs mismatched"), "{out}");
}

#[test]
fn bad_engine_input_exits_2_with_a_message() {
    for args in [
        &["check", "psum", "--iterations", "5"][..],
        &["check", "all", "--engine", "shuttle"],
        &["check", "psum", "--engine", "shuttle", "--replay", "/nonexistent/x.schedule"],
        &["check", "psum", "--engine", "warp"],
        &["stress", "nosuch"],
        &["stress", "psum", "--devices", "0"],
        &["engines", "--devices", "3"],
        &["engines", "--max-seconds", "-1"],
    ] {
        let (code, out, err) = semcheck(args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(!err.is_empty() && !err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn every_correct_protocol_runs_clean_on_os_threads() {
    use semcheck::checker::runtime::stress::stress;
    for p in semcheck::protocols::catalogue() {
        let n = if p.mesh_kind == semcheck::protocols::MeshKind::Ring { 4 } else { 2 };
        let program = semcheck::catalogue_program(p.name, None, n, 2).unwrap();
        let r = stress(&program, 20, 1);
        assert!(r.first.is_none(), "{}: {:?}", p.name, r.first);
    }
}

#[test]
fn producer_consumer_without_signal_mismatches_on_os_threads() {
    let program = semcheck::catalogue_program("producer_consumer", Some("no-signal"), 2, 1).unwrap();
    let r = semcheck::checker::runtime::stress::stress(&program, 50, 1);
    assert!(r.first.is_some(), "{r:?}");
}
