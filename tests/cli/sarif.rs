//! `--format sarif`: valid SARIF 2.1.0 (checked against the OASIS schema, fetched at a
//! pinned version from the npm registry, where Microsoft's SARIF test matchers ship it),
//! one result per violation at the line of the event that broke the rule.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::semcheck;

/// The npm package that carries the SARIF 2.1.0 schema, and the schema's path in it.
const SCHEMA_PACKAGE: &str = "@microsoft/jest-sarif@1.0.0-beta.0";
const SCHEMA_IN_PACKAGE: &str = "package/lib/schemas/sarif-2.1.0-rtm.5.json";

/// The SARIF 2.1.0 schema validator (the package is fetched once into the target dir).
fn sarif_schema() -> &'static jsonschema::Validator {
    static SCHEMA: OnceLock<jsonschema::Validator> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sarif-schema");
        let file = dir.join(SCHEMA_IN_PACKAGE);
        if !file.is_file() {
            std::fs::create_dir_all(&dir).unwrap();
            let pack = Command::new("npm")
                .args(["pack", "--silent", SCHEMA_PACKAGE, "--pack-destination"])
                .arg(&dir)
                .output()
                .unwrap_or_else(|e| panic!("the SARIF schema is fetched with npm, which cannot run: {e}"));
            assert!(pack.status.success(), "npm pack {SCHEMA_PACKAGE}: {}", String::from_utf8_lossy(&pack.stderr));
            let tarball = dir.join(String::from_utf8_lossy(&pack.stdout).trim());
            let untar = Command::new("tar").arg("-xzf").arg(&tarball).arg("-C").arg(&dir).status().unwrap();
            assert!(untar.success() && file.is_file(), "{} has no {SCHEMA_IN_PACKAGE}", tarball.display());
        }
        // The schema's two language-tag patterns have a stray `]` (`...[a-zA-Z]{2}]?$`), which
        // the validator's own check of the schema refuses as a regex; they are escaped here
        // (the only change): they constrain `language` fields semcheck does not write.
        let text = std::fs::read_to_string(&file).unwrap();
        let stray = r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$""#;
        assert_eq!(text.matches(stray).count(), 2, "the schema at {} changed", file.display());
        let text = text.replace(stray, r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}\\]?$""#);
        let schema: Value = serde_json::from_str(&text).unwrap();
        jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("the SARIF schema does not load: {e}"))
    })
}

/// A SARIF log, parsed and validated.
fn sarif(text: &str) -> Value {
    let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"));
    let errors: Vec<String> = sarif_schema().iter_errors(&v).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "not valid SARIF 2.1.0:\n{}\n{text}", errors.join("\n"));
    assert_eq!(v["version"], "2.1.0");
    v
}

#[test]
fn a_violation_of_a_kernel_file_is_one_result_at_its_line() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/protocols/pallas/psum--no-capacity.py");
    let (code, out, err) = semcheck(&["check", file, "--devices", "2", "--format", "sarif"]);
    assert_eq!(code, 1, "{err}");
    let v = sarif(&out);
    let run = &v["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "semcheck");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{out}");
    let r = &results[0];
    assert_eq!(r["ruleId"], "race");
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(rules[r["ruleIndex"].as_u64().unwrap() as usize]["id"], "race");
    let text = r["message"]["text"].as_str().unwrap();
    assert!(
        text.starts_with("race at N = 2 (psum_kernel): race on ") && text.contains("it breaks under every"),
        "{text}"
    );
    // At the line of the event that broke the rule, which the JSON report names too.
    let at = &r["locations"][0]["physicalLocation"];
    assert!(at["artifactLocation"]["uri"].as_str().unwrap().ends_with("psum--no-capacity.py"), "{at}");
    let (_, json, _) = semcheck(&["check", file, "--devices", "2", "--json"]);
    let case = crate::common::document(&json)["cases"][0].clone();
    assert_eq!(at["region"]["startLine"], case["violation"]["location"]["line"], "{case}");
    // The same violation (devices and cells) as the JSON report, not the engine's first
    // find before minimising.
    let message = case["violation"]["message"].as_str().unwrap();
    assert!(text.contains(message), "{text}\nvs\n{message}");
    // The schedule: one thread-flow step per located event, in order, the breaking one
    // essential; each also a related location.
    let steps = r["codeFlows"][0]["threadFlows"][0]["locations"].as_array().unwrap();
    assert!(steps.len() >= 5, "{out}");
    let order: Vec<u64> = steps.iter().map(|s| s["executionOrder"].as_u64().unwrap()).collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    assert_eq!(steps.last().unwrap()["importance"], "essential");
    // The explanation's located events are the essential steps, and only they.
    let essential: Vec<u64> = steps
        .iter()
        .filter(|s| s["importance"] == "essential")
        .map(|s| s["executionOrder"].as_u64().unwrap())
        .collect();
    let explained: Vec<u64> = case["violation"]["explanation"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["role"] != "summary" && p["file"].is_string())
        .map(|p| p["index"].as_u64().unwrap())
        .collect();
    assert!(essential.len() >= 3 && essential.len() < steps.len(), "{essential:?} of {}", steps.len());
    assert_eq!(essential, explained);
    assert_eq!(r["relatedLocations"].as_array().unwrap().len(), steps.len());
    assert!(steps.iter().any(|s| s["location"]["message"]["text"].as_str().unwrap().contains("first.start()")));
}

