//! `semcheck replay --interpret TRACE`: the counterexample of a kernel file run by JAX's own
//! TPU interpret mode, steered through the counterexample's schedule
//! (`python/semcheck/interpret.py` says how, and what cannot be steered), against the
//! same kernel steered through the lock-step schedule: the output values that differ, and
//! what JAX's race detector reports.

use std::path::Path;
use std::process::{Command, Stdio};

use semcheck::checker::counterexample::{lockstep, run_names, Namer, TraceFile, TracedRun};
use semcheck::model::ir::BufferRole;
use semcheck::model::program::Op;
use semcheck::model::{DmaLanding, Event, Rule};
use semcheck::{Program, Source};
use serde_json::{json, Value};

use super::{emitln, EXIT_PROVED, EXIT_VIOLATION};

/// Seconds one interpreter run may take by default.
const DEFAULT_SECONDS: f64 = 300.0;

/// How many differing values of one output are printed.
const SHOWN: usize = 4;

/// How many of the race detector's reports are printed.
const SHOWN_REPORTS: usize = 3;

/// `1 report`, `2 reports`.
fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// The synchronisations of each device before each of its operations: `[d][pc]` counts the
/// signals, waits and DMA starts before `pc` (the operations JAX's interpreter performs
/// through a callback, in program order).
fn ordinals(program: &Program) -> Vec<Vec<u32>> {
    program
        .devices
        .iter()
        .map(|dp| {
            let mut n = 0;
            let mut out = Vec::with_capacity(dp.ops.len() + 1);
            for op in &dp.ops {
                out.push(n);
                if syncs(op).is_some() {
                    n += 1;
                }
            }
            out.push(n);
            out
        })
        .collect()
}

/// The interpreter's kind of a synchronising operation.
fn syncs(op: &Op) -> Option<&'static str> {
    match op {
        Op::Signal { .. } => Some("signal"),
        Op::Wait { .. } => Some("wait"),
        Op::LocalDma { .. } | Op::RemoteDma { .. } => Some("dma_start"),
        _ => None,
    }
}

/// A run as the steps the interpreter is steered through.
fn steps(program: &Program, run: &TracedRun) -> Vec<Value> {
    let ord = ordinals(program);
    let breaking_outside = match &run.ending {
        semcheck::checker::counterexample::Ending::Violation { at, violation }
            if violation.rule == Rule::OutsideKernel =>
        {
            Some(*at)
        }
        _ => None,
    };
    run.events
        .iter()
        .enumerate()
        .map(|(i, &e)| {
            let state = &run.states[i];
            let mut step = match e {
                Event::Step(d) => {
                    let pc = program.pc(state, d);
                    let op = &program.devices[d.index()].ops[pc as usize];
                    let k = ord[d.index()][pc as usize];
                    match syncs(op) {
                        Some("dma_start") => json!({"op": "dma_start", "ordinal": k, "dma": [d.0, k]}),
                        Some(kind) => json!({"op": kind, "ordinal": k}),
                        None => json!({"op": "other", "next_ordinal": k}),
                    }
                }
                Event::Sent(k) => {
                    json!({"op": "dma", "dma": [k.issuer.0, ord[k.issuer.index()][k.pc as usize]], "action": "read"})
                }
                Event::Received(k) | Event::Done(k) => {
                    json!({"op": "dma", "dma": [k.issuer.0, ord[k.issuer.index()][k.pc as usize]], "action": "write"})
                }
                Event::CellLanded(..) => json!({
                    "op": "unsupported",
                    "why": "a copy landing cell by cell cannot be steered: JAX's interpreter writes a copy whole",
                }),
            };
            if breaking_outside == Some(i) {
                step = json!({
                    "op": "unsupported",
                    "why": "the rule broken here (outside-kernel) cannot happen in JAX's interpreter, which runs \
                            every device's kernel from the same start",
                });
            }
            let device = match e {
                Event::Step(d) => d.0,
                Event::Sent(k) | Event::Received(k) | Event::Done(k) | Event::CellLanded(k, _) => k.issuer.0,
            };
            step["device"] = json!(device);
            step["index"] = json!(i + 1);
            step["name"] = json!(run.names[i]);
            step
        })
        .collect()
}

