//! `replay` runs only what it was given (issue 26): a trace's kernel file is found from
//! the trace's own folder, inside it, and must have the sha256 the trace records; else
//! replay refuses with exit 2 before running anything, unless the user names the file
//! (`--kernel FILE`) or accepts the change (`--allow-changed`). Every header field that
//! reaches the exporter's process is plain data.
//!
//! Each refusal is checked to have run nothing: the kernel files here write a mark when
//! they run.

use crate::common::{repo, semcheck, temp_dir};

use std::path::Path;

/// A folder with `tc.py` (a mutant kernel file that also writes `ran` next to itself
/// when it runs) and `tc.trace`, its trace as `semcheck trace` writes it, from inside the
/// folder (so the trace names `tc.py`, relative).
fn traced(name: &str) -> (crate::common::TestDir, String) {
    let dir = temp_dir(&format!("replay-{name}"));
    let source = std::fs::read_to_string(repo().join("protocols/pallas/tc_exchange--no-barrier.py")).unwrap();
    let mark = "import pathlib as _p; (_p.Path(__file__).parent / 'ran').touch()\n";
    std::fs::write(dir.join("tc.py"), format!("{mark}{source}")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_semcheck"))
        .args(["trace", "tc.py", "--devices", "2", "--format", "trace"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let trace = String::from_utf8(out.stdout).unwrap();
    assert!(trace.contains("\nkernel-file tc.py\n") && trace.contains("\nkernel-sha256 "), "{trace}");
    std::fs::remove_file(dir.join("ran")).unwrap();
    std::fs::write(dir.join("tc.trace"), &trace).unwrap();
    (dir, trace)
}

/// Replays `trace` with `extra` arguments: (exit code, stderr); asserts whether the
/// kernel file at `kernel_dir` ran.
fn replay(trace: &Path, extra: &[&str], kernel_dir: &Path, runs: bool) -> (i32, String) {
    let _ = std::fs::remove_file(kernel_dir.join("ran"));
    let mut args = vec!["replay", trace.to_str().unwrap()];
    args.extend_from_slice(extra);
    let (code, _, err) = semcheck(&args);
    assert_eq!(kernel_dir.join("ran").exists(), runs, "{args:?}: ran? {err}");
    (code, err)
}

#[test]
fn a_trace_next_to_its_unchanged_kernel_replays_and_says_first_what_it_runs() {
    let (dir, _) = traced("same");
    // From another folder: the kernel file is found next to the trace.
    let (code, err) = replay(&dir.join("tc.trace"), &[], &dir, true);
    assert_eq!(code, 1, "{err}");
    let first = err.lines().next().unwrap();
    let canonical = std::fs::canonicalize(dir.join("tc.py")).unwrap();
    assert!(first.contains(&format!("running {} (sha256 ", canonical.display())), "{first}");
    assert!(err.contains("rule `outside-kernel` reproduced"), "{err}");
}

#[test]
fn a_changed_kernel_file_runs_nothing_unless_the_user_says_so() {
    let (dir, trace) = traced("changed");
    let recorded = trace.lines().find_map(|l| l.strip_prefix("kernel-sha256 ")).unwrap().to_string();
    let source = std::fs::read_to_string(dir.join("tc.py")).unwrap();
    std::fs::write(dir.join("tc.py"), format!("{source}# edited\n")).unwrap();
    let (code, err) = replay(&dir.join("tc.trace"), &[], &dir, false);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("changed since this trace was written") && err.contains(&recorded), "{err}");
    assert!(err.contains("replay runs nothing") && err.contains("--allow-changed"), "{err}");
    // The hash now, in full.
    let now = err.split(" now)").next().unwrap().rsplit(' ').next().unwrap();
    assert_eq!(now.len(), 64, "{err}");
    // Accepted: it runs (the edit is at the end, so every line still replays).
    let (code, err) = replay(&dir.join("tc.trace"), &["--allow-changed"], &dir, true);
    assert_eq!(code, 1, "{err}");
    assert!(err.lines().next().unwrap().contains("running "), "{err}");
    assert!(err.contains("run by --allow-changed"), "{err}");
    // A trace that records no hash cannot show its file is the one: the same rules.
    let unhashed: String =
        trace.lines().filter(|l| !l.starts_with("kernel-sha256")).map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("unhashed.trace"), unhashed).unwrap();
    let (code, err) = replay(&dir.join("unhashed.trace"), &[], &dir, false);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("records no kernel-sha256"), "{err}");
}

