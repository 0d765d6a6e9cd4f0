//! The `semcheck` binary: exit codes, JSON shape and errors on bad input.

use crate::common::{document, only_case, semcheck};

use serde_json::Value;

#[test]
fn list_json_has_every_protocol_and_mutant() {
    let (code, out, _) = semcheck(&["list", "--json"]);
    assert_eq!(code, 0);
    let doc = document(&out);
    let v = &doc["protocols"];
    let names: Vec<&str> = v.as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "ppermute",
            "all_gather",
            "psum",
            "psum_scatter",
            "tc_exchange",
            "producer_consumer",
            "guarded_shift",
            "split_ppermute"
        ]
    );
    let psum = &v[2];
    let mutants: Vec<&str> = psum["mutants"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(mutants, ["no-capacity", "no-barrier", "single-barrier"]);
    assert!(psum["mutants"][0]["description"].as_str().unwrap().contains("capacity"));
}

#[test]
fn psum_no_capacity_is_a_violation_with_a_trace_and_psum_is_proved() {
    let (code, out, _) = semcheck(&["check", "psum", "--mutant", "no-capacity", "--devices", "2", "--json"]);
    assert_eq!(code, 1);
    let doc = document(&out);
    assert_eq!(doc["verdict"], "violation");
    assert_eq!(doc["exit_code"], 1);
    let v = only_case(&doc);
    assert_eq!(v["verdict"], "violation");
    assert_eq!(v["protocol"], "psum");
    assert_eq!(v["mutant"], "no-capacity");
    assert_eq!(v["devices"], 2);
    assert_eq!(v["repeat"], 1);
    let rule = v["violation"]["rule"].as_str().unwrap();
    assert!(rule == "race" || rule == "wrong-result", "{rule}");
    let events = v["violation"]["events"].as_array().unwrap();
    assert!(!events.is_empty());
    // Every event of a catalogue kernel but entry, exit and the implicit barrier has the
    // DSL source line it was written at; the breaking event's is the violation's.
    assert!(events.iter().filter(|e| e["line"].is_u64()).count() * 2 > events.len(), "{v}");
    let breaking = &events[v["violation"]["breaking_event"].as_u64().unwrap() as usize - 1];
    assert_eq!(v["violation"]["location"]["line"], breaking["line"], "{v}");
    assert!(breaking["file"].as_str().unwrap().ends_with("psum.rs"), "{breaking}");
    assert!(v["states"].as_u64().unwrap() > 0);
    assert!(v["seconds"].is_number());

    let (code, out, _) = semcheck(&["check", "psum", "--devices", "2", "--json"]);
    assert_eq!(code, 0);
    let doc = document(&out);
    let v = only_case(&doc);
    assert_eq!(doc["verdict"], "proved");
    assert_eq!(v["verdict"], "proved");
    assert_eq!(v["mutant"], Value::Null);
    assert_eq!(v["violation"], Value::Null);
}

#[test]
fn one_case_and_many_have_the_same_top_level_keys() {
    let keys = |args: &[&str]| {
        let (_, out, _) = semcheck(args);
        let doc = document(&out);
        let mut keys: Vec<String> = doc.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        (keys, doc["cases"].as_array().unwrap().len())
    };
    let (one, n1) = keys(&["check", "psum", "--devices", "2", "--json"]);
    let (two, n2) = keys(&["check", "psum", "--devices", "2-3", "--json"]);
    let (all, _) = keys(&["check", "all", "--json"]);
    let (error, n0) = keys(&["check", "nosuch", "--json"]);
    assert_eq!((n1, n2, n0), (1, 2, 0));
    assert_eq!(one, two);
    assert_eq!(one, all);
    assert_eq!(one, error);
    assert!(one.contains(&"schema_version".to_string()), "{one:?}");
}

#[test]
fn a_reader_that_goes_away_does_not_turn_a_violation_into_success() {
    // `semcheck check ... | head -1` under `set -o pipefail`: the exit code is still the
    // verdict's, whatever the broken pipe did to the output.
    for (args, code) in [
        (&["check", "psum", "--mutant", "no-capacity", "--devices", "2-4"][..], 1),
        (&["check", "psum", "--devices", "2-3"][..], 0),
    ] {
        let mut child = crate::common::semcheck_cmd()
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        assert_eq!(child.wait().unwrap().code(), Some(code), "{args:?}");
    }
}

