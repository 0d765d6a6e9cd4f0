//! The committed counterexamples in `counterexamples/`: every mutant with an expected rule
//! has one, and every one still replays against the current model and breaks its rule.
//!
//! `SEMCHECK_BLESS=1 cargo test --test cli traces::regenerate` rewrites them from the explorer
//! (smallest ring size that shows the bug, minimised), exactly as
//! `semcheck trace P --mutant M --devices N --format trace` would.

use crate::common::semcheck;

use std::path::{Path, PathBuf};

use semcheck::checker::counterexample::{counterexample, engine_name, replay, TraceErrorKind, TraceFile};
use semcheck::checker::{explore, Config, Verdict};
use semcheck::protocols::{catalogue, MeshKind};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("counterexamples")
}

fn file_for(protocol: &str, mutant: &str) -> PathBuf {
    dir().join(format!("{protocol}--{mutant}.trace"))
}

fn committed() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("counterexamples/ exists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "trace"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_committed_trace_replays_and_breaks_its_rule() {
    let files = committed();
    assert!(!files.is_empty(), "no committed traces");
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let trace = TraceFile::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let program = semcheck::program(&trace.header.case).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let replayed = replay(&program, &trace).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let violation = replayed.run.ending.violation().unwrap();
        assert_eq!(violation.rule, trace.rule.0, "{}", path.display());
        assert_eq!(replayed.run.events.len(), trace.events.len(), "{}", path.display());
    }
}

#[test]
fn every_mutant_with_an_expected_rule_has_a_committed_trace_and_open_ones_have_none() {
    let readme = std::fs::read_to_string(dir().join("README.md")).expect("counterexamples/README.md");
    for p in catalogue() {
        for m in p.mutants {
            let path = file_for(p.name, m.name);
            if m.expected.is_empty() {
                assert!(!path.exists(), "{} is an open question: no trace should be committed", path.display());
                assert!(
                    readme.contains(&format!("{} {}", p.name, m.name)),
                    "README must explain {} {}",
                    p.name,
                    m.name
                );
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("missing {}", path.display()));
            let trace = TraceFile::parse(&text).unwrap();
            assert_eq!(trace.header.case.source.protocol(), Some(p.name));
            assert_eq!(trace.header.case.source.mutant(), Some(m.name));
            assert!(m.expected.contains(&trace.rule.0), "{}: {} is not an expected rule", path.display(), trace.rule.0);
        }
    }
}

