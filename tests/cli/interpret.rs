//! `replay --interpret`: a kernel file's counterexample run by JAX's own TPU interpret
//! mode, steered through its schedule, shows the wrong output values against the lock-step
//! run, and JAX's race detector names the racing lines (needs the front end's Python with
//! JAX, as the other kernel-file tests do).

use crate::common::{semcheck, temp_dir};

/// A trace of a copy of a kernel file (its events name the copy's lines).
fn trace_of(kernel: &str, devices: &str, dir: &std::path::Path) -> std::path::PathBuf {
    trace_of_edited(kernel, devices, dir, |text| text)
}

/// A trace of a copy of a kernel file, `edit`ed first.
fn trace_of_edited(
    kernel: &str,
    devices: &str,
    dir: &std::path::Path,
    edit: impl Fn(String) -> String,
) -> std::path::PathBuf {
    let file = dir.join(kernel);
    let text = std::fs::read_to_string(crate::common::repo().join("protocols/pallas").join(kernel)).unwrap();
    std::fs::write(&file, edit(text)).unwrap();
    let (code, trace, err) = semcheck(&["trace", file.to_str().unwrap(), "--devices", devices, "--format", "trace"]);
    assert_eq!(code, 1, "{err}");
    let path = dir.join(format!("{kernel}.trace"));
    std::fs::write(&path, trace).unwrap();
    path
}

/// A trace of ppermute given a REGULAR semaphore `extra_sem`, which `statement` uses
/// after the copy's wait.
fn trace_of_ppermute_with_extra_semaphore(statement: &str, dir: &std::path::Path) -> std::path::PathBuf {
    trace_of_edited("ppermute.py", "2", dir, |text| {
        text.replace(
            "def right_shift_kernel(x_ref, y_ref, send_sem, recv_sem):",
            "def right_shift_kernel(x_ref, y_ref, send_sem, recv_sem, extra_sem):",
        )
        .replace("    dma.wait()\n", &format!("    dma.wait()\n    {statement}\n"))
        .replace(
            "scratch_shapes=([pltpu.SemaphoreType.DMA] * 2),",
            "scratch_shapes=([pltpu.SemaphoreType.DMA] * 2 + [pltpu.SemaphoreType.REGULAR]),",
        )
    })
}

#[test]
fn psum_without_capacity_gives_wrong_numbers_in_jax_s_interpreter() {
    let dir = temp_dir("interpret");
    // The script ends as soon as it has dispatched the kernel, without waiting for its
    // result: JAX runs it asynchronously, and the interpreted run must wait for it. Run by
    // the interpreter, it also starts a process of its own, which must not outlive semcheck.
    let sleeper = format!("sleep {}", 7000 + std::process::id() % 1000);
    let trace = trace_of_edited("psum--no-capacity.py", "2", &dir, |text| {
        let end = text.find("\nxla_result = ").expect("the seed computes xla_result");
        let started = format!(
            "import subprocess\nif b'semcheck.interpret' in open('/proc/self/cmdline', 'rb').read():\n    \
             subprocess.Popen({:?}.split(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)\n",
            sleeper
        );
        format!("{}\n{started}", &text[..end])
    });
    let (code, out, err) = semcheck(&["replay", "--interpret", trace.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}\n{err}");
    let wanted = format!("{}\0", sleeper.replace(' ', "\0"));
    // Killed with its group as the run ended: gone within moments (SIGKILL is delivered
    // asynchronously), never left running.
    let running = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
            .any(|cmdline| cmdline == wanted.as_bytes())
    };
    assert!(crate::common::within_moments(|| !running()), "`{sleeper}` is left running");
    // The whole counterexample was steered, and the lock-step run too.
    assert!(out.contains("  counterexample: all 31 events steered"), "{out}");
    assert!(out.contains("  lock step:      all ") && out.contains(" events steered"), "{out}");
    // d0's output is wrong: its local copy read hbm_buf[0] before d1's first copy landed.
    let line = out.lines().find(|l| l.starts_with("  d0 output 0 (o_ref): ")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.ends_with(" values differ from the lock-step run"), "{line}");
    assert!(out.contains("    [0, 0]: lock step 1.88"), "{out}");
    // JAX's race detector sees the race semcheck reports: the first copy (line 86) writes
    // what the local copy (line 95) reads.
    let detector =
        out.split("JAX's race detector, in the counterexample's run").nth(1).unwrap_or_else(|| panic!("{out}"));
    assert!(detector.contains("write of d0 hbm buffer") && detector.contains("psum--no-capacity.py:86"), "{out}");
    assert!(detector.contains("read of d0 hbm buffer") && detector.contains("psum--no-capacity.py:95"), "{out}");
    // Each report under its number, its accesses indented below it.
    assert!(detector.contains(":\n    report 1:\n      write of d0 hbm buffer"), "{out}");
    // Its semaphores all end at 0: the race is its only fault.
    assert!(
        out.contains("JAX's interpreter: every semaphore 0 at the kernel's exit in the counterexample's run"),
        "{out}"
    );
}

