//! A kernel file's script run with its own arguments (`semcheck check bench.py -- ARGS`):
//! what the exports give it, what the trace file records, and replay, which gives a script
//! only the arguments its own command line gives.

use crate::common::{repo, semcheck, temp_dir, TestDir};

/// A folder (named for `test`) with `bench.py`: the wheel test project's ring shift, its early read chosen by
/// a required `--early yes|no` (argparse).
fn bench(test: &str) -> (TestDir, String) {
    let dir = temp_dir(test);
    let project = repo().join("tests/wheel/project");
    let script = format!(
        "import argparse\nimport sys\n\nsys.path.insert(0, {project:?})\nimport kernels\n\n\
         parser = argparse.ArgumentParser()\nparser.add_argument(\"--early\", choices=[\"yes\", \"no\"], required=True)\n\
         kernels.run(early=parser.parse_args().early == \"yes\")\n",
        project = project.display().to_string()
    );
    let path = dir.join("bench.py");
    std::fs::write(&path, script).unwrap();
    let path = path.display().to_string();
    (dir, path)
}

#[test]
fn the_arguments_after_two_dashes_reach_the_script_and_its_verdict() {
    let (_dir, bench) = bench("script-args-check");
    // Without them, argparse's own words and where the arguments go.
    let (code, _, err) = semcheck(&["check", &bench, "--devices", "2"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the script exited with status 2 after printing `bench.py: error: the following arguments are required: --early`"), "{err}");
    assert!(err.contains("the script's own arguments go after `--`"), "{err}");
    let (code, out, err) = semcheck(&["check", &bench, "--devices", "2-3", "--json", "--", "--early", "no"]);
    assert_eq!(code, 0, "{err}");
    let doc = crate::common::document(&out);
    for case in doc["cases"].as_array().unwrap() {
        assert_eq!(case["verdict"], "proved", "{out}");
        assert_eq!(case["script_args"], serde_json::json!(["--early", "no"]), "{out}");
    }
    // The early read races; the page's command gives the script the same arguments.
    let (code, out, err) = semcheck(&["check", &bench, "--devices", "2", "--", "--early", "yes"]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("VIOLATION (race)"), "{out}");
    assert!(out.contains("--devices 2 --format html -- --early yes > counterexample.html"), "{out}");
    // A catalogue protocol and an exported document run no script.
    for target in ["psum", "kernels.json"] {
        let (code, _, err) = semcheck(&["check", target, "--", "--early", "no"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("the arguments after `--` go to a kernel file's script"), "{err}");
    }
}

#[test]
fn a_trace_records_the_arguments_and_replay_runs_the_script_only_with_those_it_is_given() {
    let (dir, bench) = bench("script-args-replay");
    let (code, trace, err) =
        semcheck(&["trace", &bench, "--devices", "2", "--format", "trace", "--", "--early", "yes"]);
    assert_eq!(code, 1, "{err}");
    assert!(trace.contains("\nkernel-args [\"--early\",\"yes\"]\n"), "{trace}");
    let file = dir.join("early.trace");
    std::fs::write(&file, &trace).unwrap();
    let file = file.display().to_string();
    // Not given: refused before anything runs, with the command that would run it.
    let (code, _, err) = semcheck(&["replay", &file]);
    assert_eq!(code, 2, "{err}");
    assert!(!err.contains("running"), "{err}");
    assert!(err.contains("the trace's script was run with the arguments `--early yes`; replay gives a script only the arguments its own command line gives"), "{err}");
    assert!(err.contains("-- --early yes`"), "{err}");
    // Given: reproduced, and the first line says with what.
    let (code, out, err) = semcheck(&["replay", &file, "--", "--early", "yes"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("with the arguments `--early yes` to export its kernels at N = 2"), "{err}");
    assert!(err.contains("rule `race` reproduced"), "{err}");
    // Others: a note, and the fixed run no longer breaks.
    let (code, _, err) = semcheck(&["replay", &file, "--", "--early", "no"]);
    assert_eq!(code, 4, "{err}");
    assert!(
        err.contains("the trace's script was run with the arguments `--early yes`; it runs with `--early no`"),
        "{err}"
    );
}
