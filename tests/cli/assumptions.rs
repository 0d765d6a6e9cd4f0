//! The hardware assumptions on the command line: what `check` reports a violation
//! requires, every command taking the options, `semcheck semantics`, and the half-wait
//! kernel file.

use serde_json::Value;

use crate::common::{document, only_case, semcheck};

/// The exit code and the document (its one case, for `check`).
fn json_of(args: &[&str]) -> (i32, Value) {
    let (code, out, err) = semcheck(args);
    assert!(!out.is_empty(), "{err}");
    let doc = document(&out);
    let v = if doc["command"] == "check" { only_case(&doc).clone() } else { doc };
    (code, v)
}

#[test]
fn check_reports_what_a_violation_requires() {
    let (code, out, _) = semcheck(&["check", "all_gather", "--mutant", "shared-recv-sem", "--devices", "3"]);
    assert_eq!(code, 1);
    // Which pair of devices it names depends on the orbit representative the search met.
    assert!(
        out.contains("requires dma-reorder: a later DMA d") && out.contains("lands before an earlier one"),
        "{out}"
    );
    assert!(out.contains("with --dma-order pair-fifo: proved at N = 3"), "{out}");

    let (code, v) = json_of(&["check", "all_gather", "--mutant", "shared-recv-sem", "--devices", "3", "--json"]);
    assert_eq!(code, 1);
    assert_eq!(v["requires"], serde_json::json!(["dma-reorder"]));
    assert_eq!(v["assumptions"]["rechecks"][0]["verdict"], "proved");
    // The witness is numbered as the schedule shown (minimised, rotated): its event is that
    // schedule's overtaking landing, named as the witness names it.
    let witness = &v["assumptions"]["witnesses"][0];
    let index = witness["event"].as_u64().expect("an event number") as usize;
    let event = &v["violation"]["events"][index - 1];
    assert_eq!(event["index"].as_u64(), Some(index as u64), "{v}");
    let text = event["text"].as_str().expect("an event");
    assert!(text.starts_with("dma [") && text.contains("received on"), "{text}");
    assert!(witness["detail"].as_str().unwrap().contains(&format!("event {index} `{text}` overtakes")), "{witness}");

    let (code, out, _) =
        semcheck(&["check", "all_gather", "--mutant", "shared-recv-sem", "--devices", "3", "--dma-order", "pair-fifo"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("PROVED"), "{out}");

    for n in ["2", "3"] {
        let (code, v) = json_of(&["check", "psum", "--mutant", "no-capacity", "--devices", n, "--json"]);
        assert_eq!(code, 1);
        assert_eq!(v["requires"], serde_json::json!([]), "N={n}");
        assert_eq!(v["assumptions"]["rechecks"][0]["verdict"], "violation", "N={n}");
        let (code, _) = json_of(&[
            "check",
            "psum",
            "--mutant",
            "no-capacity",
            "--devices",
            n,
            "--dma-order",
            "pair-fifo",
            "--json",
        ]);
        assert_eq!(code, 1, "N={n}: pair-fifo");
    }

    // A proof has nothing to analyse.
    let (code, v) = json_of(&["check", "ppermute", "--devices", "2", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(v["requires"], Value::Null);
}

/// Every command that checks or runs a case takes the options; `check all`, whose
/// expectations are those of the defaults, refuses them in one line.
#[test]
fn every_command_takes_the_options() {
    let shared = ["all_gather", "--mutant", "shared-recv-sem", "--devices", "3"];
    let with = |cmd: &[&str], extra: &[&str]| semcheck(&[cmd, &shared[..], extra].concat());
    let fifo = ["--dma-order", "pair-fifo"];
    // Shuttle: the reordering is found under any; under pair-fifo nothing is (every
    // shuttle violation replays on the model: see tests/engines/assumptions.rs).
    let pct = ["--engine", "shuttle", "--scheduler", "pct", "--iterations", "1000"];
    let (code, out, _) = with(&["check"], &pct);
    assert_eq!(code, 1, "{out}");
    let (code, out, _) = with(&["check"], &[&pct[..], &fifo].concat());
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("dma-order=pair-fifo") && out.contains("no rule broken in 1000 iterations"), "{out}");
    let (code, out, _) = with(&["stress"], &[&["--runs", "3"][..], &fifo].concat());
    assert_eq!(code, 3, "{out}");
    // The explorer's own commands.
    let (code, _, err) = with(&["trace"], &fifo);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("proved, no rule is broken, so there is no counterexample"), "{err}");
    let (code, out, _) = with(&["mutate"], &fifo);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("all_gather/shared-recv-sem N=3 (dma-order=pair-fifo dma-landing=whole): the kernel is proved"),
        "{out}"
    );
    let (code, out, _) =
        semcheck(&["simulate", "all_gather", "--lockstep", "--devices", "3", "--dma-landing", "cells"]);
    assert_eq!(code, 0, "{out}");
    let (code, _, err) = semcheck(&["check", "all", "--dma-order", "pair-fifo"]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("drop --dma-order / --dma-landing"), "{err}");
}

/// `semcheck semantics` lists every modelling choice with its options, default and
/// evidence, as text and as JSON.
#[test]
fn semantics_lists_every_modelling_choice() {
    use semcheck::model::semantics::CHOICES;
    let (code, out, _) = semcheck(&["semantics"]);
    assert_eq!(code, 0);
    for c in CHOICES {
        let head = match c.flag {
            Some(flag) => format!("{} ({flag}, default {})", c.name, c.default),
            None => format!("{} (fixed: {})", c.name, c.default),
        };
        assert!(out.contains(&head), "{head}\n{out}");
        assert!(!c.evidence.is_empty(), "{}: no evidence", c.name);
    }
    for name in [
        "dma-order",
        "dma-landing",
        "implicit-entry-barrier",
        "barrier-persistence",
        "scoped-semaphore-lifetime",
        "pipelined-blocks",
    ] {
        assert!(CHOICES.iter().any(|c| c.name == name), "{name}");
    }
    let (code, v) = json_of(&["semantics", "--json"]);
    assert_eq!(code, 0);
    let v = &v["choices"];
    assert_eq!(v.as_array().unwrap().len(), CHOICES.len());
    assert_eq!(v[0]["name"], "dma-order");
    assert_eq!(v[0]["default"], "any");
    assert_eq!(v[1]["default"], "whole");
}

/// The Python half-wait kernel, checked from the command line: proved with whole
/// landings, a race that requires partial landing with cells.
#[test]
fn the_half_wait_kernel_file_needs_whole_landings() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/protocols/pallas/half_wait.py");
    let (code, v) = json_of(&["check", file, "--devices", "2", "--json"]);
    assert_eq!(code, 0);
    // The proof says what it rests on.
    assert_eq!(v["relies_on"], serde_json::json!(["partial-landing"]));
    assert_eq!(v["assumptions"]["rechecks"][0]["verdict"], "violation");
    let (code, v) = json_of(&["check", file, "--devices", "2", "--dma-landing", "cells", "--json"]);
    assert_eq!(code, 1);
    assert_eq!(v["violation"]["rule"], "race");
    assert_eq!(v["requires"], serde_json::json!(["partial-landing"]));
}