/// A semaphore whose waits take more from it, in all, than every operation of the program
/// adds to it (its initial value, each signal, each copy's semaphore), said in words:
/// then some wait on it blocks for ever in every run, whatever the order of events (the
/// count a semaphore still can hold minus what its remaining waits take is the same in
/// every state of a run). `None` when there is none (the program may still block in some
/// orders).
fn starved(program: &Program) -> Option<String> {
    let initial = program.initial_state();
    let mut added: Vec<u64> = (0..program.num_sems())
        .map(|i| u64::from(program.sem_value(&initial, semcheck::model::program::SemSlot(i as u32))))
        .collect();
    let mut taken = vec![0u64; program.num_sems()];
    let mut waits: Vec<Vec<String>> = vec![Vec::new(); program.num_sems()];
    for (d, dp) in program.mesh.devices().zip(&program.devices) {
        for (pc, op) in dp.ops.iter().enumerate() {
            match *op {
                Op::Signal { sem, inc, .. } => added[sem.0 as usize] += u64::from(inc),
                Op::LocalDma { sem, bytes, .. } => added[sem.0 as usize] += u64::from(bytes),
                Op::RemoteDma { send_sem, recv_sem, bytes, .. } => {
                    added[send_sem.0 as usize] += u64::from(bytes);
                    added[recv_sem.0 as usize] += u64::from(bytes);
                }
                Op::Wait { sem, amount } => {
                    taken[sem.0 as usize] += u64::from(amount);
                    waits[sem.0 as usize].push(format!("`{}`", program.describe_op(d, pc as u32)));
                }
                _ => {}
            }
        }
    }
    let slot = (0..program.num_sems()).find(|&i| taken[i] > added[i])?;
    let sem = program.sem_full_name(semcheck::model::program::SemSlot(slot as u32));
    let shown = waits[slot].iter().take(3).cloned().collect::<Vec<_>>().join(", ");
    let more = waits[slot].len().saturating_sub(3);
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    Some(format!(
        "the waits on {sem} ({shown}{more}) take {} from it in all, and the kernel's operations add only {} to it",
        taken[slot], added[slot]
    ))
}

