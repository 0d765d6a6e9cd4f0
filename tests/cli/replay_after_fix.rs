//! Replaying a counterexample after the kernel was fixed: a normal outcome with its own
//! exit code (4, "no longer reproduces"), saying which event is not possible any more and
//! why, not the exit 2 of a damaged file.

use crate::common::{document, semcheck, temp_dir};

#[test]
fn a_trace_of_a_kernel_file_no_longer_reproduces_once_the_kernel_is_fixed() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = temp_dir("fixed");
    let kernel = dir.join("psum_kernel.py");
    std::fs::copy(repo.join("protocols/pallas/psum--no-capacity.py"), &kernel).unwrap();
    let k = kernel.to_str().unwrap();
    let (code, trace, err) = semcheck(&["trace", k, "--devices", "2", "--format", "trace"]);
    assert_eq!(code, 1, "{err}");
    let path = dir.join("race.trace");
    std::fs::write(&path, &trace).unwrap();
    let t = path.to_str().unwrap();
    let (code, _, err) = semcheck(&["replay", t]);
    assert_eq!(code, 1, "before the fix it reproduces: {err}");

    // The fix: the kernel with its capacity handshake back (the correct psum). Replay runs
    // a changed kernel file only when asked (docs/safety.md).
    std::fs::copy(repo.join("protocols/pallas/psum.py"), &kernel).unwrap();
    let (code, _, err) = semcheck(&["replay", t]);
    assert_eq!(code, 2, "a changed file is not run unasked: {err}");
    let (code, out, err) = semcheck(&["replay", t, "--allow-changed"]);
    assert_eq!(code, 4, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("no longer reproduces: line "), "{err}");
    assert!(err.contains("is not possible any more, because d"), "{err}");
    assert!(err.contains("changed since this trace was written"), "{err}");
    let (code, out, _) = semcheck(&["replay", t, "--allow-changed", "--format", "json"]);
    assert_eq!(code, 4);
    let doc = document(&out);
    assert_eq!(doc["verdict"], "not-reproduced");
    assert!(doc["not_reproduced"]["line"].as_u64().unwrap() > 1, "{doc}");
    assert!(doc["not_reproduced"]["source_changed"].is_string(), "{doc}");
    // The same fix named with --kernel.
    let fixed = dir.join("fixed.py");
    std::fs::copy(&kernel, &fixed).unwrap();
    let (code, _, err) = semcheck(&["replay", t, "--kernel", fixed.to_str().unwrap()]);
    assert_eq!(code, 4, "{err}");

    // A damaged file stays exit 2.
    std::fs::write(&path, trace.replace("devices 2", "devices two")).unwrap();
    let (code, _, err) = semcheck(&["replay", t, "--allow-changed"]);
    assert_eq!(code, 2, "{err}");
    assert!(!err.contains("no longer reproduces"), "{err}");
}

#[test]
fn the_exit_codes_are_documented() {
    let (code, out, _) = semcheck(&["replay", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("4  `replay` only: the trace no longer reproduces"), "{out}");
}