#[test]
fn the_cli_replays_a_committed_trace_with_exit_1() {
    let path = file_for("psum", "no-capacity");
    let (code, out, err) = semcheck(&["replay", path.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("rule `race` reproduced") || err.contains("rule `wrong-result` reproduced"), "{err}");
    assert!(out.contains("d0"), "{out}");
    for format in ["table", "mermaid", "dot", "json", "trace"] {
        let (code, out, err) = semcheck(&["replay", path.to_str().unwrap(), "--format", format]);
        assert_eq!(code, 1, "{format}: {err}");
        assert!(!out.is_empty(), "{format}");
    }
    // Replaying with `--format trace` gives back the committed file.
    let (_, out, _) = semcheck(&["replay", path.to_str().unwrap(), "--format", "trace"]);
    assert_eq!(out, std::fs::read_to_string(&path).unwrap());
}

fn write_temp(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("semcheck-{}-{name}.trace", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

/// A committed trace with one line replaced.
fn damaged(line_starts: &str, replacement: &str) -> (PathBuf, usize) {
    let text = std::fs::read_to_string(file_for("psum", "no-capacity")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let i = lines.iter().position(|l| l.starts_with(line_starts)).unwrap();
    lines[i] = replacement.to_string();
    (write_temp(&format!("damaged{i}"), &(lines.join("\n") + "\n")), i + 1)
}

/// A damaged file is exit 2; a sound file whose run no longer breaks its rule (an event
/// not possible any more, another rule) is exit 4, "no longer reproduces". Both name the
/// line.
#[test]
fn bad_trace_files_are_rejected_with_exit_2_and_changed_ones_do_not_reproduce_with_exit_4() {
    let cases = [
        ("protocol ", "protocol psum_typo", "unknown protocol", 2),
        ("devices ", "devices two", "not a number of devices", 2),
        ("event d0 (0) wait barrier 2", "event d0 (0) wait barrier 3", "d0 has no operation so named any more", 4),
        ("event d1 enter psum", "evnt d1 enter psum", "unknown key", 2),
        // A device index off the mesh is a damaged file, not a fixed bug (exit 4 read by CI
        // as "no longer reproduces").
        ("event d1 enter psum", "event d7 enter psum", "names device d7 but the trace's mesh has 2 devices", 2),
        ("event d1 enter psum", "event d99999999999999999999 enter psum", "names device d99999999999999999999", 2),
        ("event d1 enter psum", "event enter psum", "is not an event", 2),
        // More devices than the model supports: refused as `--devices 4097` is.
        ("devices ", "devices 65535", "`65535` is not a number of devices in 1..=4096", 2),
        ("rule ", "rule deadlock", "not `deadlock`", 4),
        ("mutant ", "mutant no-such-mutant", "has no mutant", 2),
        // The protocol changed under the trace: the correct psum has the capacity handshake.
        ("mutant ", "# mutant dropped", "is not possible any more, because", 4),
    ];
    for (starts, replacement, words, want) in cases {
        let (path, line) = damaged(starts, replacement);
        let (code, out, err) = semcheck(&["replay", path.to_str().unwrap()]);
        assert_eq!(code, want, "{replacement}: {err}");
        assert!(out.is_empty(), "{out}");
        assert!(err.contains(words), "`{err}` should say `{words}`");
        assert_eq!(err.contains("no longer reproduces"), want == 4, "{err}");
        if starts != "rule " && !replacement.starts_with('#') {
            assert!(err.contains(&format!("line {line}:")), "`{err}` should name line {line}");
        }
        std::fs::remove_file(path).unwrap();
    }
    // An event removed from the middle: the next one is not enabled.
    let text = std::fs::read_to_string(file_for("psum", "no-capacity")).unwrap();
    let cut: Vec<&str> = text.lines().filter(|l| !l.starts_with("event d0 (0) wait barrier 2")).collect();
    let path = write_temp("cut", &(cut.join("\n") + "\n"));
    let trace = TraceFile::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let err = replay(&semcheck::program(&trace.header.case).unwrap(), &trace).unwrap_err();
    assert!(matches!(err.kind(), TraceErrorKind::NotEnabled | TraceErrorKind::Rule), "{err}");
    assert!(err.line().is_some(), "{err}");
    std::fs::remove_file(path).unwrap();
    // Not a file at all.
    let (code, _, err) = semcheck(&["replay", "/nonexistent/semcheck.trace"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read"), "{err}");
}

/// A trace without events is damaged (every trace semcheck writes has one: a deadlock at
/// entry follows each device's `enter`), exit 2 at the `rule` line; a UTF-8 byte order
/// mark some editors put first is skipped.
#[test]
fn a_trace_without_events_is_bad_input_and_a_byte_order_mark_is_skipped() {
    let text = std::fs::read_to_string(file_for("psum", "no-capacity")).unwrap();
    let rule = 1 + text.lines().position(|l| l.starts_with("rule ")).unwrap();
    let none: String = text.lines().filter(|l| !l.starts_with("event ")).map(|l| format!("{l}\n")).collect();
    let rule_then = 1 + none.lines().position(|l| l.starts_with("rule ")).unwrap();
    assert!(rule_then < rule);
    let path = write_temp("no-events", &none);
    let (code, out, err) = semcheck(&["replay", path.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains(&format!("line {rule_then}: a counterexample trace has no events")), "{err}");
    std::fs::remove_file(path).unwrap();
    let path = write_temp("bom", &format!("\u{FEFF}{text}"));
    let (code, _, err) = semcheck(&["replay", path.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("reproduced"), "{err}");
    std::fs::remove_file(path).unwrap();
}

/// Rewrites `counterexamples/*.trace` when `SEMCHECK_BLESS=1`; otherwise checks that the
/// generator still produces, for every committed trace, a trace that breaks the same rule
/// (the schedule itself may legitimately change with the model).
#[test]
fn regenerate() {
    let bless = std::env::var("SEMCHECK_BLESS").is_ok_and(|v| v == "1");
    // As `semcheck trace` explores: rotation symmetry on, as `check` does by default.
    let config = Config { symmetry: semcheck::checker::Symmetry::Auto, ..Config::default() };
    for p in catalogue() {
        for m in p.mutants.iter().filter(|m| !m.expected.is_empty()) {
            let sizes: Vec<usize> = match p.mesh_kind {
                MeshKind::Ring => (2..=6).collect(),
                MeshKind::TensorCores => vec![2],
            };
            let mut found = None;
            for n in sizes {
                let case = semcheck::catalogue_case(p.name, Some(m.name), n).unwrap();
                let program = semcheck::program(&case).unwrap();
                if let Verdict::Violation(cex) = explore(&program, &config).verdict {
                    let f = counterexample(&program, &cex, true).unwrap();
                    found = Some(f.trace_file(&case, &engine_name(&config)));
                    break;
                }
            }
            let file = found.unwrap_or_else(|| panic!("{} {} shows no violation up to N=6", p.name, m.name));
            let path = file_for(p.name, m.name);
            if bless {
                std::fs::write(&path, file.to_text()).unwrap();
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                let committed = TraceFile::parse(&text).unwrap();
                assert_eq!(committed.rule.0, file.rule.0, "{}: regenerate with SEMCHECK_BLESS=1", path.display());
                assert_eq!(committed.header.case.devices, file.header.case.devices, "{}", path.display());
            }
        }
    }
}

#[test]
fn the_cli_trace_writes_the_committed_file_and_renders_every_format() {
    let (code, out, err) =
        semcheck(&["trace", "psum", "--mutant", "no-capacity", "--devices", "2", "--format", "trace"]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(out, std::fs::read_to_string(file_for("psum", "no-capacity")).unwrap());
    assert!(err.contains("after minimising"), "{err}");
    let (code, out, _) =
        semcheck(&["trace", "psum", "--mutant", "no-capacity", "--devices", "2", "--format", "mermaid"]);
    assert_eq!(code, 1);
    assert!(out.starts_with("sequenceDiagram\n    participant d0\n    participant d1\n"), "{out}");
    assert!(out.contains("rect rgb(255, 200, 200)") && out.contains("VIOLATION race"), "{out}");
    // The run-ahead: d1's step-0 copy into d0's hbm_buf[1] lands before d0 gets past its prologue.
    let landing = out.find("d1--)d0: ").expect("a DMA arrow from d1 to d0");
    assert!(out[landing..].contains("hbm_buf[1]"), "{out}");
    for format in ["text", "table", "dot", "json"] {
        let (code, out, err) =
            semcheck(&["trace", "psum", "--mutant", "no-capacity", "--devices", "2", "--format", format]);
        assert_eq!(code, 1, "{format}: {err}");
        assert!(out.contains("race"), "{format}");
    }
}

#[test]
fn the_cli_trace_of_a_correct_protocol_says_there_is_nothing_to_trace() {
    let (code, out, err) = semcheck(&["trace", "psum", "--devices", "2"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("proved") && err.contains("no counterexample"), "{err}");
}

#[test]
fn the_cli_rejects_bad_trace_and_simulate_arguments_with_exit_2() {
    for args in [
        vec!["trace", "no_such_protocol"],
        vec!["trace", "psum", "--mutant", "no-such-mutant"],
        vec!["trace", "tc_exchange", "--devices", "3"],
        vec!["trace", "psum", "--format", "svg"],
        vec!["simulate", "no_such_protocol", "--lockstep"],
        vec!["replay"],
    ] {
        let (code, _, err) = semcheck(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(!err.is_empty() && !err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn the_cli_simulates_the_seed_tables() {
    let (code, out, err) = semcheck(&["simulate", "psum", "--devices", "4", "--lockstep", "--format", "table"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("== after prologue ==") && out.contains("== after (3) =="), "{out}");
    assert!(out.contains("x0+x1+x2+x3"), "{out}");
    let (code, out, _) = semcheck(&["simulate", "psum_scatter", "--devices", "4", "--lockstep", "--format", "json"]);
    assert_eq!(code, 0);
    let v = crate::common::document(&out);
    let last = v["checkpoints"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["checkpoint"], "(3,1)");
    assert_eq!(last["devices"][0]["slots"]["o_ref[1]"], "B0(0+1+2+3)");
}

#[test]
fn replay_of_an_endless_file_stops_with_exit_2() {
    // /dev/zero never ends; replay must refuse it rather than read forever.
    if std::path::Path::new("/dev/zero").exists() {
        let (code, _, err) = semcheck(&["replay", "/dev/zero"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("not a trace file"), "{err}");
    }
}