#[test]
fn a_budget_gives_incomplete_never_proved() {
    let (code, out, _) = semcheck(&["check", "psum", "--devices", "3", "--max-states", "100", "--json"]);
    assert_eq!(code, 3);
    let doc = document(&out);
    let v = only_case(&doc);
    assert_eq!(doc["verdict"], "incomplete");
    assert_eq!(v["incomplete"]["reason"], "states");
    assert!(v["incomplete"]["detail"].as_str().unwrap().contains("nothing was proved"));
    let (code, out, _) = semcheck(&["check", "psum", "--devices", "3", "--max-states", "100"]);
    assert_eq!(code, 3);
    assert!(out.contains("INCOMPLETE") && !out.contains("PROVED"), "{out}");
}

#[test]
fn bad_arguments_exit_2_with_a_message() {
    for args in [
        &["check"][..],
        &["check", "nope"],
        &["check", "psum", "--mutant", "nope"],
        &["check", "psum", "--devices", "0"],
        &["check", "psum", "--devices", "1"],
        &["check", "psum", "--devices", "abc"],
        &["check", "psum", "--repeat", "0"],
        &["check", "tc_exchange", "--devices", "4"],
        &["check", "psum", "--max-seconds", "-1"],
        &["check", "psum", "--max-seconds", "NaN"],
        &["check", "psum", "--strategy", "sideways"],
        &["check", "all", "--mutant", "no-capacity"],
        &["check", "psum", "--interpret-values"],
        &["check", "all", "--interpret-values"],
        &["frobnicate"],
    ] {
        let (code, out, err) = semcheck(args);
        assert_eq!(code, 2, "{args:?}: stdout {out} stderr {err}");
        assert!(!err.trim().is_empty(), "{args:?} printed no error");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn text_output_reads_like_a_report() {
    let (code, out, _) = semcheck(&["check", "tc_exchange", "--mutant", "no-barrier"]);
    assert_eq!(code, 1);
    assert!(out.contains("VIOLATION (outside-kernel)"), "{out}");
    assert!(out.contains("has not entered"), "{out}");
    assert!(out.contains("start remote_copy send_vmem -> d1 recv_vmem"), "{out}");
}

#[test]
fn bench_prints_a_table_with_peak_memory() {
    let (code, out, err) = semcheck(&["bench", "--protocol", "ppermute", "--max-devices", "3", "--max-seconds", "10"]);
    assert_eq!(code, 0, "{err}");
    let mut lines = out.lines();
    assert!(lines.next().unwrap().starts_with("(reduction: por, symmetry: auto"), "{out}");
    let header = lines.next().unwrap();
    for column in ["protocol", "N", "states", "transitions", "seconds", "peak MiB", "growth"] {
        assert!(header.contains(column), "{header}");
    }
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert!(rows.iter().all(|r| r.starts_with("ppermute") && r.contains("proved")), "{out}");
    // The growth factor of the states from N = 2 to N = 3, computed from the two rows.
    let states = |r: &str| r.split_whitespace().nth(3).unwrap().parse::<f64>().unwrap();
    let factor = format!("x{:.2}", states(rows[1]) / states(rows[0]));
    assert!(rows[1].contains(&factor), "{factor}: {out}");
}

#[test]
fn json_is_format_json_for_trace_replay_and_simulate() {
    let trace = ["trace", "psum", "--mutant", "no-capacity", "--devices", "2"];
    let replay_file = concat!(env!("CARGO_MANIFEST_DIR"), "/counterexamples/psum--no-capacity.trace");
    let simulate = ["simulate", "psum", "--devices", "2", "--lockstep"];
    for args in [&trace[..], &["replay", replay_file][..], &simulate[..]] {
        let (code, by_flag, _) = semcheck(&[args, &["--json"][..]].concat());
        let (same, by_format, _) = semcheck(&[args, &["--format", "json"][..]].concat());
        assert_eq!(code, same, "{args:?}");
        let strip = |text: &str| {
            let mut doc = document(text);
            doc.as_object_mut().unwrap().retain(|k, _| !k.contains("seconds"));
            doc
        };
        assert_eq!(strip(&by_flag), strip(&by_format), "{args:?}");
    }
}
