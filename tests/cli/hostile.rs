//! Hostile input to the command line (issue 26, item 9): a corpus of hostile arguments
//! and damaged trace files, and random argument lists, given to the binary. Whatever the
//! input, semcheck never panics and exits with 0 to 3; nothing it is given makes it hang
//! (each run here is killed after 60 s, which fails the test).

use crate::common::temp_dir;

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use proptest::prelude::*;

/// Runs semcheck with `args` (stdin empty); asserts it ends within 60 s, exits 0 to 3 and
/// does not panic. Returns (exit code, stderr).
fn survives(args: &[OsString]) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_semcheck"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read stderr meanwhile: a long message must not fill the pipe and block semcheck.
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut err = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut err);
        err
    });
    let start = Instant::now();
    let shown = format!("{:.200?}", args);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{shown}: still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let err = reader.join().unwrap();
    let code = status.code().unwrap_or_else(|| panic!("{shown}: killed by a signal: {status:?}\n{err:.2000}"));
    assert!((0..=3).contains(&code), "{shown}: exit {code}\n{err:.2000}");
    assert!(!err.contains("panicked"), "{shown}: {err:.2000}");
    (code, err)
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

#[test]
fn a_corpus_of_hostile_arguments_gets_an_exit_code_and_a_message() {
    let dir = temp_dir("hostile-args");
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let fifo = fifo.to_str().unwrap();
    let fifo_json = dir.join("doc.json").display().to_string();
    assert!(Command::new("mkfifo").arg(&fifo_json).status().unwrap().success());
    let d = dir.to_str().unwrap();
    let long = "x".repeat(100_000);
    let corpus: Vec<Vec<&str>> = vec![
        vec![],
        vec![""],
        vec!["check"],
        vec!["check", ""],
        vec!["check", "psum", "--devices", "0"],
        vec!["check", "psum", "--devices", "-1"],
        vec!["check", "psum", "--devices", "18446744073709551616"],
        vec!["check", "psum", "--devices", "2", "--max-seconds", "nan"],
        vec!["check", "psum", "--devices", "2", "--max-seconds", "inf"],
        vec!["check", "psum", "--devices", "2", "--max-seconds", "-1"],
        vec!["check", "psum", "--devices", "2", "--max-memory-mib", "0"],
        vec!["check", "psum", "--devices", "2", "--max-memory-mib", "99999999999999"],
        vec!["check", "psum", "--devices", "2", "--max-memory-mib", "1"],
        vec!["check", "psum", "--sizes", "1..100000"],
        vec!["check", "psum", "--sizes", "5..2"],
        vec!["check", "psum", "--sizes", ",,,"],
        vec!["check", "psum", "--repeat", "0"],
        vec!["check", "psum", "--repeat", "4294967296"],
        vec!["check", "psum", "--mutant", "../../etc/passwd"],
        vec!["check", &long],
        vec!["check", "/dev/zero", "--devices", "2", "--max-seconds", "5"],
        vec!["check", fifo, "--devices", "2", "--max-seconds", "5"],
        vec!["check", d, "--devices", "2"],
        vec!["check", "/nonexistent/kernel.py", "--devices", "2"],
        vec!["check", "/dev/zero.json", "--devices", "2"],
        vec!["trace", "psum", "--format", "../../x"],
        vec!["trace", "psum", "--mutant", "no-capacity", "--devices", "2", "--max-seconds", "0"],
        vec!["simulate", "psum", "--lockstep", "--devices", "100000", "--max-seconds", "5"],
        vec!["check", &fifo_json, "--devices", "2"],
        vec!["replay", ""],
        vec!["replay", d],
        vec!["replay", "/dev/null"],
        vec!["replay", "/dev/zero", "--max-memory-mib", "1"],
        vec!["replay", fifo, "--max-seconds", "1"],
        vec!["replay", "-", "--kernel", "/dev/zero"],
        vec!["replay", "/nonexistent", "--kernel", fifo],
        vec!["check", "psum", "--devices", "2", "--engine", "shuttle", "--replay", fifo],
        vec!["check", "psum", "--devices", "2", "--engine", "shuttle", "--replay", "/dev/zero"],
        vec!["semantics", "--json", "--json"],
        vec!["list", "extra"],
        vec!["--max-seconds", "1"],
        vec!["supervise"],
        vec!["supervise", "--", ""],
        vec!["supervise", "--", "/dev/zero"],
        vec!["supervise", "--", d],
        vec!["supervise", "--max-seconds", "nan", "--", "true"],
        vec!["supervise", "--max-memory-mib", "0", "--", "true"],
    ];
    for args in corpus {
        survives(&os(&args));
    }
    // Arguments that are not UTF-8.
    survives(&[OsString::from("check"), OsString::from_vec(vec![0xff, 0xfe, b'.', b'p', b'y'])]);
    survives(&[OsString::from("replay"), OsString::from_vec(vec![b'/', 0x80])]);
}

