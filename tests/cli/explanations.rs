//! Explanations of violations (`docs/counterexamples.md`): every catalogue mutant's is short,
//! ends at the event that breaks the rule and only names events of the schedule; the table
//! in the docs is what `check all` measures; `check`, `trace` and `replay` tell one story.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::semcheck;

/// The most points an explanation of a catalogue mutant has (the docs table shows each).
const MOST: usize = 12;

/// Every case of `check all --json` that breaks a rule, by (protocol, mutant, N).
fn violations() -> BTreeMap<(String, String, u64), Value> {
    let (code, out, err) = semcheck(&["check", "all", "--json"]);
    assert_eq!(code, 0, "{err}");
    let doc = crate::common::document(&out);
    doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "violation")
        .map(|c| {
            let key = (
                c["protocol"].as_str().unwrap().to_string(),
                c["mutant"].as_str().unwrap().to_string(),
                c["devices"].as_u64().unwrap(),
            );
            (key, c["violation"].clone())
        })
        .collect()
}

#[test]
fn every_catalogue_mutant_is_explained_in_a_few_events_of_its_schedule_ending_where_it_breaks() {
    let cases = violations();
    assert!(cases.len() >= 8, "{:?}", cases.keys());
    for ((protocol, mutant, n), v) in &cases {
        let what = format!("{protocol}/{mutant} N={n}");
        let events = v["events"].as_array().unwrap_or_else(|| panic!("{what}: no events"));
        let explanation = v["explanation"].as_array().unwrap_or_else(|| panic!("{what}: no explanation"));
        assert!(!explanation.is_empty(), "{what}");
        assert!(explanation.len() <= MOST, "{what}: {} points:\n{explanation:#?}", explanation.len());
        // A deadlock ends with every stuck device (not an event: its wait never happens);
        // no other violation has one.
        let (blocked, explanation): (Vec<&Value>, Vec<&Value>) =
            explanation.iter().partition(|p| p["role"] == "blocked");
        if v["rule"] == "deadlock" {
            assert!(!blocked.is_empty(), "{what}: no stuck device");
            assert!(blocked.iter().all(|p| p["index"].is_null() && p["device"].is_u64()), "{what}: {blocked:?}");
            let tail = &v["explanation"].as_array().unwrap()[explanation.len()..];
            assert!(tail.iter().all(|p| p["role"] == "blocked"), "{what}: the stuck devices come last");
        } else {
            assert!(blocked.is_empty(), "{what}: {blocked:?}");
        }
        // Any other ends at the breaking event.
        let last = *explanation.last().unwrap();
        if v["rule"] != "deadlock" {
            assert_eq!(last["index"], v["breaking_event"], "{what}: {last}");
            assert_ne!(last["role"], "summary", "{what}");
        }
        // Every point is an event of the schedule, named as the schedule names it, with its
        // source line when the event has one.
        for &p in &explanation {
            let i = p["index"].as_u64().unwrap_or_else(|| panic!("{what}: a point outside the schedule: {p}"));
            assert!(i >= 1 && i as usize <= events.len(), "{what}: {p}");
            if p["role"] == "summary" {
                assert!(p["text"].as_str().unwrap().contains("passed"), "{what}: {p}");
                continue;
            }
            let e = &events[i as usize - 1];
            assert_eq!(p["text"], e["text"], "{what}");
            assert_eq!(p["device"], e["device"], "{what}");
            assert_eq!((&p["file"], &p["line"]), (&e["file"], &e["line"]), "{what}");
        }
        // Events in schedule order after the summary.
        let indices: Vec<u64> =
            explanation.iter().filter(|p| p["role"] != "summary").map(|p| p["index"].as_u64().unwrap()).collect();
        assert!(indices.windows(2).all(|w| w[0] < w[1]), "{what}: {indices:?}");
        // A race names both accesses: the one that breaks it and the DMA in flight.
        if v["rule"] == "race" {
            let roles: Vec<&str> = explanation.iter().map(|p| p["role"].as_str().unwrap()).collect();
            assert!(roles.contains(&"dma-in-flight"), "{what}: {roles:?}");
            assert!(matches!(last["role"].as_str(), Some("read" | "write")), "{what}: {last}");
        }
    }
}

