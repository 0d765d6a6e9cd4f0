//! `check FILE FILE...`: several kernel files in one command, one report and one exit code
//! (what a CI job runs over a folder of kernels), and the arguments that cannot go with
//! several files refused before anything runs.

use crate::common::{document, repo, semcheck};

/// A seed kernel file's path.
fn seed(name: &str) -> String {
    repo().join("protocols/pallas").join(name).display().to_string()
}

#[test]
fn several_files_are_one_report_with_every_files_cases() {
    let (good, bad) = (seed("ppermute.py"), seed("psum--no-capacity.py"));
    let (code, out, err) = semcheck(&["check", &good, &bad, "--devices", "2-3", "--json"]);
    assert_eq!(code, 1, "{err}");
    let doc = document(&out);
    let cases = doc["cases"].as_array().unwrap();
    let seen: Vec<(String, u64, String)> = cases
        .iter()
        .map(|c| (c["file"].as_str().unwrap().to_string(), c["devices"].as_u64().unwrap(), c["verdict"].to_string()))
        .collect();
    assert_eq!(
        seen,
        [
            (good.clone(), 2, "\"proved\"".to_string()),
            (good.clone(), 3, "\"proved\"".to_string()),
            (bad.clone(), 2, "\"violation\"".to_string()),
            (bad.clone(), 3, "\"violation\"".to_string()),
        ],
        "{out}"
    );
    assert_eq!(doc["summary"]["cases"], 4, "{out}");
    // In SARIF: the violations, each at its own file's line; the proofs add nothing.
    let (code, sarif, err) = semcheck(&["check", &good, &bad, "--devices", "2", "--format", "sarif"]);
    assert_eq!(code, 1, "{err}");
    let sarif: serde_json::Value = serde_json::from_str(&sarif).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{sarif}");
    let uri = results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].as_str().unwrap();
    assert!(uri.ends_with("psum--no-capacity.py"), "{uri}");
    // Proved files alone: exit 0. The text report ends with the tally.
    let (code, out, err) = semcheck(&["check", &good, &seed("all_gather.py"), "--devices", "2"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().last(), Some("2 files, 2 cases: 2 proved"), "{out}");
    let (code, out, err) = semcheck(&["check", &good, &bad, "--devices", "2-3"]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(out.lines().last(), Some("2 files, 4 cases: 2 proved, 2 violations"), "{out}");
}

#[test]
fn what_cannot_go_with_several_files_is_refused_before_anything_runs() {
    // (A folder, alone or among files, is refused the same way: its files are named.)
    let (good, bad) = (seed("ppermute.py"), seed("psum--no-capacity.py"));
    let missing = seed("no-such-kernel.py");
    let folder = repo().join("protocols/pallas").display().to_string();
    let folder_says = format!("{folder} is a folder: name its kernel files (`semcheck check {folder}/*.py`)");
    for (args, says) in [
        (vec![folder.as_str()], folder_says.as_str()),
        (vec![good.as_str(), folder.as_str()], folder_says.as_str()),
        (vec![good.as_str(), "psum"], "`psum` is not a file: several targets are kernel files"),
        (vec!["all", good.as_str()], "`check all` checks the catalogue"),
        (vec![good.as_str(), good.as_str()], "is named twice"),
        (vec![good.as_str(), bad.as_str(), "--kernel", "psum_kernel"], "--kernel picks a kernel of one file"),
        (vec![good.as_str(), bad.as_str(), "--sizes", "2..4"], "--sizes takes one protocol or kernel file"),
        (vec![good.as_str(), missing.as_str()], "no kernel file"),
    ] {
        let (code, out, err) = semcheck(&[&["check"][..], &args].concat());
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(says), "{args:?}: {err}");
        // Refused before any file was read: no verdict printed.
        assert!(!out.contains("PROVED") && !out.contains("VIOLATION"), "{args:?}: {out}");
    }
}