#[test]
fn a_pipe_named_like_a_kernel_file_is_refused_without_being_opened() {
    let dir = temp_dir("hostile-pipe");
    let fifo = dir.join("kernel.py");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let fifo = fifo.to_str().unwrap();
    for args in [vec!["check", fifo, "--devices", "2"], vec!["check", fifo, fifo, "--devices", "2"]] {
        let (code, err) = survives(&os(&args));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(&format!("{fifo} is not a regular file (a device, a pipe or a socket)")), "{err}");
    }
}

#[test]
fn damaged_kernel_file_traces_get_an_exit_code_and_a_message() {
    let dir = temp_dir("hostile-traces");
    let head = "semcheck-trace 2\n";
    let rest = "devices 2\nrule race\n";
    let corpus = [
        format!("{head}kernel-file /etc/passwd\nkernel-sha256 {}\n{rest}", "0".repeat(64)),
        format!("{head}kernel-file /dev/zero\n{rest}"),
        format!("{head}kernel-file .\n{rest}"),
        format!("{head}kernel-file ../../../../../../../bin/sh\n{rest}"),
        format!("{head}kernel-file k.py\nkernel-file k.py\n{rest}"),
        format!("{head}kernel-file k.py\nprotocol psum\n{rest}"),
        format!("{head}kernel-file k.py\nmutant x\n{rest}"),
        format!("{head}kernel-file k.py\nkernel-tpu \n{rest}"),
        format!("{head}kernel-file k.py\nkernel-sha256 {}\n{rest}", "g".repeat(64)),
        format!("{head}kernel-file k.py\ndevices 0\nrule race\n"),
        format!("{head}dsl anything\n{rest}"),
        format!("{head}kernel-file {}\n{rest}", "a/".repeat(5000)),
    ];
    for (i, text) in corpus.iter().enumerate() {
        let path = dir.join(format!("{i}.trace"));
        std::fs::write(&path, text).unwrap();
        let (code, err) = survives(&[OsString::from("replay"), path.clone().into_os_string()]);
        assert_eq!(code, 2, "{text}: {err}");
        assert!(!err.contains("running "), "{text}: ran a script: {err}");
    }
}

/// Tokens random argument lists are made of: commands, flags, and values good and bad.
const TOKENS: &[&str] = &[
    "check",
    "trace",
    "replay",
    "simulate",
    "semantics",
    "list",
    "psum",
    "all_gather",
    "tc_exchange",
    "--mutant",
    "no-capacity",
    "--devices",
    "--repeat",
    "--sizes",
    "--format",
    "--json",
    "--lockstep",
    "--kernel",
    "--allow-changed",
    "--max-seconds",
    "--max-memory-mib",
    "--dma-order",
    "--dma-landing",
    "pair-fifo",
    "cells",
    "-",
    "--",
    "0",
    "1",
    "2",
    "3",
    "-5",
    "2..4",
    "1e9",
    "nan",
    "table",
    "/dev/null",
    "/dev/zero",
    "",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_argument_lists_get_an_exit_code(picks in proptest::collection::vec(0..TOKENS.len(), 0..7)) {
        let mut args: Vec<&str> = picks.iter().map(|&i| TOKENS[i]).collect();
        // Bound the work a valid command may do.
        if matches!(args.first(), Some(&"check" | &"trace" | &"replay" | &"simulate")) {
            args.extend(["--max-seconds", "5"]);
        }
        survives(&os(&args));
    }
}
