//! Fuzzing the trace file parser and the replay with proptest: whatever the bytes, parsing
//! and replaying return a result (an error names a line inside the file), never a panic;
//! the header fields that reach the exporter's process (`kernel-tpu`, `kernel-sha256`;
//! `kernel-args` only with replay's own) parse only as plain data. (The command line gets its own hostile corpus:
//! tests/cli/hostile.rs.)
//! Any crash found is kept below as a regression test.

use proptest::prelude::*;
use semcheck::checker::counterexample::{replay, TraceFile};

const COMMITTED: &str = include_str!("../../counterexamples/psum--no-capacity.trace");

/// Parses, loads and replays; checks every error names a line of the input (if any).
fn exercise(bytes: &[u8]) {
    let lines = bytes.split(|&b| b == b'\n').count();
    let check_line = |line: Option<usize>| {
        if let Some(l) = line {
            assert!(l >= 1 && l <= lines.max(1), "line {l} outside 1..={lines}");
        }
    };
    let file = match TraceFile::parse_bytes(bytes) {
        Ok(f) => f,
        Err(e) => return check_line(e.line()),
    };
    // Whatever parsed must print and parse back to the same contents.
    let again = TraceFile::parse(&file.to_text()).expect("a printed trace parses");
    assert_eq!(again.header, file.header);
    assert_eq!(again.rule.0, file.rule.0);
    assert_eq!(
        again.events.iter().map(|l| &l.text).collect::<Vec<_>>(),
        file.events.iter().map(|l| &l.text).collect::<Vec<_>>()
    );
    // What reaches the exporter's process is plain data (issue 26).
    if let Some(chip) = &file.header.tpu {
        assert!(chip.len() <= 32 && chip.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)), "{chip}");
    }
    if let Some(sha) = &file.header.source_sha256 {
        assert!(sha.len() == 64 && sha.chars().all(|c| c.is_ascii_hexdigit()), "{sha}");
    }
    // Do not build huge meshes from fuzzed headers, nor run the scripts fuzzed headers
    // name (`semcheck replay` decides which may run: tests/cli/replay_safety.rs).
    if file.header.case.devices > 8
        || file.header.case.repeat > 3
        || matches!(file.header.case.source, semcheck::Source::Python { .. })
    {
        return;
    }
    let program = match semcheck::trace_program(&file) {
        Ok(p) => p,
        Err(e) => return check_line(e.line()),
    };
    if let Err(e) = replay(&program, &file) {
        check_line(e.line());
    }
}

/// A line-level edit of the committed trace.
#[derive(Clone, Debug)]
enum Edit {
    Delete(usize),
    Duplicate(usize),
    Swap(usize, usize),
    Replace(usize, String),
    Truncate(usize),
    FlipByte(usize, u8),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<usize>().prop_map(Edit::Delete),
        any::<usize>().prop_map(Edit::Duplicate),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::Swap(a, b)),
        (any::<usize>(), "[ -~]{0,40}").prop_map(|(a, s)| Edit::Replace(a, s)),
        any::<usize>().prop_map(Edit::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Edit::FlipByte(a, b)),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> Vec<u8> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut bytes = None;
    for e in edits {
        let n = lines.len().max(1);
        match e {
            Edit::Delete(i) if !lines.is_empty() => {
                lines.remove(i % n);
            }
            Edit::Duplicate(i) if !lines.is_empty() => {
                let l = lines[i % n].clone();
                lines.insert(i % n, l);
            }
            Edit::Swap(a, b) if !lines.is_empty() => lines.swap(a % n, b % n),
            Edit::Replace(i, s) if !lines.is_empty() => lines[i % n] = s.clone(),
            Edit::Truncate(i) => lines.truncate(i % (n + 1)),
            Edit::FlipByte(i, b) => {
                let mut all = lines.join("\n").into_bytes();
                if !all.is_empty() {
                    let k = i % all.len();
                    all[k] = *b;
                }
                bytes = Some(all);
            }
            _ => {}
        }
    }
    bytes.unwrap_or_else(|| (lines.join("\n") + "\n").into_bytes())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        exercise(&bytes);
    }

    #[test]
    fn arbitrary_lines_after_a_valid_header_never_panic(
        lines in proptest::collection::vec("(protocol|mutant|devices|repeat|seed|engine|minimized|event|rule|message|#|x)( [ -~]{0,30})?", 0..12)
    ) {
        let text = format!("semcheck-trace 1\n{}\n", lines.join("\n"));
        exercise(text.as_bytes());
    }

    #[test]
    fn arbitrary_kernel_file_headers_never_panic(
        lines in proptest::collection::vec("(kernel-file|kernel-name|kernel-expect|kernel-sha256|kernel-tpu|kernel-args|dsl|devices|dma-order|dma-landing|engine-schedule|rule)( [ -~]{0,70})?", 0..10)
    ) {
        let text = format!("semcheck-trace 2\n{}\n", lines.join("\n"));
        exercise(text.as_bytes());
    }

    #[test]
    fn edited_committed_traces_never_panic(edits in proptest::collection::vec(edit(), 1..4)) {
        exercise(&apply(COMMITTED, &edits));
    }
}