/// The shared receive semaphore bugs: the wait that let the reader through consumed a later
/// DMA's bytes, and the explanation says which DMA it should have waited for.
#[test]
fn a_wait_satisfied_by_a_later_dma_is_the_wrong_one() {
    let cases = violations();
    for key in [("psum", "no-capacity", 2), ("all_gather", "shared-recv-sem", 3)] {
        let v = &cases[&(key.0.to_string(), key.1.to_string(), key.2)];
        let explanation = v["explanation"].as_array().unwrap();
        let wrong: Vec<&Value> = explanation.iter().filter(|p| p["wrong"] == true).collect();
        assert_eq!(wrong.len(), 1, "{key:?}: {explanation:#?}");
        assert_eq!(wrong[0]["role"], "satisfied-by");
        let in_flight = explanation.iter().find(|p| p["role"] == "dma-in-flight").unwrap();
        let note = wrong[0]["note"].as_str().unwrap();
        assert!(note.contains(&format!("the DMA of event {}", in_flight["index"])), "{key:?}: {note}");
    }
}

/// The measured table of `docs/counterexamples.md`, by (protocol, mutant, N): the explorer's
/// schedule, after minimising, context switches before and after, explanation points.
fn documented() -> BTreeMap<(String, String, u64), [u64; 5]> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/counterexamples.md");
    let text = std::fs::read_to_string(path).unwrap();
    let start = text.find("<!-- measured -->").expect("the measured table's marker");
    let mut rows = BTreeMap::new();
    for line in text[start..].lines().skip(3).take_while(|l| l.starts_with('|')) {
        let cols: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let num = |s: &str| s.parse::<u64>().unwrap_or_else(|_| panic!("`{s}` in `{line}`"));
        let (a, b) = cols[5].split_once(" -> ").unwrap_or_else(|| panic!("`{line}`"));
        rows.insert(
            (cols[0].to_string(), cols[1].to_string(), num(cols[2])),
            [num(cols[3]), num(cols[4]), num(a), num(b), num(cols[6])],
        );
    }
    rows
}

#[test]
fn the_table_in_the_docs_is_what_check_all_measures() {
    let measured: BTreeMap<_, [u64; 5]> = violations()
        .into_iter()
        .map(|(k, v)| {
            let m = &v["minimized"];
            let n = |key: &str| m[key].as_u64().unwrap();
            let points = v["explanation"].as_array().unwrap().len() as u64;
            (k, [n("events_before"), n("events_after"), n("switches_before"), n("switches_after"), points])
        })
        .collect();
    assert_eq!(documented(), measured, "docs/counterexamples.md's table is out of date");
}