#[test]
fn a_kernel_file_outside_the_trace_s_folder_or_only_valid_from_here_runs_nothing() {
    let (dir, trace) = traced("outside");
    let sha = trace.lines().find_map(|l| l.strip_prefix("kernel-sha256 ")).unwrap();
    let elsewhere = dir.join("downloads");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let with_file = |file: &str| trace.replace("kernel-file tc.py", &format!("kernel-file {file}"));
    // A relative path valid only from the kernel's folder (the current folder of the
    // user who wrote it): not resolved against the current folder.
    std::fs::write(elsewhere.join("relative.trace"), &trace).unwrap();
    let (code, err) = replay(&elsewhere.join("relative.trace"), &[], &dir, false);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot be found from the trace's folder") && err.contains("line 3"), "{err}");
    // `..`, an absolute path and a link out of the folder: another script of this
    // machine, even with the right hash.
    let absolute = dir.join("tc.py").display().to_string();
    std::os::unix::fs::symlink(&dir, elsewhere.join("link")).unwrap();
    for (name, file) in [("dots", "../tc.py"), ("absolute", absolute.as_str()), ("link", "link/tc.py")] {
        let path = elsewhere.join(format!("{name}.trace"));
        std::fs::write(&path, with_file(file)).unwrap();
        let (code, err) = replay(&path, &[], &dir, false);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(err.contains("is outside the trace's folder") && err.contains("replay runs nothing"), "{name}: {err}");
        assert!(err.contains(&format!("--kernel {}", std::fs::canonicalize(dir.join("tc.py")).unwrap().display())));
    }
    // The user names the file: it runs, as typed (resolved against the current folder).
    let (code, err) = replay(&elsewhere.join("dots.trace"), &["--kernel", &absolute], &dir, true);
    assert_eq!(code, 1, "{err}");
    // Another file named by the user runs, with a note that it is not the trace's.
    let copy = dir.join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    let other = copy.join("tc.py");
    std::fs::write(&other, format!("{}\n# other\n", std::fs::read_to_string(dir.join("tc.py")).unwrap())).unwrap();
    let (code, err) = replay(&elsewhere.join("relative.trace"), &["--kernel", other.to_str().unwrap()], &copy, true);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("is not the file the trace was written from") && err.contains(sha), "{err}");
    // Not a regular file: refused.
    let fifo = dir.join("fifo.py");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    std::fs::write(dir.join("fifo.trace"), with_file("fifo.py")).unwrap();
    let (code, err) = replay(&dir.join("fifo.trace"), &[], &dir, false);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn a_kernel_file_named_by_the_user_stands_for_the_trace_s_under_any_name() {
    // A kernel calling a helper of another module: the trace names lines of both files.
    let dir = temp_dir("replay-renamed");
    let source = std::fs::read_to_string(repo().join("protocols/pallas/psum--no-capacity.py")).unwrap();
    let (start, end) = (source.find("def neighbor_barrier").unwrap(), source.find("def psum_kernel").unwrap());
    let helper = format!(
        "import functools\n\nfrom jax.experimental import pallas as pl\nfrom jax.experimental.pallas import tpu as pltpu\n\n\n{}",
        &source[start..end]
    );
    std::fs::write(dir.join("barrier.py"), helper).unwrap();
    let kernel = format!("{}from barrier import neighbor_barrier\n\n\n{}", &source[..start], &source[end..]);
    std::fs::write(dir.join("k.py"), &kernel).unwrap();
    let k = dir.join("k.py");
    let (code, trace, err) = semcheck(&["trace", k.to_str().unwrap(), "--devices", "2", "--format", "trace"]);
    assert_eq!(code, 1, "{err}");
    assert!(trace.contains(" @ barrier.py:") && trace.contains("(via k.py:") && trace.contains(" @ k.py:"), "{trace}");
    let path = dir.join("k.trace");
    std::fs::write(&path, &trace).unwrap();
    // The same bytes under another name, in another folder (next to its helper module).
    let copy = dir.join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(dir.join("barrier.py"), copy.join("barrier.py")).unwrap();
    let renamed = copy.join("renamed.py");
    std::fs::write(&renamed, &kernel).unwrap();
    let (code, out, err) = semcheck(&["replay", path.to_str().unwrap(), "--kernel", renamed.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("rule `race` reproduced"), "{err}");
    assert!(!err.contains("is not the file the trace was written from"), "the same bytes: {err}");
    assert!(!err.contains("the message differs"), "{err}");
    assert!(out.contains("@ renamed.py:") && out.contains("@ barrier.py:"), "{out}");
    // A renamed file that changed still has to replay event by event: the fixed kernel does not.
    let fixed = std::fs::read_to_string(repo().join("protocols/pallas/psum.py")).unwrap();
    std::fs::write(&renamed, fixed).unwrap();
    let (code, _, err) = semcheck(&["replay", path.to_str().unwrap(), "--kernel", renamed.to_str().unwrap()]);
    assert_eq!(code, 4, "{err}");
}

#[test]
fn a_trace_from_stdin_runs_no_kernel_file_unless_named() {
    let (dir, trace) = traced("stdin");
    let run = |args: &[&str]| {
        let _ = std::fs::remove_file(dir.join("ran"));
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_semcheck"))
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), trace.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), dir.join("ran").exists())
    };
    let (code, err, ran) = run(&["replay", "-"]);
    assert_eq!((code, ran), (Some(2), false), "{err}");
    assert!(err.contains("read from stdin has no folder"), "{err}");
    let kernel = dir.join("tc.py");
    let (code, err, ran) = run(&["replay", "-", "--kernel", kernel.to_str().unwrap()]);
    assert_eq!((code, ran), (Some(1), true), "{err}");
}