#[test]
fn the_committed_trace_itself_replays() {
    let file = TraceFile::parse(COMMITTED).unwrap();
    let program = semcheck::trace_program(&file).unwrap();
    assert!(replay(&program, &file).is_ok());
}

/// Regression found by the fuzzer (20 000 cases of `edited_committed_traces_never_panic`):
/// a byte of an event line flipped to `\r` parsed, but the printed file turned it into a
/// space, so a parsed trace did not print back the same. Control characters are now a
/// syntax error naming the line.
#[test]
fn a_carriage_return_inside_a_line_is_rejected() {
    let mut bytes = apply(COMMITTED, &[]);
    let at = COMMITTED.find("event dma").unwrap() + "event d".len();
    bytes[at] = b'\r';
    let err = TraceFile::parse_bytes(&bytes).unwrap_err();
    let line = 1 + COMMITTED[..at].matches('\n').count();
    assert_eq!(err.line(), Some(line), "{err}");
    assert!(err.message().contains("control character U+000D"), "{err}");
    exercise(&bytes);
    let edits = [Edit::FlipByte(316142669051642950, 13)];
    exercise(&apply(COMMITTED, &edits));
}

/// Regression found by the fuzzer right after the previous fix: a tab inside an event line
/// parsed, but printing mapped every control character (tabs included) to a space.
#[test]
fn a_tab_inside_a_line_prints_back_as_a_tab() {
    exercise(&apply(COMMITTED, &[Edit::Duplicate(2630749010211534014), Edit::FlipByte(827556074159630064, 9)]));
    let text = COMMITTED.replacen("(remote_send_sem, remote_recv_sem)", "(remote_send_sem,\tremote_recv_sem)", 1);
    let file = TraceFile::parse(&text).unwrap();
    assert_eq!(TraceFile::parse(&file.to_text()).unwrap().events, file.events);
}

/// Edge cases pinned while fuzzing.
#[test]
fn regressions() {
    // Empty input, only comments, only the version line, a CR-LF file.
    for text in ["", "# nothing\n", "semcheck-trace 1\n", "semcheck-trace 1\r\nprotocol psum\r\n"] {
        let e = TraceFile::parse(text).unwrap_err();
        assert!(e.line().is_some(), "{text:?}: {e}");
    }
    // A rule with no events: no trace semcheck writes is so (a rule is broken after an
    // event), so it is a syntax error at the rule's line.
    let e = TraceFile::parse("semcheck-trace 1\nprotocol psum\ndevices 2\nrule race\n").unwrap_err();
    assert_eq!(e.line(), Some(4), "{e}");
    assert!(e.message().contains("has no events"), "{e}");
    // An event off the mesh names its line.
    let e =
        TraceFile::parse("semcheck-trace 1\nprotocol psum\ndevices 2\nevent d2 enter psum\nrule race\n").unwrap_err();
    assert_eq!(e.line(), Some(4), "{e}");
    // A devices count the protocol cannot run on names the devices line.
    let file =
        TraceFile::parse("semcheck-trace 1\nprotocol tc_exchange\ndevices 3\nevent d0 enter tc_exchange\nrule race\n")
            .unwrap();
    assert_eq!(semcheck::trace_program(&file).unwrap_err().line(), Some(3));
}
