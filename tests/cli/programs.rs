//! Programs of several kernels read from kernel files: kernels of one script that hand
//! semaphores (`pltpu.SEMAPHORE`-space operands), and so DMAs in flight, from one to the
//! next are checked as one protocol per device, and counterexamples name each kernel.
//!
//! Needs the front end's Python environment, like `frontend.rs`.

use crate::common::repo;
use std::process::Command;

use serde_json::Value;

/// `semcheck check FILE --devices DEVICES --json` with `env` set: (exit code, document,
/// stderr).
fn check(file: &str, devices: &str, env: &[(&str, &str)]) -> (i32, Value, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_semcheck"));
    cmd.arg("check").arg(repo().join(file)).args(["--devices", devices, "--json"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run semcheck");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stdout.is_empty(), "no document; stderr:\n{stderr}");
    (out.status.code().unwrap_or(-1), crate::common::document(&stdout), stderr)
}

fn cases(doc: &Value) -> &Vec<Value> {
    doc["cases"].as_array().unwrap_or_else(|| panic!("no cases: {doc}"))
}

/// The texts of a violation's schedule.
fn events(case: &Value) -> Vec<String> {
    case["violation"]["events"]
        .as_array()
        .map(|all| all.iter().map(|e| e["text"].as_str().unwrap_or("").to_string()).collect())
        .unwrap_or_default()
}

#[test]
fn the_split_phase_ppermute_is_one_program_proved_at_two_three_and_four_devices() {
    let (code, doc, stderr) = check("protocols/pallas/split_ppermute.py", "2-4", &[]);
    assert_eq!(code, 0, "{stderr}");
    let all = cases(&doc);
    assert_eq!(all.len(), 3, "one case per size: the program, not its kernels one by one\n{doc}");
    for case in all {
        assert_eq!(case["verdict"], "proved", "{case}");
        assert_eq!(case["kernel"], "permute");
        assert_eq!(
            case["program_kernels"],
            serde_json::json!(["start_kernel", "send_done_kernel", "recv_done_kernel"]),
            "the kernel reading the block after recv_done is no part of the program"
        );
        assert_eq!(case["kernel_defined_at"]["function"], "start_kernel");
    }
    assert!(!stderr.contains("script error"), "{stderr}");
}

#[test]
fn a_dropped_done_kernel_is_a_semaphore_handed_out_and_never_taken() {
    let (code, doc, _) = check("protocols/pallas/split_ppermute--no-send-done.py", "2", &[]);
    assert_eq!(code, 1);
    let case = crate::common::only_case(&doc);
    assert_eq!(case["violation"]["rule"], "semaphore-leak");
    let message = case["violation"]["message"].as_str().unwrap();
    assert!(message.contains("send_sem is handed out by start_kernel, and no later kernel takes it"), "{message}");
    // The schedule crosses kernel boundaries, each operation naming its kernel.
    let ev = events(case);
    assert!(ev.iter().any(|e| e.contains("start_kernel: start remote_copy")), "{ev:?}");
    assert!(ev.iter().any(|e| e.contains("enter recv_done_kernel")), "{ev:?}");
}

#[test]
fn reading_the_block_before_recv_done_is_a_race_with_the_copy_the_start_kernel_started() {
    let (code, doc, _) = check("protocols/pallas/split_ppermute--early-read.py", "2", &[]);
    assert_eq!(code, 1);
    let case = crate::common::only_case(&doc);
    assert_eq!(case["violation"]["rule"], "race");
    let message = case["violation"]["message"].as_str().unwrap();
    assert!(message.contains("use_kernel: start local_copy o_ref"), "{message}");
    assert!(message.contains("start_kernel: start remote_copy"), "{message}");
    assert_eq!(
        case["program_kernels"],
        serde_json::json!(["start_kernel", "send_done_kernel", "use_kernel", "recv_done_kernel"])
    );
}

#[test]
fn a_copy_landing_after_its_target_left_the_program_names_the_kernel_it_left() {
    // split_ppermute without recv_done's wait: d1 leaves the program while d0's copy to it
    // is in flight. The exit is named by its kernel, not by its position in the program
    // (which the `#k` of a repeated run's events would be taken for).
    let source = std::fs::read_to_string(repo().join("protocols/pallas/split_ppermute.py")).unwrap();
    let wait = "    pltpu.make_async_copy(x_ref, o_ref, recv_sem).wait()\n";
    assert!(source.contains(wait), "split_ppermute.py's recv_done wait moved");
    let dir = crate::common::temp_dir("program-left");
    let file = dir.join("no_recv_wait.py");
    std::fs::write(&file, source.replacen(wait, "    pass\n", 1)).unwrap();
    let (code, doc, stderr) = check(file.to_str().unwrap(), "2", &[]);
    assert_eq!(code, 1, "{stderr}");
    let case = crate::common::only_case(&doc);
    assert_eq!(case["violation"]["rule"], "outside-kernel", "{case}");
    let notes: Vec<&str> = case["violation"]["explanation"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["role"] == "exit")
        .filter_map(|p| p["note"].as_str())
        .collect();
    assert_eq!(notes, ["d1 leaves recv_done_kernel"], "{case}");
}

#[test]
fn a_done_kernel_called_under_a_cond_makes_the_program_unsupported_not_a_leak() {
    // send_done under lax.cond: whether it takes send_sem is not static. Checking the
    // rest as the program would report send_sem as never taken, a false alarm.
    let dir = crate::common::temp_dir("program-cond");
    let source = std::fs::read_to_string(repo().join("protocols/pallas/split_ppermute.py")).unwrap();
    let variant = source.replace(
        "    x = send_done(x, future)",
        "    x = lax.cond(x[0, 0] > -1.0, lambda x: send_done(x, future), lambda x: x, x)",
    );
    assert_ne!(variant, source);
    let file = dir.join("split_cond.py");
    std::fs::write(&file, variant).unwrap();
    let (code, doc, stderr) = check(file.to_str().unwrap(), "2", &[]);
    assert_eq!(code, 2, "{doc}\n{stderr}");
    let message = doc["error"]["message"].as_str().unwrap_or_else(|| panic!("{doc}"));
    assert!(
        message.starts_with("unsupported construct: program permute")
            && message.contains("lax.cond or while_loop that calls send_done_kernel"),
        "{message}"
    );
    assert!(doc["verdict"] == "error" && !stderr.contains("semaphore-leak"), "{doc}\n{stderr}");
}

#[test]
fn a_wait_on_the_wrong_semaphore_deadlocks_in_the_done_kernel() {
    let (code, doc, _) = check("protocols/pallas/split_ppermute--wrong-semaphore.py", "3", &[]);
    assert_eq!(code, 1);
    let case = crate::common::only_case(&doc);
    assert_eq!(case["violation"]["rule"], "deadlock");
    let message = case["violation"]["message"].as_str().unwrap();
    assert!(message.contains("recv_done_kernel: wait send_sem"), "{message}");
}

#[test]
fn a_start_kernel_called_alone_hands_out_semaphores_nothing_waits_on() {
    let (code, doc, stderr) = check("python/tests/kernels/split_start_only.py", "2", &[]);
    assert_eq!(code, 1, "{stderr}");
    let case = crate::common::only_case(&doc);
    assert_eq!(case["violation"]["rule"], "semaphore-leak");
    let message = case["violation"]["message"].as_str().unwrap();
    assert!(message.contains("is handed out by start_kernel, and no later kernel takes it"), "{message}");
    assert_eq!(case["program_kernels"], serde_json::json!(["start_kernel"]));
    // With its done kernel, the same start kernel is proved.
    let (code, doc, stderr) = check("python/tests/kernels/split_start_only.py", "2-3", &[("DONE", "1")]);
    assert_eq!(code, 0, "{stderr}");
    for case in cases(&doc) {
        assert_eq!(case["verdict"], "proved");
        assert_eq!(case["program_kernels"], serde_json::json!(["start_kernel", "done_kernel"]));
    }
}

#[test]
fn kernels_of_two_jitted_functions_linked_through_the_script_are_one_program() {
    let (code, doc, stderr) = check("python/tests/kernels/split_two_jits.py", "2-3", &[]);
    assert_eq!(code, 0, "{stderr}");
    for case in cases(&doc) {
        assert_eq!(case["verdict"], "proved");
        assert_eq!(case["kernel"], "start+done");
    }
    // The start kernel sends halves, the done kernel waits on whole blocks: one cut.
    let (code, _, stderr) = check("python/tests/kernels/split_two_jits.py", "2", &[("HALVES", "1")]);
    assert_eq!(code, 0, "{stderr}");
    // A done kernel that takes the receive semaphore but never waits on it: the copy lands
    // after the program ended.
    let (code, doc, _) = check("python/tests/kernels/split_two_jits.py", "2", &[("WAIT", "send")]);
    assert_eq!(code, 1);
    let case = crate::common::only_case(&doc);
    let message = case["violation"]["message"].as_str().unwrap();
    assert!(message.contains("has already left done_kernel"), "{message}");
}

#[test]
fn the_bidirectional_split_phase_permute_is_proved_and_a_loop_of_it_too() {
    let (code, doc, stderr) = check("python/tests/kernels/split_bidi.py", "2-4", &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(cases(&doc).len(), 3);
    for case in cases(&doc) {
        assert_eq!(case["verdict"], "proved", "{case}");
    }
    let (code, _, stderr) = check("python/tests/kernels/split_bidi.py", "2", &[("LOOP", "2"), ("SWAP", "1")]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn a_staggered_loop_of_split_phase_copies_is_proved() {
    let (code, doc, stderr) = check("python/tests/kernels/split_staggered.py", "3-4", &[]);
    assert_eq!(code, 0, "{stderr}");
    for case in cases(&doc) {
        assert_eq!(case["verdict"], "proved", "{case}");
        assert_eq!(
            case["program_kernels"],
            serde_json::json!(["start_kernel", "send_done_kernel", "recv_done_kernel"])
        );
    }
}

#[test]
fn a_kernel_of_a_program_named_with_kernel_is_checked_alone() {
    // Alone, the start kernel leaks the semaphores it hands out (no word of a program).
    let (code, doc, stderr) = check_kernel("protocols/pallas/split_ppermute.py", "start_kernel");
    assert_eq!(code, 1);
    assert!(
        stderr.contains("it takes or hands out semaphores (send_sem, recv_sem)")
            && stderr.contains("the program it belongs to is checked with --kernel permute"),
        "{stderr}"
    );
    let case = crate::common::only_case(&doc);
    assert_eq!(case["kernel"], "start_kernel");
    assert_eq!(case["program_kernels"], Value::Null);
    assert_eq!(case["violation"]["rule"], "semaphore-leak");
}

fn check_kernel(file: &str, kernel: &str) -> (i32, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_semcheck"))
        .arg("check")
        .arg(repo().join(file))
        .args(["--devices", "2", "--json", "--kernel", kernel])
        .output()
        .expect("run semcheck");
    let stdout = String::from_utf8_lossy(&out.stdout);
    (out.status.code().unwrap_or(-1), crate::common::document(&stdout), String::from_utf8_lossy(&out.stderr).into())
}