#[test]
fn a_deadlock_is_reported_at_the_wait_a_device_is_stuck_at() {
    // No event breaks a deadlock: its place is the wait that never passes, in SARIF and
    // in the JSON report alike (not the last event that happened).
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/protocols/pallas/split_ppermute--wrong-semaphore.py");
    let source = std::fs::read_to_string(file).unwrap();
    let stuck = 1 + source.lines().position(|l| l.contains("make_async_copy(x_ref, o_ref, recv_sem).wait()")).unwrap();
    let (code, out, err) = semcheck(&["check", file, "--devices", "2", "--format", "sarif"]);
    assert_eq!(code, 1, "{err}");
    let r = &sarif(&out)["runs"][0]["results"][0];
    assert_eq!(r["ruleId"], "deadlock");
    assert_eq!(r["locations"][0]["physicalLocation"]["region"]["startLine"], stuck, "{r}");
    let (_, json, _) = semcheck(&["check", file, "--devices", "2", "--json"]);
    let violation = &crate::common::document(&json)["cases"][0]["violation"];
    assert_eq!(violation["location"]["line"], stuck, "{violation}");
    assert!(violation["breaking_event"].is_null());
}

#[test]
fn a_range_of_sizes_is_one_result_for_its_smallest_violation() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/protocols/pallas/psum--no-capacity.py");
    let (code, out, err) = semcheck(&["check", file, "--sizes", "2..3", "--format", "sarif"]);
    assert_eq!(code, 1, "{err}");
    let v = sarif(&out);
    let results = v["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{out}");
    let r = &results[0];
    assert_eq!((&r["ruleId"], &r["properties"]["devices"]), (&"race".into(), &2.into()), "{r}");
    let text = r["message"]["text"].as_str().unwrap();
    assert!(text.starts_with("race at N = 2 (psum_kernel): race on ") && text.contains("N = 2..3 break it"), "{text}");
    // As `check --devices 2` locates its result (the range explores each size with its
    // own options, and may find another schedule): at the kernel's line, the explanation's
    // events essential.
    let at = &r["locations"][0]["physicalLocation"];
    assert!(at["artifactLocation"]["uri"].as_str().unwrap().ends_with("psum--no-capacity.py"), "{at}");
    let steps = r["codeFlows"][0]["threadFlows"][0]["locations"].as_array().unwrap();
    let essential = steps.iter().filter(|s| s["importance"] == "essential").count();
    assert!(essential >= 3 && essential < steps.len(), "{essential} of {}", steps.len());
    assert!(r["properties"]["requires"].is_null(), "{r}");
    assert_eq!(v["runs"][0]["invocations"][0]["executionSuccessful"], true);
    // Proved: no result.
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/protocols/pallas/psum.py");
    let (code, out, err) = semcheck(&["check", file, "--sizes", "2..3", "--format", "sarif"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(sarif(&out)["runs"][0]["results"], serde_json::json!([]), "{out}");
}

#[test]
fn a_proof_has_no_results_and_an_unreadable_case_is_a_notification() {
    let (code, out, _) = semcheck(&["check", "psum", "--devices", "2-3", "--format", "sarif"]);
    assert_eq!(code, 0);
    let v = sarif(&out);
    assert_eq!(v["runs"][0]["results"], serde_json::json!([]));
    assert_eq!(v["runs"][0]["invocations"][0]["executionSuccessful"], true);

    let (code, out, _) = semcheck(&["check", "psum", "--devices", "3", "--max-states", "50", "--format", "sarif"]);
    assert_eq!(code, 3);
    let v = sarif(&out);
    let notes = v["runs"][0]["invocations"][0]["toolExecutionNotifications"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{out}");
    assert!(notes[0]["message"]["text"].as_str().unwrap().contains("not proved"), "{out}");
    assert_eq!(v["runs"][0]["invocations"][0]["executionSuccessful"], false);

    // Every catalogue case at once: one result per violation, at its DSL line.
    let (code, out, _) = semcheck(&["check", "all", "--format", "sarif"]);
    assert_eq!(code, 0);
    let v = sarif(&out);
    let results = v["runs"][0]["results"].as_array().unwrap();
    let (_, json, _) = semcheck(&["check", "all", "--json"]);
    let violations = crate::common::document(&json)["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "violation")
        .count();
    assert!(violations >= 5, "{json}");
    assert_eq!(results.len(), violations);
    assert!(results.iter().all(|r| r["locations"][0]["physicalLocation"]["region"]["startLine"].is_u64()), "{out}");
}

#[test]
fn json_and_sarif_errors_are_documents() {
    for args in [&["check", "no_such_protocol", "--json"][..], &["check", "psum", "--devices", "x", "--json"]] {
        let (code, out, err) = semcheck(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        let v = crate::common::document(&out);
        assert_eq!(v["verdict"], "error", "{out}");
        assert!(v["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{args:?}: {out}");
    }
    for args in [
        &["check", "no_such_protocol", "--format", "sarif"][..],
        &["check", "psum", "--devices", "0", "--format", "sarif"],
    ] {
        let (code, out, err) = semcheck(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        let v = sarif(&out);
        let invocation = &v["runs"][0]["invocations"][0];
        assert_eq!(invocation["executionSuccessful"], false, "{out}");
        assert_eq!(invocation["toolExecutionNotifications"][0]["level"], "error", "{out}");
    }
}
