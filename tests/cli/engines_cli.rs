//! The command line of the threaded engines: verdicts, exit codes, one JSON schema, one
//! trace file format, bad input.

use crate::common::{semcheck, temp_dir};

#[test]
fn shuttle_never_says_proved() {
    let (code, out, _) =
        semcheck(&["check", "ppermute", "--devices", "3", "--engine", "shuttle", "--iterations", "50"]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("INCOMPLETE") && out.contains("50 iterations") && out.contains("random"), "{out}");
    assert!(!out.to_lowercase().contains("proved"), "{out}");
}

/// A violation is saved only when asked, as a trace file that `replay` replays on the model
/// and `--replay` re-runs under shuttle; shuttle itself prints nothing.
#[test]
fn a_shuttle_violation_is_a_trace_file_that_replays_both_ways_and_nothing_else_is_written() {
    let dir = temp_dir("shuttle-cli");
    let args = ["check", "psum", "--mutant", "no-capacity", "--devices", "4", "--engine", "shuttle"];
    let search = [&args[..], &["--scheduler", "pct", "--iterations", "100"]].concat();
    let run_in = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_semcheck"))
            .args([&search[..], extra].concat())
            .current_dir(&dir)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = run_in(&[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("VIOLATION (race)") && out.contains("why ("), "{out}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "nothing is written without --schedule-dir");
    assert_eq!(err.lines().count(), 1, "shuttle's own output must not reach stderr: {err}");

    let (code, out, err) = run_in(&["--schedule-dir", "saved"]);
    assert_eq!(code, Some(1), "{out}{err}");
    let file = dir.join("saved/psum--no-capacity--n4.trace");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("engine shuttle scheduler=pct(depth=3) seed=0")
            && text.contains("engine-schedule execution-seed="),
        "{text}"
    );
    let f = file.to_str().unwrap();
    let (code, _, err) = semcheck(&["replay", f]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("rule `race` reproduced"), "{err}");
    let (code, out, err) = semcheck(&[&args[..], &["--replay", f]].concat());
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("VIOLATION (race)"), "{out}");

    // A damaged schedule is one line of error naming the line, never a panic.
    let damaged = text.replace("steps=", "steps=99 ");
    let bad = dir.join("bad.trace");
    std::fs::write(&bad, damaged).unwrap();
    let (code, _, err) = semcheck(&[&args[..], &["--replay", bad.to_str().unwrap()]].concat());
    let line = text.lines().position(|l| l.starts_with("engine-schedule")).unwrap() + 1;
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("line {line}: the shuttle schedule diverges at step 1")), "{err}");
}

/// `check --json` has the same keys, with a top-level `verdict`, whichever engine ran; so
/// does `stress --json`.
#[test]
fn every_engine_has_the_explorers_json_keys() {
    let keys = |args: &[&str]| {
        let (_, out, err) = semcheck(args);
        assert!(!out.is_empty(), "{args:?}: {err}");
        let doc = crate::common::document(&out);
        let v = crate::common::only_case(&doc);
        assert!(v["verdict"].is_string(), "{args:?}: {out}");
        let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    let explorer = keys(&["check", "psum", "--devices", "2", "--json"]);
    let shuttle = keys(&["check", "psum", "--devices", "2", "--engine", "shuttle", "--iterations", "5", "--json"]);
    let stress = keys(&["stress", "psum", "--devices", "2", "--runs", "2", "--json"]);
    assert_eq!(shuttle, explorer);
    assert_eq!(stress, explorer);
}

#[test]
fn shuttle_honours_max_seconds_and_says_incomplete_with_the_bound() {
    let (code, out, err) = semcheck(&[
        "check",
        "psum",
        "--devices",
        "4",
        "--engine",
        "shuttle",
        "--iterations",
        "10000000",
        "--max-seconds",
        "0.3",
    ]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("INCOMPLETE") && out.contains("time budget of 0.3 s"), "{out}");
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
        &["check", "psum", "--engine", "shuttle", "--replay", "/nonexistent/x.trace"],
        &["check", "psum", "--engine", "shuttle", "--replay", "x.trace", "--seed", "3"],
        &["check", "psum", "--engine", "shuttle", "--max-states", "5"],
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
fn producer_consumer_without_signal_mismatches_on_os_threads() {
    let program = semcheck::catalogue_program("producer_consumer", Some("no-signal"), 2, 1).unwrap();
    let outcome = semcheck::checker::runtime::stress::stress(&program, 50, 1);
    assert!(outcome.verdict.violation().is_some(), "{outcome:?}");
}