#[test]
fn among_several_files_one_that_calls_no_kernel_is_said_and_left_out() {
    let dir = crate::common::temp_dir("several-no-kernel");
    let kernel = dir.join("ppermute.py");
    std::fs::copy(seed("ppermute.py"), &kernel).unwrap();
    let helper = dir.join("helpers.py");
    std::fs::write(&helper, "def double(x):\n    return 2 * x\n").unwrap();
    let init = dir.join("__init__.py");
    std::fs::write(&init, "").unwrap();
    let (k, h, i) = (kernel.to_str().unwrap(), helper.to_str().unwrap(), init.to_str().unwrap());
    // `kernels/*.py` takes in the helper and the package's __init__.py: they are said and
    // left out; the kernel's proof is the verdict.
    let (code, out, err) = semcheck(&["check", i, h, k, "--devices", "2", "--json"]);
    assert_eq!(code, 0, "{err}");
    for f in [i, h] {
        assert!(err.contains(&format!("semcheck: note: {f} calls no Pallas kernel")), "{err}");
    }
    let doc = document(&out);
    assert_eq!(doc["summary"]["no_kernel"], serde_json::json!([i, h]), "{out}");
    assert_eq!(doc["cases"].as_array().unwrap().len(), 1, "{out}");
    let (code, out, _) = semcheck(&["check", i, h, k, "--devices", "2"]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().last(), Some("3 files, 1 case: 1 proved; 2 files call no kernel"), "{out}");
    let (code, sarif, _) = semcheck(&["check", h, k, "--devices", "2", "--format", "sarif"]);
    assert_eq!(code, 0);
    let sarif: serde_json::Value = serde_json::from_str(&sarif).unwrap();
    let notes = &sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"];
    assert!(notes.as_array().unwrap().iter().any(|n| n["level"] == "note"), "{sarif}");
    assert_eq!(sarif["runs"][0]["invocations"][0]["executionSuccessful"], true, "{sarif}");
    // Only such files: nothing was checked, an error. Named alone, one is an error too.
    let (code, _, err) = semcheck(&["check", i, h, "--devices", "2"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("none of the files calls a Pallas kernel"), "{err}");
    let (code, _, err) = semcheck(&["check", h, "--devices", "2"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no kernel"), "{err}");
}

#[test]
fn a_package_whose_modules_import_relatively_is_checked_as_python_m_runs_it() {
    // kernels/shift.py holds the kernel; kernels/ring.py and kernels/early.py run it through
    // relative imports, which `python FILE` cannot run; __init__.py re-exports it.
    let root = crate::common::temp_dir("relative-imports");
    let dir = root.join("kernels");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(repo().join("tests/wheel/project/kernels.py"), dir.join("shift.py")).unwrap();
    std::fs::write(dir.join("__init__.py"), "from .shift import run\n").unwrap();
    std::fs::write(dir.join("ring.py"), "from .shift import run\n\nrun()\n").unwrap();
    std::fs::write(dir.join("early.py"), "from . import shift\n\nshift.run(early=True)\n").unwrap();
    let files: Vec<String> =
        ["__init__.py", "early.py", "ring.py", "shift.py"].iter().map(|f| dir.join(f).display().to_string()).collect();
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    let (code, out, err) = semcheck(&[&["check"][..], &args, &["--devices", "2", "--json"]].concat());
    assert_eq!(code, 1, "{err}");
    let doc = document(&out);
    assert_eq!(doc["summary"]["no_kernel"], serde_json::json!([files[0], files[3]]), "{out}");
    let verdicts: Vec<(&str, &str)> = doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["file"].as_str().unwrap(), c["verdict"].as_str().unwrap()))
        .collect();
    assert_eq!(verdicts, [(args[1], "violation"), (args[2], "proved")], "{out}");
    // The early read's race is at the kernel's own lines, in the module the package holds.
    let (code, out, err) = semcheck(&["check", args[1], "--devices", "2"]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("d0 o_ref = buf @ shift.py:22 o_ref[...] = buf[...]"), "{out}");
    // Outside a package a relative import cannot run at all: the error says what would.
    let lone = root.join("lone.py");
    std::fs::write(&lone, "from .kernels import shift\n").unwrap();
    let (code, _, err) = semcheck(&["check", lone.to_str().unwrap(), "--devices", "2"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("no known parent package (semcheck runs a file that imports relatively as `python -m"),
        "{err}"
    );
}