#[test]
fn header_fields_that_reach_a_process_are_plain_data() {
    let (dir, trace) = traced("fields");
    let cases = [
        ("kernel-sha256 ", "kernel-sha256 $(touch pwned)", "is not a sha256"),
        ("devices ", "devices 2 --out /etc/passwd", "not a number of devices"),
        ("devices ", "devices 100000", "not a number of devices"),
        // More than the model's 4096: refused before the script runs with that many XLA
        // host devices, as `--devices 4097` is.
        ("devices ", "devices 65535", "`65535` is not a number of devices in 1..=4096"),
        ("kernel-file ", "kernel-file tc.py\nkernel-tpu v5e;touch pwned", "not a TPU chip name"),
        ("kernel-file ", &format!("kernel-file tc.py\nkernel-tpu {}", "v".repeat(33)), "not a TPU chip name"),
        ("kernel-file ", "kernel-file tc.py\nkernel-args --out /etc/passwd", "not a JSON array of strings"),
        ("kernel-file ", "kernel-file tc.py\nkernel-args [\"a\\u0000b\"]", "not a JSON array of strings"),
        // Well-formed arguments are refused too, unless replay's own command line repeats them.
        ("kernel-file ", "kernel-file tc.py\nkernel-args [\"--out\",\"/etc/passwd\"]", "replay gives a script only"),
    ];
    for (starts, replacement, words) in cases {
        let text: String = trace
            .lines()
            .map(|l| if l.starts_with(starts) { replacement.to_string() } else { l.to_string() })
            .map(|l| l + "\n")
            .collect();
        std::fs::write(dir.join("bad.trace"), text).unwrap();
        let (code, err) = replay(&dir.join("bad.trace"), &[], &dir, false);
        assert_eq!(code, 2, "{replacement}: {err}");
        assert!(err.contains(words), "{replacement}: `{err}` should say `{words}`");
    }
    assert!(!dir.join("pwned").exists());
    // A kernel file whose name starts with `-` is a path, not an option of the exporter
    // (on the command line it is `./-h.py`: what follows `--` goes to the script).
    std::fs::copy(dir.join("tc.py"), dir.join("-h.py")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_semcheck"))
        .args(["trace", "--devices", "2", "--format", "trace", "./-h.py"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).replace("kernel-file ./-h.py", "kernel-file -h.py");
    assert!(text.contains("\nkernel-file -h.py\n"), "{text}");
    std::fs::write(dir.join("dash.trace"), text).unwrap();
    let (code, err) = replay(&dir.join("dash.trace"), &[], &dir, true);
    assert_eq!(code, 1, "{err}");
    // The flags of a kernel file do not apply to a catalogue trace.
    let committed = repo().join("counterexamples/psum--no-capacity.trace");
    let (code, _, err) = semcheck(&["replay", committed.to_str().unwrap(), "--allow-changed"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not of a kernel file"), "{err}");
}

#[test]
fn a_kernel_file_in_a_python_library_inside_the_trace_s_folder_runs_nothing() {
    // A virtual environment made in a checkout (`python -m venv .venv`) holds Python's
    // library, whose modules have public contents and hashes: a trace naming
    // `.venv/lib/python3.11/http/server.py` with its hash started an HTTP server. Here the
    // "library module" is the marked kernel file (it writes `ran` next to itself).
    let (dir, trace) = traced("library");
    let source = std::fs::read(dir.join("tc.py")).unwrap();
    let with_file = |file: &str| trace.replace("kernel-file tc.py", &format!("kernel-file {file}"));
    let places: [(&str, &str, &str); 7] = [
        (".venv/lib/python3.11/http", "", "in the hidden folder"),
        ("tools/.tox/py", "", "in the hidden folder"),
        ("venv/bin", "venv/pyvenv.cfg", "a Python virtual environment (it has pyvenv.cfg)"),
        ("env/bin", "env/conda-meta/history", "a conda environment (it has conda-meta)"),
        ("py/lib/python3.12/json", "", "a Python installation (it has lib/python3.12)"),
        ("vendor/site-packages/pkg", "", "a folder of installed or compiled Python modules"),
        ("pkg/__pycache__", "", "a folder of installed or compiled Python modules"),
    ];
    for (folder, marker, words) in places {
        let place = dir.join(folder);
        std::fs::create_dir_all(&place).unwrap();
        std::fs::write(place.join("tc.py"), &source).unwrap();
        if !marker.is_empty() {
            let m = dir.join(marker);
            std::fs::create_dir_all(m.parent().unwrap()).unwrap();
            std::fs::write(m, "").unwrap();
        }
        let path = dir.join("lib.trace");
        std::fs::write(&path, with_file(&format!("{folder}/tc.py"))).unwrap();
        // The hash is right, and --allow-changed does not lift the rule either.
        for extra in [&[][..], &["--allow-changed"][..]] {
            let (code, err) = replay(&path, extra, &place, false);
            assert_eq!(code, 2, "{folder} {extra:?}: {err}");
            assert!(err.contains(words) && err.contains("replay runs nothing"), "{folder}: {err}");
            let kernel = std::fs::canonicalize(place.join("tc.py")).unwrap();
            assert!(err.contains(&format!("To run that file: --kernel {}", kernel.display())), "{err}");
        }
        // Named by the user, it runs.
        let kernel = place.join("tc.py");
        let (code, err) = replay(&path, &["--kernel", kernel.to_str().unwrap()], &place, true);
        assert_eq!(code, 1, "{folder}: {err}");
    }
    // An ordinary subfolder of the trace's folder is the user's: its kernel file runs.
    let place = dir.join("kernels/ring");
    std::fs::create_dir_all(&place).unwrap();
    std::fs::write(place.join("tc.py"), &source).unwrap();
    std::fs::write(dir.join("sub.trace"), with_file("kernels/ring/tc.py")).unwrap();
    let (code, err) = replay(&dir.join("sub.trace"), &[], &place, true);
    assert_eq!(code, 1, "{err}");
}

#[test]
fn a_trace_of_a_kernel_document_is_read_never_run_and_not_interpreted() {
    let (dir, _) = traced("document");
    let python = semcheck::frontend::env::python_env().unwrap_or_else(|e| panic!("{e}")).python;
    let out = std::process::Command::new(python)
        .args(["-m", "semcheck.frontend", "export", "--devices", "2", "--out", "tc.json", "tc.py"])
        .current_dir(&dir)
        .env("PYTHONPATH", repo().join("python"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_file(dir.join("ran")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_semcheck"))
        .args(["trace", "tc.json", "--format", "trace"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let trace = String::from_utf8(out.stdout).unwrap();
    assert!(trace.contains("\nkernel-file tc.json\n"), "{trace}");
    let path = dir.join("doc.trace");
    std::fs::write(&path, &trace).unwrap();
    // Replayed: the document is read, and the first line says so (nothing "runs").
    let (code, err) = replay(&path, &[], &dir, false);
    assert_eq!(code, 1, "{err}");
    let first = err.lines().next().unwrap();
    assert!(first.contains("reading the kernel document") && !first.contains("running"), "{first}");
    // --interpret would hand the document to Python as a script: refused before anything runs.
    let (code, err) = replay(&path, &["--interpret"], &dir, false);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is a kernel document, which has no script to run") && err.contains("line 3"), "{err}");
    assert!(!err.contains("running"), "{err}");
}

#[test]
fn an_unknown_kernel_expect_is_refused_at_its_line_before_the_script_runs() {
    let (dir, trace) = traced("expect");
    // A trace that names a reference semcheck does not know: checkable without running
    // the script, so nothing runs, and the error names the trace's line.
    let edited = trace.replacen("\nkernel-file tc.py\n", "\nkernel-file tc.py\nkernel-expect allreduce\n", 1);
    let line = edited.lines().position(|l| l.starts_with("kernel-expect")).unwrap() + 1;
    std::fs::write(dir.join("expect.trace"), &edited).unwrap();
    let (code, err) = replay(&dir.join("expect.trace"), &[], &dir, false);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("line {line}")) && err.contains("kernel-expect allreduce: unknown reference"),
        "{err}"
    );
    assert!(!err.contains("running"), "{err}");
}