/// The plan the Python side reads: the kernel file and both schedules.
fn plan(file: &TraceFile, program: &Program, run: &TracedRun) -> Result<Value, String> {
    let case = &file.header.case;
    let Source::Python { path, kernel, .. } = &case.source else {
        return Err("--interpret runs a kernel file in JAX's interpreter: this trace is of a catalogue protocol \
                    (trace its Python file, e.g. protocols/pallas/<protocol>--<mutant>.py, instead)"
            .to_string());
    };
    if semcheck::frontend::is_document(path) {
        // `replay` refuses this before anything runs; never hand a document to Python.
        return Err(format!(
            "--interpret runs a kernel file's script: {} is a kernel document, which has no script to run",
            path.display()
        ));
    }
    if case.repeat != 1 {
        return Err(format!("--interpret cannot steer {} invocations: the script calls its kernel once", case.repeat));
    }
    if let Some(v) = run.ending.violation().filter(|v| v.rule == Rule::Deadlock) {
        return Err(format!(
            "--interpret cannot show a deadlock: JAX's interpreter has no deadlock detection, so its run \
             would block at the same waits until --max-seconds ({}); the counterexample stands on semcheck's \
             model, replayed above",
            v.message
        ));
    }
    if program.kernels.len() > 1 {
        return Err(format!(
            "--interpret cannot steer a program of several kernels ({}): JAX's TPU interpreter runs each \
             pallas_call on its own, with semaphores allocated for that call only, so semaphores and DMAs \
             in flight cannot pass from one kernel to the next there (a kernel with `pltpu.SEMAPHORE`-space \
             outputs fails in it); the counterexample stands on semcheck's model, replayed above",
            program.kernels.join(", ")
        ));
    }
    if case.semantics.dma_landing == DmaLanding::Cells {
        return Err(
            "--interpret cannot steer copies landing cell by cell: JAX's interpreter writes a copy whole".into()
        );
    }
    if let Some(why) = starved(program) {
        return Err(format!(
            "--interpret cannot run this kernel to its end: {why}, so in every run of the kernel one of those \
             waits blocks for ever; JAX's interpreter, which has no deadlock detection, would block there (in \
             the run it continues unsteered after the counterexample's schedule) until --max-seconds; the \
             counterexample stands on semcheck's model, replayed above"
        ));
    }
    let namer = Namer::new(program);
    // The reference: the lock-step schedule; a kernel that breaks a rule even in lock step
    // is compared with the interpreter's own run, unsteered (no step at all).
    let (reference, note) = match lockstep(program) {
        Ok(l) => {
            let run = run_names(&namer, &l.events)
                .map_err(|e| format!("the lock-step run does not replay at event {}: {}", e.index + 1, e.wanted))?;
            (steps(program, &run), Value::Null)
        }
        Err(e) => (Vec::new(), json!(format!("no lock-step run ({e}): the reference is JAX's interpreter's own run"))),
    };
    Ok(json!({
        "kernel_file": path,
        "kernel_name": kernel,
        "devices": case.devices,
        "tpu": file.header.tpu,
        "argv": semcheck::frontend::script_args(),
        "reference_note": note,
        "schedules": {"counterexample": steps(program, run), "lockstep": reference},
    }))
}

/// Runs the Python side on one schedule, within `seconds`: in a process group of its own
/// (ended with whatever the script started, counted by the memory budget, killed on every
/// end of semcheck), its stderr kept in a file beside the plan.
fn interpret(plan_path: &Path, schedule: &str, seconds: f64) -> Result<Value, String> {
    let py = semcheck::frontend::env::python_env().map_err(|e| e.to_string())?;
    let out = plan_path.with_extension(format!("{schedule}.json"));
    let err_path = plan_path.with_extension(format!("{schedule}.err"));
    let err_file = std::fs::File::create(&err_path).map_err(|e| format!("cannot write {}: {e}", err_path.display()))?;
    let mut pythonpath = py.package_root.clone().into_os_string();
    if let Some(old) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
        pythonpath.push(":");
        pythonpath.push(old);
    }
    let mut child = semcheck::children::spawn(
        Command::new(&py.python)
            .args(["-m", "semcheck.interpret"])
            .arg(plan_path)
            .arg(&out)
            .arg(schedule)
            .env("PYTHONPATH", pythonpath)
            .env("SEMCHECK_API_CHILD", "1")
            .env(semcheck::frontend::env::EXPORTING, "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err_file),
    )
    .map_err(|e| format!("cannot run {}: {e}", py.python.display()))?;
    let status = match semcheck::children::wait_for(&mut child, seconds) {
        Ok(Some(status)) => status,
        Ok(None) => {
            return Err(format!(
                "JAX's interpreter did not finish the {schedule} run within {seconds:.0} s (--max-seconds): \
                 the run it continued with after the schedule may be stuck"
            ))
        }
        Err(e) => return Err(format!("the {schedule} run in JAX's interpreter was stopped: {e}")),
    };
    let stderr = semcheck::children::read_tail(&err_path);
    let text = std::fs::read_to_string(&out).map_err(|_| {
        let how = semcheck::children::describe(status);
        let tail: Vec<&str> = stderr.lines().rev().take(12).collect::<Vec<_>>().into_iter().rev().collect();
        if tail.is_empty() {
            format!("JAX's interpreter ended ({how}) without writing its result, and printed nothing")
        } else {
            format!("JAX's interpreter ended ({how}) without writing its result:\n  {}", tail.join("\n  "))
        }
    })?;
    let _ = std::fs::remove_file(&out);
    serde_json::from_str(&text).map_err(|e| format!("unreadable result of JAX's interpreter: {e}"))
}