/// `check`, `trace` and `replay` of one case report the same violation (same devices, same
/// cells): the mirror images a rotation-symmetric ring allows are brought to one.
#[test]
fn check_trace_and_replay_tell_the_same_story() {
    for (protocol, mutant, n) in [("psum", "no-capacity", "2"), ("all_gather", "shared-recv-sem", "3")] {
        let args = [protocol, "--mutant", mutant, "--devices", n];
        let (_, out, _) = semcheck(&[&["check"], &args[..], &["--json"]].concat());
        let checked = crate::common::only_case(&crate::common::document(&out))["violation"].clone();
        let (_, out, _) = semcheck(&[&["trace"], &args[..], &["--format", "json"]].concat());
        let traced = crate::common::document(&out)["counterexample"].clone();
        assert_eq!(checked["message"], traced["violation"]["message"], "{protocol}/{mutant}");
        assert_eq!(checked["devices"], traced["violation"]["devices"], "{protocol}/{mutant}");
        assert_eq!(checked["events"].as_array().unwrap().len(), traced["events"].as_array().unwrap().len());
        // The lowest device breaks it.
        assert_eq!(checked["devices"][0], 0, "{protocol}/{mutant}: {checked}");
        // The same check again, even with symmetry reduction off, tells the same story.
        let (_, out, _) = semcheck(&[&["check"], &args[..], &["--json", "--symmetry", "off"]].concat());
        let off = crate::common::only_case(&crate::common::document(&out))["violation"].clone();
        assert_eq!(off["devices"], checked["devices"], "{protocol}/{mutant}");
        // Replaying the trace file reproduces that message.
        let (_, file, _) = semcheck(&[&["trace"], &args[..], &["--format", "trace"]].concat());
        let dir = crate::common::temp_dir("story");
        let path = dir.join("t.trace");
        std::fs::write(&path, &file).unwrap();
        let (code, out, err) = semcheck(&["replay", path.to_str().unwrap(), "--format", "json"]);
        assert_eq!(code, 1, "{err}");
        let replayed = crate::common::document(&out)["counterexample"].clone();
        assert_eq!(replayed["violation"]["message"], checked["message"]);
        assert_eq!(replayed["violation"]["explanation"], traced["violation"]["explanation"]);
    }
}

#[test]
fn check_prints_the_explanation_and_the_schedule_on_request() {
    let args = ["check", "psum", "--mutant", "no-capacity", "--devices", "2"];
    let (code, out, _) = semcheck(&args);
    assert_eq!(code, 1);
    assert!(out.contains("  why (") && out.contains("--schedule shows every one"), "{out}");
    assert!(out.contains("[read] reads d0 hbm_buf[0]"), "{out}");
    assert!(out.contains("every device passed its waits on barrier, second"), "{out}");
    assert!(out.contains("after minimising:") && out.contains("context switches ->"), "{out}");
    assert!(!out.contains("  schedule (31 events):"), "{out}");
    let (_, full, _) = semcheck(&[&args[..], &["--schedule"]].concat());
    assert!(full.contains("  schedule (31 events):"), "{full}");
    // Every event of the schedule is listed, the explanation's among them.
    let listed =
        full.lines().filter(|l| l.trim_start().split_once(". ").is_some_and(|(n, _)| n.parse::<u32>().is_ok()));
    assert!(listed.count() >= 31 + 8, "{full}");
}

/// A kernel file's explanation names its lines, and an event shows the statement, not its
/// trailing comment (the front end cuts comments with Python's tokenizer).
#[test]
fn a_kernel_file_s_explanation_names_its_lines_without_comments() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(repo.join("protocols/pallas/psum--no-capacity.py")).unwrap();
    let commented = source.replacen("    local.start()\n", "    local.start()  # reads hbm_buf[working] # twice\n", 1);
    assert_ne!(commented, source);
    let dir = crate::common::temp_dir("commented");
    let file = dir.join("psum_commented.py");
    std::fs::write(&file, commented).unwrap();
    let (code, out, err) = semcheck(&["check", file.to_str().unwrap(), "--devices", "2", "--json"]);
    assert_eq!(code, 1, "{err}");
    let v = crate::common::only_case(&crate::common::document(&out))["violation"].clone();
    let explanation = v["explanation"].as_array().unwrap();
    assert!(explanation.len() <= MOST, "{explanation:#?}");
    let read = explanation.last().unwrap();
    assert_eq!(read["role"], "read");
    assert!(read["text"].as_str().unwrap().ends_with("@ psum_commented.py:95 local.start()"), "{read}");
    assert_eq!(read["line"], 95);
    for p in explanation.iter().filter(|p| p["role"] != "summary") {
        assert!(p["file"].as_str().is_some_and(|f| f.ends_with("psum_commented.py")), "{p}");
        assert!(!p["text"].as_str().unwrap().contains('#'), "{p}");
    }
}