#[test]
fn what_cannot_be_steered_is_said() {
    let dir = temp_dir("interpret-outside");
    // A DMA landing in a device that has not entered cannot happen in the interpreter.
    let trace = trace_of("psum--no-barrier.py", "2", &dir);
    let (code, out, err) = semcheck(&["replay", "--interpret", trace.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("steered through 4 of its 5 events, then ran unsteered: the rule broken here (outside-kernel) cannot happen in JAX's interpreter"), "{out}");
    assert!(out.contains("every output value equals the reference run's"), "{out}");
    // A program of several kernels (a split-phase ppermute): the interpreter runs each
    // pallas_call on its own, and cannot hand semaphores from one to the next.
    let trace = trace_of("split_ppermute--early-read.py", "2", &dir);
    let (code, _, err) = semcheck(&["replay", "--interpret", trace.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("rule `race` reproduced"), "{err}");
    assert!(
        err.contains("--interpret cannot steer a program of several kernels (start_kernel, send_done_kernel, use_kernel, recv_done_kernel)"),
        "{err}"
    );
    // A deadlock: the interpreter would block at the same waits until the budget.
    let trace = trace_of_ppermute_with_extra_semaphore("pl.semaphore_wait(extra_sem, 1)", &dir);
    let (code, _, err) = semcheck(&["replay", "--interpret", trace.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("rule `deadlock` reproduced"), "{err}");
    assert!(err.contains("--interpret cannot show a deadlock: JAX's interpreter has no deadlock detection"), "{err}");
    // A catalogue trace has no kernel file to run.
    let catalogue = crate::common::repo().join("counterexamples/psum--no-capacity.trace");
    let (code, _, err) = semcheck(&["replay", "--interpret", catalogue.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--interpret runs a kernel file in JAX's interpreter"), "{err}");
}

#[test]
fn a_semaphore_left_at_exit_is_seen_by_jax_s_interpreter() {
    let dir = temp_dir("interpret-leak");
    // ppermute with a REGULAR semaphore signalled once and never waited on: a leak, which
    // changes no output value; the interpreter finds the semaphore non-zero at exit.
    let trace = trace_of_ppermute_with_extra_semaphore("pl.semaphore_signal(extra_sem, 1)", &dir);
    let (code, out, err) = semcheck(&["replay", "--interpret", trace.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("rule `semaphore-leak` reproduced"), "{err}");
    assert!(out.contains("every output value equals the reference run's"), "{out}");
    let at_exit = out
        .split("JAX's interpreter, at the kernel's exit in the counterexample's run:\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{out}"));
    // Named as the kernel names it (the interpreter knows it by a number).
    for d in ["d0", "d1"] {
        assert!(at_exit.lines().any(|l| l == format!("    {d}: extra_sem holds 1, not 0")), "{out}");
    }
    assert!(out.contains("JAX's race detector: no race reported in the counterexample's run"), "{out}");
}

#[test]
fn a_dma_nobody_waits_for_is_one_the_interpreter_never_ran() {
    let dir = temp_dir("interpret-unwaited");
    // ppermute without its wait: the copy is outstanding at exit (a leak). JAX's interpreter
    // runs a DMA when a device waits on its semaphores, so there it never runs: every
    // semaphore is 0 and the outputs equal, and the report names the DMA that never ran.
    let trace = trace_of_edited("ppermute.py", "2", &dir, |text| text.replace("    dma.wait()\n", ""));
    let (code, out, err) = semcheck(&["replay", "--interpret", trace.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("rule `semaphore-leak` reproduced"), "{err}");
    let never = out
        .split_once("JAX's interpreter never completed 1 DMA the counterexample's run started")
        .unwrap_or_else(|| panic!("{out}"))
        .1;
    let line = never.lines().nth(1).unwrap_or_default();
    assert!(
        line.starts_with("    event ")
            && line.contains("start remote_copy")
            && line.ends_with("(never read or written)"),
        "{out}"
    );
}

#[test]
fn the_reference_run_s_semaphores_left_at_exit_are_named() {
    let dir = temp_dir("interpret-reference-leak");
    // psum_scatter leaking its last capacity signal even in lock step: the reference is the
    // interpreter's own run, which leaves a capacity semaphore non-zero (on each device, or
    // on one: which signals land before their device exits depends on the interpreter's
    // threads).
    let trace = trace_of("psum_scatter--no-final-drain.py", "2", &dir);
    let (code, out, err) = semcheck(&["replay", "--interpret", trace.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}\n{err}");
    let reference = out
        .split_once("JAX's interpreter, at the kernel's exit in the reference run:\n")
        .unwrap_or_else(|| panic!("{out}"))
        .1;
    let lines: Vec<&str> = reference.lines().take_while(|l| l.starts_with("    ")).collect();
    let named = ["    d0: left_capacity_sem holds 1, not 0", "    d1: left_capacity_sem holds 1, not 0"];
    assert!(!lines.is_empty() && lines.iter().all(|l| named.contains(l)), "{out}");
}

#[test]
fn the_interpreted_run_is_traced_for_the_trace_s_chip() {
    // A kernel pipelined by `pltpu.emit_pipeline`, which sizes itself from the chip: traced
    // with SEMCHECK_TPU=v6e, and run by the interpreter for that chip although
    // SEMCHECK_TPU is not set for the replay.
    let dir = temp_dir("interpret-tpu");
    let kernels = crate::common::repo().join("python/tests/kernels");
    for f in ["pipeline_race.py", "_harness.py"] {
        std::fs::copy(kernels.join(f), dir.join(f)).unwrap();
    }
    let out = crate::common::semcheck_cmd()
        .args(["trace", "pipeline_race.py", "--devices", "2", "--format", "trace"])
        .env("SEMCHECK_TPU", "v6e")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let trace = String::from_utf8(out.stdout).unwrap();
    assert!(trace.contains("\nkernel-tpu v6e\n"), "{trace}");
    std::fs::write(dir.join("pr.trace"), trace).unwrap();
    let out = crate::common::semcheck_cmd()
        .args(["replay", "--interpret", "pr.trace"])
        .env_remove("SEMCHECK_TPU")
        .current_dir(&dir)
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("  counterexample: all 25 events steered"), "{stdout}");
    let detector = stdout.split("JAX's race detector, in the counterexample's run").nth(1).unwrap_or_default();
    assert!(detector.contains("pipeline_race.py:16"), "{stdout}");
}

#[test]
fn a_kernel_whose_waits_can_never_all_pass_is_refused_before_it_runs() {
    // Every device copies to d0: d1's wait for its receive semaphore can never pass, so the
    // interpreter's run would block there after the steered race, until --max-seconds.
    let dir = temp_dir("interpret-starved");
    let kernels = crate::common::repo().join("python/tests/kernels");
    for f in ["prefetch_race.py", "_harness.py"] {
        std::fs::copy(kernels.join(f), dir.join(f)).unwrap();
    }
    let kernel = dir.join("prefetch_race.py");
    let (code, trace, err) = semcheck(&["trace", kernel.to_str().unwrap(), "--devices", "2", "--format", "trace"]);
    assert_eq!(code, 1, "{err}");
    let path = dir.join("prefetch_race.trace");
    std::fs::write(&path, trace).unwrap();
    let started = std::time::Instant::now();
    let (code, out, err) = semcheck(&["replay", "--interpret", path.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("rule `race` reproduced"), "{err}");
    assert!(
        err.contains(
            "--interpret cannot run this kernel to its end: the waits on d1 recv (`d1 wait recv 4096 (wait_recv) \
             @ prefetch_race.py:13 d.wait()`) take 4096 from it in all, and the kernel's operations add only 0 to it"
        ),
        "{err}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "refused before JAX's interpreter ran");
}