/// One output value as a number (NaN and infinities come as strings).
fn number(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::String(s) => s.parse().unwrap_or(f64::NAN),
        _ => f64::NAN,
    }
}

/// Whether two output values are the same (NaN equals NaN; floats within 1e-5).
fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-5 * (1.0 + a.abs().max(b.abs()))
}

/// The multi-index of flat position `i` in `shape`.
fn position(shape: &[usize], mut i: usize) -> String {
    let mut idx = vec![0; shape.len()];
    for (k, &n) in shape.iter().enumerate().rev() {
        if n > 0 {
            idx[k] = i % n;
            i /= n;
        }
    }
    format!("[{}]", idx.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "))
}

/// What one run did, in words.
fn describe(r: &Value) -> String {
    let steered = r["steered"].as_u64().unwrap_or(0);
    let events = r["events"].as_u64().unwrap_or(0);
    match r["divergence"].as_str() {
        Some(why) => format!("steered through {steered} of its {events} events, then ran unsteered: {why}"),
        None => format!("all {events} events steered, then run unsteered to the end"),
    }
}

/// `replay --interpret`: prints the comparison; exit 1 when, in the counterexample's run,
/// an output differs, JAX's race detector reports a race, a semaphore is non-zero at the
/// kernel's exit or a DMA it started never completed, 0 when none of these.
pub(crate) fn run(
    name: &str,
    file: &TraceFile,
    program: &Program,
    run: &TracedRun,
    max_seconds: Option<f64>,
) -> Result<i32, String> {
    let plan = plan(file, program, run)?;
    if program.mesh.axes().iter().any(|a| a.name == "tc") && program.num_devices() > 1 {
        eprintln!("semcheck: note: the devices of this mesh are a chip's TensorCores: each is steered as its core");
    }
    // The plan, the results and the runs' stderr in a folder of this run's own, removed on
    // every end of semcheck; what a killed run left there is removed by the next.
    let parent = semcheck::frontend::env::cache_dir().map_err(|e| e.to_string())?.join("interpret");
    std::fs::create_dir_all(&parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    semcheck::cleanup::sweep(&parent, "run-");
    semcheck::cleanup::sweep_orphan_files(&parent, "plan-");
    let run_dir = semcheck::cleanup::TempDir::create(&parent, "run-")
        .map_err(|e| format!("cannot create a folder in {}: {e}", parent.display()))?;
    let plan_path = run_dir.path().join("plan.json");
    std::fs::write(&plan_path, plan.to_string()).map_err(|e| format!("cannot write {}: {e}", plan_path.display()))?;
    let seconds = max_seconds.unwrap_or(DEFAULT_SECONDS);
    // The runs are work the watchdog's budgets and Ctrl-C hold (their memory counted).
    let w = super::watch::watch();
    w.doing("running the kernel file in JAX's interpreter", false);
    let ran = interpret(&plan_path, "counterexample", seconds)
        .and_then(|cex| interpret(&plan_path, "lockstep", seconds).map(|reference| (cex, reference)));
    w.idle();
    // SEMCHECK_INTERPRET_DEBUG=1 keeps the plan and the runs' stderr (and the Python side
    // prints tracebacks).
    if std::env::var_os("SEMCHECK_INTERPRET_DEBUG").is_some() {
        let keep = parent.join(format!("debug-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&keep);
        match run_dir.persist(&keep) {
            Ok(()) => eprintln!("semcheck: the plan is {}", keep.join("plan.json").display()),
            Err(e) => eprintln!("semcheck: cannot keep the plan in {}: {e}", keep.display()),
        }
    }
    let (cex, reference) = ran?;
    for r in [&cex, &reference] {
        if let Some(e) = r["error"].as_str() {
            return Err(format!("JAX's interpreter could not run {name}'s kernel file ({} run): {e}", r["schedule"]));
        }
        if r["kernel"].is_null() {
            return Err("JAX's interpreter never ran the trace's kernel (the script did not call it)".into());
        }
        // A run that recorded no output, or stopped inside the schedule without diverging
        // from it, did not run the kernel through it: comparing would claim what was not seen.
        let (steered, events) = (r["steered"].as_u64().unwrap_or(0), r["events"].as_u64().unwrap_or(0));
        if r["divergence"].is_null() && steered < events {
            return Err(format!(
                "JAX's interpreter stopped the {} run after {steered} of its {events} events, without \
                 diverging from the schedule: the kernel did not run to its end",
                r["schedule"]
            ));
        }
        if r["outputs"].as_object().is_none_or(|o| o.is_empty()) {
            return Err(format!("JAX's interpreter recorded no output of the kernel in the {} run", r["schedule"]));
        }
    }
    emitln!("{name}: {} in JAX's TPU interpret mode (dma_execution_mode=on_wait, detect_races=True)", file.header.case);
    emitln!("  counterexample: {}", describe(&cex));
    match plan["reference_note"].as_str() {
        Some(note) => emitln!("  reference:      {note}"),
        None => emitln!("  lock step:      {}", describe(&reference)),
    }
    let names: Vec<String> =
        program.buffers.iter().filter(|b| b.role == BufferRole::Output).map(|b| b.name.clone()).collect();
    let mut differ = 0usize;
    let mut nan = false;
    let devices = reference["outputs"].as_object().cloned().unwrap_or_default();
    for (device, outputs) in &devices {
        for (j, want) in outputs.as_array().into_iter().flatten().enumerate() {
            let got = &cex["outputs"][device][j];
            let label = names.get(j).map_or_else(|| format!("output {j}"), |n| format!("output {j} ({n})"));
            let (w, g) = (want["values"].as_array(), got["values"].as_array());
            let (Some(w), Some(g)) = (w, g) else {
                emitln!("  d{device} {label}: not produced by the counterexample's run");
                differ += 1;
                continue;
            };
            let shape: Vec<usize> =
                want["shape"].as_array().into_iter().flatten().map(|x| x.as_u64().unwrap_or(0) as usize).collect();
            let wrong: Vec<usize> =
                (0..w.len().min(g.len())).filter(|&i| !same(number(&w[i]), number(&g[i]))).collect();
            if wrong.is_empty() {
                continue;
            }
            differ += wrong.len();
            emitln!("  d{device} {label}: {} of {} values differ from the lock-step run", wrong.len(), w.len());
            for &i in wrong.iter().take(SHOWN) {
                let show = |v: &Value| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                emitln!("    {}: lock step {}, counterexample {}", position(&shape, i), show(&w[i]), show(&g[i]));
            }
            nan |= wrong.iter().any(|&i| number(&g[i]).is_nan());
        }
    }
    if differ == 0 {
        let nans: usize = cex["outputs"]
            .as_object()
            .into_iter()
            .flat_map(|o| o.values())
            .flat_map(|outputs| outputs.as_array().into_iter().flatten())
            .flat_map(|o| o["values"].as_array().into_iter().flatten())
            .filter(|v| number(v).is_nan())
            .count();
        emitln!("  every output value equals the reference run's");
        if nans > 0 {
            emitln!(
                "  (both hold {nans} NaN values: memory read before anything was written to it, which JAX's \
                 interpreter fills with NaN; the reference schedule reads it early too)"
            );
        }
    } else if nan {
        emitln!("  (nan: memory read before anything was written to it, which JAX's interpreter fills with NaN)");
    }
    let races = cex["races"].as_array().cloned().unwrap_or_default();
    if races.is_empty() {
        emitln!("  JAX's race detector: no race reported in the counterexample's run");
    } else {
        emitln!("  JAX's race detector, in the counterexample's run ({}):", count(races.len(), "report"));
        // Each report is the accesses it found unordered, one a line, under its number.
        for (k, r) in races.iter().take(SHOWN_REPORTS).enumerate() {
            emitln!("    report {}:", k + 1);
            for line in r.as_str().unwrap_or("").lines() {
                emitln!("      {line}");
            }
        }
        if races.len() > SHOWN_REPORTS {
            emitln!("    ({} not shown)", count(races.len() - SHOWN_REPORTS, "more report"));
        }
    }
    let reference_run = if plan["reference_note"].is_null() { "lock-step" } else { "reference" };
    let reference_races = reference["races"].as_array().map_or(0, Vec::len);
    emitln!(
        "  JAX's race detector, in the {reference_run} run: {}",
        if reference_races == 0 { "no race reported".to_string() } else { count(reference_races, "report") }
    );
    // A semaphore left non-zero at the kernel's exit: the interpreter notes it (a leak
    // changes no output value).
    let counts = |r: &Value| -> Vec<String> {
        r["exit_counts"].as_array().into_iter().flatten().filter_map(|c| c.as_str().map(str::to_string)).collect()
    };
    let left = counts(&cex);
    for (run, r) in [("the counterexample's", &cex), (&format!("the {reference_run}"), &reference)] {
        let nonzero = counts(r);
        if nonzero.is_empty() {
            emitln!("  JAX's interpreter: every semaphore 0 at the kernel's exit in {run} run");
        } else {
            emitln!("  JAX's interpreter, at the kernel's exit in {run} run:");
            for c in &nonzero {
                emitln!("    {c}");
            }
        }
    }
    // A DMA started and never run: the interpreter runs a DMA when a device waits on its
    // semaphores (on_wait), so the counterexample's unwaited DMA shows as one that never ran.
    let never_ran = unfinished(&cex, &plan["schedules"]["counterexample"]);
    if !never_ran.is_empty() {
        emitln!(
            "  JAX's interpreter never completed {} DMA{} the counterexample's run started (it runs a DMA when a \
             device waits on its semaphores, and none did before the script ended; its semaphores stay 0 and \
             its destination is not written there):",
            never_ran.len(),
            if never_ran.len() == 1 { "" } else { "s" }
        );
        for d in &never_ran {
            emitln!("    {d}");
        }
    }
    match unfinished(&reference, &plan["schedules"]["lockstep"]).len() {
        0 => {}
        1 => emitln!("  JAX's interpreter, in the {reference_run} run: 1 DMA never completed"),
        n => emitln!("  JAX's interpreter, in the {reference_run} run: {n} DMAs never completed"),
    }
    Ok(if differ > 0 || !races.is_empty() || !left.is_empty() || !never_ran.is_empty() {
        EXIT_VIOLATION
    } else {
        EXIT_PROVED
    })
}

/// The DMAs a run started under steering that never completed, each as the event of the
/// schedule that started it (`event 4: d0 start remote_copy ... (never read or written)`).
fn unfinished(r: &Value, steps: &Value) -> Vec<String> {
    let steps = steps.as_array().map(Vec::as_slice).unwrap_or_default();
    r["unfinished_dmas"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| {
            let (issuer, ordinal) = (d[0].as_u64()?, d[1].as_u64()?);
            let state = match d[2].as_str() {
                Some("READ") => "its source read, never written",
                _ => "never read or written",
            };
            let start = steps.iter().find(|s| s["op"] == "dma_start" && s["dma"] == json!([issuer, ordinal]));
            Some(match start {
                Some(s) => format!("event {}: {} ({state})", s["index"], s["name"].as_str().unwrap_or("?")),
                None => format!("d{issuer}'s synchronisation {ordinal}, a DMA start ({state})"),
            })
        })
        .collect()
}
