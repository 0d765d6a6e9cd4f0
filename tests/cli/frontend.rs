//! The Python front end, end to end: the kernel read from each `protocols/pallas/*.py`
//! compiles to the same per-device programs as the DSL kernel of the catalogue (the same
//! operations on the same cells and semaphores) and gets the same verdict and state
//! count; each mutant file is caught with its rule; and the Python package's own pytest
//! suite passes.
//!
//! Needs Python 3.11+ with `venv`: the first run creates the front end's environment
//! under the cache directory (`SEMCHECK_CACHE_DIR`, `~/.cache/semcheck`; about 30 s),
//! unless `SEMCHECK_PYTHON` names an interpreter with a supported JAX (0.8 to 0.10).

use crate::common::{repo, semcheck_cmd};
use std::path::PathBuf;
use std::process::Command;

use semcheck::checker::{explore, Config, Verdict};
use semcheck::model::program::{CellSpan, ComputeKind, Op};
use semcheck::protocols::{catalogue, MeshKind};
use semcheck::{Case, Program, Source};

fn python_case(file: &str, devices: usize, repeat: u32) -> Case {
    let path = repo().join("protocols").join("pallas").join(file);
    Case::new(Source::Python { path, kernel: None, expect: None }, devices).repeat(repeat)
}

/// An operation with its cells, semaphores and devices resolved to names, independent of
/// pool offsets and labels.
fn ops(p: &Program, device: usize) -> Vec<String> {
    let cells = |s: CellSpan| p.span(s).iter().map(|&c| p.cell_full_name(c)).collect::<Vec<_>>().join(" ");
    p.devices[device]
        .ops
        .iter()
        .map(|op| match *op {
            Op::Enter | Op::Exit | Op::EntryBarrier => format!("{op:?}"),
            Op::Signal { target, sem, inc } => format!("signal {} +{inc} -> {target}", p.sem_full_name(sem)),
            Op::Wait { sem, amount } => format!("wait {} {amount}", p.sem_full_name(sem)),
            Op::LocalDma { src, dst, sem, bytes } => {
                format!("local [{}] -> [{}] {} {bytes}", cells(src), cells(dst), p.sem_full_name(sem))
            }
            Op::RemoteDma { src, dst, target, send_sem, recv_sem, bytes } => format!(
                "remote [{}] -> {target} [{}] {} {} {bytes}",
                cells(src),
                cells(dst),
                p.sem_full_name(send_sem),
                p.sem_full_name(recv_sem)
            ),
            Op::Compute { kind, dst, src } => {
                let kind = match kind {
                    ComputeKind::Apply(f) => format!("apply {}", p.values.func_name(f)),
                    other => format!("{other:?}"),
                };
                format!("compute {kind} [{}] <- [{}]", cells(dst), cells(src))
            }
        })
        .collect()
}

fn decls(p: &Program) -> String {
    let b: Vec<String> = p
        .buffers
        .iter()
        .map(|b| format!("{} {:?} {:?} {:?} {} {}", b.name, b.space, b.role, b.shape, b.cell_bytes, b.shared))
        .collect();
    let s: Vec<String> =
        p.sem_decls.iter().map(|(d, i)| format!("{} {:?} {:?} {}", d.name, d.kind, i, d.scoped)).collect();
    format!("{b:?} {s:?} {}", p.mesh)
}

fn outcome(p: &Program) -> (String, Option<semcheck::Rule>, u64) {
    let o = explore(p, &Config::default());
    let rule = match &o.verdict {
        Verdict::Violation(c) => Some(c.violation.rule),
        _ => None,
    };
    (o.verdict.name().to_string(), rule, o.stats.states)
}

fn sizes(kind: MeshKind, protocol: &str) -> Vec<usize> {
    match (kind, protocol) {
        (MeshKind::TensorCores, _) => vec![2],
        (_, "psum_scatter") => vec![2, 3],
        _ => vec![2, 3, 4],
    }
}

/// The seed file of protocol `p` compiles to the DSL's programs at N = `n` and is proved
/// like it.
fn seed_file_matches_the_dsl(p: &semcheck::protocols::Protocol, n: usize) {
    let file = format!("{}.py", p.name);
    assert!(repo().join("protocols/pallas").join(&file).is_file(), "every seed protocol has its Python file");
    let dsl = semcheck::catalogue_program(p.name, None, n, 1).unwrap();
    let py = semcheck::program(&python_case(&file, n, 1)).unwrap_or_else(|e| panic!("{file} N={n}: {e}"));
    assert_eq!(decls(&py), decls(&dsl), "{file} N={n}: declarations");
    for d in 0..dsl.num_devices() {
        assert_eq!(ops(&py, d), ops(&dsl, d), "{file} N={n}: the program of d{d}");
    }
    let (a, b) = (outcome(&py), outcome(&dsl));
    assert_eq!(a, b, "{file} N={n}: verdict, rule, states");
    assert_eq!(a.0, "proved", "{file} N={n}");
    // Every operation of the Python kernel names its source line.
    for dp in &py.devices {
        for info in dp.info.iter().filter(|i| i.stmt.is_some()) {
            assert!(info.label.contains(&format!("@ {}.py:", p.name)), "{file}: {}", info.label);
        }
    }
}

/// The file of mutant `m` of protocol `p` compiles to the DSL mutant's programs and is
/// caught like it, with one of its rules.
fn mutant_file_matches_the_dsl(p: &semcheck::protocols::Protocol, m: &semcheck::protocols::Mutant) {
    let file = format!("{}--{}.py", p.name, m.name);
    assert!(repo().join("protocols/pallas").join(&file).is_file(), "every seed mutant has its Python file ({file})");
    let n = m.manifests_from.unwrap_or(if p.mesh_kind == MeshKind::TensorCores { 2 } else { 3 });
    let repeat = m.repeat.max(1);
    let dsl = semcheck::catalogue_program(p.name, Some(m.name), n, repeat).unwrap();
    let py = semcheck::program(&python_case(&file, n, repeat)).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(decls(&py), decls(&dsl), "{file} N={n}: declarations");
    for d in 0..dsl.num_devices() {
        assert_eq!(ops(&py, d), ops(&dsl, d), "{file} N={n}: the program of d{d}");
    }
    let (a, b) = (outcome(&py), outcome(&dsl));
    assert_eq!(a, b, "{file} N={n}: verdict, rule, states");
    match a.1 {
        Some(rule) => assert!(m.expected.contains(&rule), "{file}: {rule} not among {:?}", m.expected),
        None => assert!(m.expected.is_empty(), "{file}: not caught, expected one of {:?}", m.expected),
    }
}

#[test]
fn every_seed_file_compiles_to_the_dsl_programs_and_gets_the_same_verdict() {
    for p in catalogue() {
        for n in sizes(p.mesh_kind, p.name) {
            seed_file_matches_the_dsl(p, n);
        }
    }
}

#[test]
fn every_mutant_file_is_caught_like_its_dsl_mutant() {
    let mut seen = 0;
    for p in catalogue() {
        for m in p.mutants {
            mutant_file_matches_the_dsl(p, m);
            seen += 1;
        }
    }
    assert_eq!(seen, catalogue().iter().map(|p| p.mutants.len()).sum::<usize>(), "every catalogue mutant");
}

/// The split-phase ppermute alone (the tests above cover it among the others): a program
/// of three `pallas_call`s linked by the semaphores they pass compiles to the DSL's
/// launches, and each of its mutants is caught like the DSL's.
#[test]
fn the_split_phase_ppermute_files_compile_to_the_dsl_program_of_launches() {
    let p = catalogue().iter().find(|p| p.name == "split_ppermute").expect("in the catalogue");
    for n in [2, 3] {
        seed_file_matches_the_dsl(p, n);
    }
    for m in p.mutants {
        mutant_file_matches_the_dsl(p, m);
    }
}

#[test]
fn a_kernel_file_is_checked_from_the_command_line_with_its_source_lines() {
    let file = repo().join("protocols/pallas/psum--no-capacity.py");
    let out = semcheck_cmd().arg("check").arg(&file).args(["--devices", "2", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = crate::common::document(&String::from_utf8_lossy(&out.stdout));
    let v = crate::common::only_case(&doc);
    assert_eq!(v["verdict"], "violation");
    assert_eq!(v["violation"]["rule"], "race");
    assert_eq!(v["kernel"], "psum_kernel");
    assert_eq!(v["kernel_defined_at"]["line"], 54);
    // The interpreter that read the kernel, and its JAX, are part of the result.
    assert!(v["frontend"]["jax"].as_str().is_some_and(|j| j.starts_with("0.")), "{v}");
    let events = v["violation"]["events"].as_array().unwrap();
    let start = events
        .iter()
        .find(|e| e["text"].as_str().unwrap().contains("@ psum--no-capacity.py:86 first.start()"))
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(start["line"], 86, "{start}");
    assert!(start["file"].as_str().unwrap().ends_with("psum--no-capacity.py"), "{start}");
    let at = &v["violation"]["location"];
    assert!(at["file"].as_str().unwrap().ends_with("psum--no-capacity.py") && at["line"].is_u64(), "{v}");

    let out = semcheck_cmd()
        .arg("check")
        .arg(repo().join("protocols/pallas/psum.py"))
        .args(["--devices", "2-3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `check --json` says where a case's time went: the export (a kernel file's, per size),
/// the compile and the exploration apart, every one a number of seconds, never negative.
#[test]
fn check_json_reports_the_export_compile_and_exploration_seconds_apart() {
    let file = repo().join("protocols/pallas/psum.py");
    let out = semcheck_cmd().arg("check").arg(&file).args(["--devices", "2-3", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = crate::common::document(&String::from_utf8_lossy(&out.stdout));
    let cases = doc["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2, "{doc}");
    for c in cases {
        for key in ["seconds", "export_seconds", "compile_seconds"] {
            let s = c[key].as_f64().unwrap_or_else(|| panic!("no {key}: {c}"));
            assert!(s >= 0.0 && s.is_finite(), "{key} = {s}: {c}");
        }
        // A proved case was re-checked for the assumptions it relies on.
        assert!(c["recheck_seconds"].as_f64().is_some_and(|s| s >= 0.0), "{c}");
        // The export ran Python and JAX: it is the bulk of a kernel file's time, and its
        // peak memory is measured (JAX alone is far over a MiB).
        assert!(c["export_seconds"].as_f64().unwrap() > c["seconds"].as_f64().unwrap(), "{c}");
        assert!(c["export_peak_rss_bytes"].as_u64().is_some_and(|b| b > 1 << 20), "{c}");
    }
    // A catalogue protocol has no export.
    let (code, stdout, stderr) = crate::common::semcheck(&["check", "psum", "--devices", "3", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let doc = crate::common::document(&stdout);
    let c = crate::common::only_case(&doc);
    assert!(c["export_seconds"].is_null() && c["export_peak_rss_bytes"].is_null(), "{c}");
    assert!(c["compile_seconds"].as_f64().is_some_and(|s| s >= 0.0), "{c}");
    assert!(c["seconds"].as_f64().is_some_and(|s| s >= 0.0), "{c}");
}

/// `bench --files` prints one row per kernel and size: where its check's time went.
#[test]
fn bench_files_times_a_kernel_file_per_size() {
    let file = repo().join("protocols/pallas/psum.py");
    let out = semcheck_cmd()
        .arg("bench")
        .arg("--files")
        .arg(&file)
        .args(["--file-devices", "2,3", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = crate::common::document(&String::from_utf8_lossy(&out.stdout));
    let rows = doc["rows"].as_array().unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(rows.iter().map(|r| r["devices"].as_u64().unwrap()).collect::<Vec<_>>(), [2, 3], "{doc}");
    for r in rows {
        assert_eq!(r["kernel"], "psum_kernel", "{r}");
        assert_eq!(r["verdict"], "proved", "{r}");
        for key in ["export_seconds", "compile_seconds", "explore_seconds", "wall_seconds"] {
            assert!(r[key].as_f64().is_some_and(|s| s >= 0.0), "{key}: {r}");
        }
        assert!(r["states"].as_u64().is_some_and(|s| s > 0), "{r}");
    }
    let out = semcheck_cmd().arg("bench").arg("--files").arg(&file).args(["--file-devices", "2"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("export s") && text.contains("explore") && text.contains("psum_kernel"), "{text}");
}

#[test]
fn values_kept_across_statements_and_data_loop_carries_are_read_where_they_are() {
    let dir = repo().join("python/tests/kernels");
    // Loaded from the input before a copy, stored after it: proved, and the output is the
    // loaded value (2 x0) plus what the copy brought.
    let out = semcheck_cmd().arg("check").arg(dir.join("kept_value.py")).args(["--devices", "2-3"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(text.matches(": PROVED").count(), 2, "{text}");
    // The lock-step run of a kernel at N = 2, as text.
    let lockstep = |file: &str| {
        let out = semcheck_cmd()
            .args(["simulate", "--lockstep", "--devices", "2", "--format", "text"])
            .arg(dir.join(file))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // A loop carrying an accumulator array: proved, the output 4 x_me + x_left.
    let text = lockstep("carry.py");
    assert!(text.contains("x0+x0+x0+x0+x1") && text.contains("x0+x1+x1+x1+x1"), "{text}");
    let out = semcheck_cmd().arg("check").arg(dir.join("carry.py")).args(["--devices", "2-3"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    // The old value of a swap, used after a copy: x, then buf = x + 2 x.
    let text = lockstep("swap.py");
    assert!(text.contains("d0      2*x1   x0+2*x0  x0"), "{text}");
    // Loaded from a buffer a neighbour's copy lands in: the load itself races, at its line.
    let out =
        semcheck_cmd().arg("check").arg(dir.join("kept_value_race.py")).args(["--devices", "2"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("VIOLATION (race)") && text.contains("buf@9 = buf @ kept_value_race.py:9 v = buf[...]"),
        "{text}"
    );
}

#[test]
fn scalar_prefetch_values_and_smem_scalar_state_are_read_like_axis_index() {
    let dir = repo().join("python/tests/kernels");
    let run = |file: &str, args: &[&str], env: Option<(&str, &str)>| {
        let mut cmd = semcheck_cmd();
        cmd.arg("check").arg(dir.join(file)).args(args);
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // `file` proved at `sizes`; with `env` set, at `devices`, a violation saying each of `needles`.
    let proved_then_broken = |file: &str, sizes: &str, env: (&str, &str), devices: &str, needles: &[&str]| {
        let (code, out, err) = run(file, &["--devices", sizes], None);
        assert_eq!(code, Some(0), "{out}{err}");
        // With every event of the schedule, not only the explanation.
        let (code, out, err) = run(file, &["--devices", devices, "--schedule"], Some(env));
        assert_eq!(code, Some(1), "{out}{err}");
        for needle in needles {
            assert!(out.contains(needle), "{needle}: {out}");
        }
    };
    // A per-device table the jitted function computes: where each block goes, how many
    // arrive. The ring is proved, and the check says which values it covers.
    let (code, out, err) = run("prefetch_perm.py", &["--devices", "2-3"], None);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        err.contains("(`table_ref` = d0: [1, 1], d1: [2, 1], d2: [0, 1]); the verdict covers these values only"),
        "{err}"
    );
    // Two devices sending into device 1: a race, found from the table's values.
    let (code, out, err) = run("prefetch_perm.py", &["--devices", "3"], Some(("PERM", "bad")));
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("VIOLATION (race)") && out.contains("d2 start remote_copy x_ref -> d1 o_ref"), "{out}");
    let (code, out, _) = run("prefetch_perm.py", &["--devices", "2", "--json"], None);
    assert_eq!(code, Some(0));
    let doc = crate::common::document(&out);
    let v = crate::common::only_case(&doc);
    assert_eq!(v["prefetch"]["operands"][0]["values"][1]["values"], serde_json::json!([0, 1]), "{out}");
    // Every size is read with its own values, and the report says the verdicts rest on them.
    let (code, out, err) = run("prefetch_perm.py", &["--sizes", "2..3"], None);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("at each N, the values the script passes to its scalar-prefetch and SMEM operands"), "{out}");
    // A branch the table's values never take is named as never executed.
    let (code, out, err) = run("prefetch_count.py", &["--devices", "2"], None);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("never executed: prefetch_count.py:23 @pl.when(count_ref[1] != 0)"), "{out}");
    // A slot index kept in SMEM scratch across grid steps: proved; without its flip two
    // steps share a slot and race.
    let (code, out, err) = run("smem_slot.py", &["--devices", "2-3"], None);
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = run("smem_slot.py", &["--devices", "2"], Some(("FLIP", "0")));
    assert_eq!(code, Some(1), "{out}{err}");
    // Rotated so that d0 breaks it (docs/counterexamples.md#minimising): into d1's slot.
    assert!(out.contains("race on d1 buf[0]: `d0 (1) start remote_copy"), "{out}");
    // Copies of a size the table gives (device 0 sends nothing): proved; waiting with
    // the wrong descriptor's size leaves bytes behind.
    proved_then_broken(
        "dynamic_size.py",
        "2-4",
        ("WAIT", "own"),
        "3",
        &["VIOLATION (semaphore-leak)", "d2 recv is 2048 at exit, not 0"],
    );
    // A copy past the end of its source on one device: refused, in elements.
    let (code, out, err) = run("out_of_range.py", &["--devices", "2"], None);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        err.contains("out_of_range.py:14 d.start()")
            && err.contains("on d1 at grid (): elements 4..12 out of range for the dimension of 8 elements of `x_ref`"),
        "{err}"
    );
    // Indices are checked per dimension (semaphore arrays and buffers): in range at N = 2,
    // out of range on d1 from N = 3, where a row-major flattening would name a neighbour.
    let (code, out, err) = run("index_dims.py", &["--devices", "2"], None);
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = run("index_dims.py", &["--devices", "3"], None);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        err.contains("index_dims.py:23 d.start() on d1 at grid (): semaphore array `sems`: index 2 out of range for dimension 1 (size 2)"),
        "{err}"
    );
    // In the JSON, the size that could not be checked names its kernel, as the message does.
    let (code, out, err) = run("index_dims.py", &["--devices", "2-3", "--json"], None);
    assert_eq!(code, Some(2), "{out}{err}");
    let case = &crate::common::document(&out)["cases"][1];
    assert_eq!((case["verdict"].as_str(), case["kernel"].as_str()), (Some("error"), Some("kernel")), "{case}");
    let (code, out, err) = run("index_dims.py", &["--devices", "3"], Some(("INDEX", "buffer")));
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("on d1 at grid (): index 2 out of range for dimension 0 of `bufs` (size 2)"), "{err}");
    // tpu-inference's GMM2 scatter race in miniature: a zero-fill of the output started
    // after the entry barrier races with a peer's copy into it; waited before, proved.
    proved_then_broken(
        "zero_after_barrier.py",
        "2-3",
        ("ORDER", "after"),
        "2",
        &["race on d1 o_ref", "local_copy zeros_ref -> o_ref"],
    );
    // Row flags as an index array (`jnp.arange(4) < n`), one copy per row sized by its
    // flag and one wait sized by their sum: proved; waiting for a row fewer, bytes left.
    proved_then_broken("index_vectors.py", "2-3", ("WAIT", "short"), "2", &["VIOLATION (semaphore-leak)"]);
    // A while loop walking a scalar-prefetched table to its sentinel (the condition loads
    // the table at the loop's index): proved; two entries naming one row, a race on it.
    proved_then_broken("prefetch_sentinel.py", "2-3", ("ROWS", "clash"), "2", &["race on d1 o_ref[2]"]);
    // A TensorCore kernel's rendezvous signalled by `core_index=`: proved as the seed's;
    // signalling its own core instead, the other core's copy lands before it entered.
    proved_then_broken(
        "tc_core_index.py",
        "2",
        ("CORE", "own"),
        "2",
        &["VIOLATION (outside-kernel)", "lands in d1, which has not entered"],
    );
    // Blocks Pallas pipelines around a grid: proved, the pipeline's copies at the BlockSpec's
    // line; without the buffer's hand-back the next step's copy races with its read.
    proved_then_broken(
        "grid_blocks.py",
        "2-3",
        ("HANDSHAKE", "none"),
        "2",
        &[
            "race on d1 buf",
            "x_ref = x_ref@hbm[0] @ grid_blocks.py:49 BlockSpec pipeline: the block of `x_ref` copied in",
        ],
    );
    // Reshaped and strided views (a paged buffer merged into rows, every other row read):
    // proved; read before the copy lands, a race on exactly the rows read; a reshape
    // merging what is not contiguous, refused.
    proved_then_broken(
        "reshaped_pages.py",
        "2-3",
        ("READ", "early"),
        "3",
        &["race on d0 pages[1,1]", "o_ref[0 1] = pages[1,1 2,1]", "x_ref[1 2 3 4] -> d0 pages[1,0 1,1 2,0 2,1]"],
    );
    let (code, out, err) = run("reshaped_pages.py", &["--devices", "2"], Some(("MERGE", "gap")));
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("reshaped_pages.py:26") && err.contains("that are not contiguous"), "{err}");
    // A strided copy (every other row): proved; a second copy overlapping it, a race on
    // a row both write.
    proved_then_broken(
        "strided_rows.py",
        "2-3",
        ("ROWS", "overlap"),
        "2",
        &["race on d1 o_ref[2]", "x_ref[0 2 4 6] -> d1 o_ref[0 2 4 6]"],
    );
    // A load a reduction reads is read as the cells around it: inside the half a copy is
    // still writing, a race; in the other half, none.
    proved_then_broken("covering_load.py", "2", ("READ", "inside"), "2", &["race on d0 buf[0]", "reduce_sum(buf[0])"]);
    // An index window copied into SMEM from an input the script passes, double-buffered:
    // proved; the next window fetched into the slot still being read, a race on it.
    proved_then_broken(
        "smem_window.py",
        "2-3",
        ("NEXT", "same"),
        "2",
        &["race on d0 win[0,0]", "win@loads = win[0,0]", "route_hbm[2 3] -> win[0,0 0,1]"],
    );
    // A pl.kernel over a one-core TensorCore mesh inside a shard_map, one kernel per
    // device: its SMEM operand (how many rows to send) read with the script's values, the
    // index window fetched by a copy of that computed length, every row copy started and
    // a dead one empty (its stale index goes nowhere): proved; the window read before its
    // fetch is waited for, a race; a dead row's stale index used, an error naming it.
    proved_then_broken(
        "core_mesh_rows.py",
        "2-3",
        ("NEXT", "early"),
        "2",
        &["race on d0 win[0]", "win@loads = win[0]", "local_copy route_hbm[0 1] -> win[0 1]"],
    );
    // The dead rows load cells the next fetch is still writing: values that go nowhere.
    let (code, out, err) = run("core_mesh_rows.py", &["--devices", "2-3"], Some(("NEXT", "ahead")));
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = run("core_mesh_rows.py", &["--devices", "2"], Some(("DEAD", "used")));
    assert_eq!(code, Some(2), "{out}{err}");
    let source = std::fs::read_to_string(dir.join("core_mesh_rows.py")).unwrap();
    let start = source.lines().position(|l| l.trim() == "c.start()").unwrap() + 1;
    assert!(
        err.contains(&format!("core_mesh_rows.py:{start}: evaluation: uses a value loaded from element 2 of `win`")),
        "{err}"
    );
    // Two cores a chip: they share its HBM, which is modelled only for one chip's mesh.
    let (code, out, err) = run("core_mesh_rows.py", &["--devices", "2"], Some(("CORES", "2")));
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("TensorCore mesh inside shard_map: a pl.kernel over 2 TensorCores of each chip"), "{err}");
    // A trip count and row flags copied into SMEM and read by a while loop's condition
    // (the flags at the loop's own index): proved; waited for only after the loop, the
    // condition's first read races with the copy.
    proved_then_broken(
        "smem_window_count.py",
        "2-3",
        ("WAIT", "late"),
        "2",
        &["race on d0 table[0]", "table@loads = table[0]", "local_copy table_hbm[0 1 2 3 4] -> table[0 1 2 3 4]"],
    );
    // A routing the kernel computes (an argmax of float scores) and copies into SMEM:
    // run-time data, unless read with the values of the script's run in JAX's TPU
    // interpret mode; then proved, and the copy waited for only after the sends, a race.
    let (code, out, err) = run("computed_routing.py", &["--devices", "2"], None);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("run-time data"), "{err}");
    let (code, out, err) = run("computed_routing.py", &["--devices", "2-3", "--interpret-values"], None);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains("`route_vmem@computed_routing.py:27` are read with the values they carried"), "{err}");
    let (code, out, err) =
        run("computed_routing.py", &["--devices", "2", "--interpret-values", "--schedule"], Some(("WAIT", "late")));
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("race on d0 route_smem[0]") && out.contains("route_smem@loads = route_smem[0]"), "{out}");
    // bfloat16 rows read and written through uint32 views (two rows' halves a word):
    // proved; read before the fetch is waited for, a race on the fetched buffer.
    proved_then_broken("bitcast_views.py", "2-3", ("WAIT", "late"), "2", &["race on d0 buf[0]", "bitcast_views.py:31"]);
    // A while loop whose condition reads SMEM the body counts down runs three times.
    let out = semcheck_cmd()
        .args(["simulate", "--lockstep", "--devices", "2", "--format", "text"])
        .arg(dir.join("smem_while.py"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("c.start() [3 of 3]") && !text.contains("[4 of"), "{text}");
}

#[test]
fn semcheck_tpu_names_the_chip_a_kernel_asking_for_the_tpu_s_sizes_is_traced_for() {
    let dir = repo().join("python/tests/kernels");
    let run = |file: &str, chip: Option<&str>| {
        let mut cmd = semcheck_cmd();
        cmd.arg("check").arg(dir.join(file)).args(["--devices", "2"]).env_remove("SEMCHECK_TPU");
        if let Some(chip) = chip {
            cmd.env("SEMCHECK_TPU", chip);
        }
        let out = cmd.output().unwrap();
        (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    };
    // emit_pipeline asks JAX for the TPU's sizes: on a CPU the script fails, and says how
    // to go on.
    let (code, text) = run("pipeline.py", None);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("Unsupported TPU device kind: cpu") && text.contains("SEMCHECK_TPU=v6e"), "{text}");
    let (code, text) = run("pipeline.py", Some("v6e"));
    assert_eq!(code, Some(0), "{text}");
    // The pipeline's copies are named at the user's emit_pipeline line.
    let (code, text) = run("pipeline_race.py", Some("v6e"));
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("VIOLATION (race)") && text.contains("local_copy"), "{text}");
    assert!(text.contains("@ pipeline_race.py:14 pltpu.emit_pipeline("), "{text}");
    // A trace file records the chip, and its replay traces the file for it again.
    let trace_dir = crate::common::temp_dir("tpu-trace");
    let trace = trace_dir.join("pipeline_race.trace");
    let out = semcheck_cmd()
        .args(["trace", "--devices", "2", "--format", "trace"])
        .arg(dir.join("pipeline_race.py"))
        .env("SEMCHECK_TPU", "v6e")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("\nkernel-tpu v6e\n"));
    std::fs::write(&trace, &out.stdout).unwrap();
    // The trace is not next to its kernel file: replay runs it when named (docs/safety.md).
    let out = semcheck_cmd()
        .arg("replay")
        .arg(&trace)
        .arg("--kernel")
        .arg(dir.join("pipeline_race.py"))
        .env_remove("SEMCHECK_TPU")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("rule `race` reproduced"));
    let (code, text) = run("pipeline.py", Some("v9"));
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("SEMCHECK_TPU=v9: not a TPU chip JAX knows; one of: v2, v3"), "{text}");
}

#[test]
fn unsupported_and_refused_kernels_exit_2_naming_the_construct_and_line() {
    let dir = repo().join("python/tests/kernels/unsupported");
    for (file, needle) in [
        // Refused where its value steers the kernel (a wait's amount), naming the read's line.
        ("semaphore_read.py", "semaphore_read.py:11: semaphore_read: the value of `sem` that pl.semaphore_read gives at semaphore_read.py:10 steers"),
        ("pipelined_remote.py", "pipelined_remote.py:13: remote copy into a pipelined block"),
        ("dma_add.py", "dma_add.py:8: dma_start(add=True)"),
        // Scratch never written is loaded (a branchless copy's dead row may): using the
        // value is the error, where it is used.
        (
            "smem_unwritten.py",
            "smem_unwritten.py:9 d.start() on d0 at grid (): uses a value loaded from element 0 of `idx_ref` before anything",
        ),
        ("barrier_no_cid.py", "collective_id has to be specified when using a custom barrier"),
        (
            "hbm_load.py",
            "JAX refuses to build it: hbm_load.py:13: Loads are only allowed on VMEM and SMEM references. (`x_ref`",
        ),
        ("scalar_stores.py", "JAX refuses to build it: scalar_stores.py:19: Cannot store scalars to VMEM"),
        ("script_error.py", "script_error.py:4: script error"),
        (
            "several.py",
            "4 unsupported constructs (2 run-time data, 1 dma_start(add=True), 1 semaphore_read):\n  1. several.py:14: run-time data: the trip count",
        ),
        ("several.py", "\n  2. several.py:17: dma_start(add=True)"),
        ("several.py", "\n  3. several.py:20: run-time data"),
        ("several.py", "\n  4. several.py:24: semaphore_read"),
    ] {
        let out = semcheck_cmd().arg("check").arg(dir.join(file)).args(["--devices", "2"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert!(err.contains(needle), "{file}: {err}");
    }
    // A file with a kernel semcheck reads and one it cannot: the first is still checked at
    // every size, the second reported; exit 2 (nothing broke, not everything was checked).
    let mixed = dir.join("mixed.py");
    let out = semcheck_cmd().arg("check").arg(&mixed).args(["--devices", "2-3"]).output().unwrap();
    let (text, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{text}{err}");
    assert!(text.contains("mixed.py:shift N=2: PROVED") && text.contains("mixed.py:shift N=3: PROVED"), "{text}");
    assert_eq!(err.matches("mixed.py:15: dma_start(add=True)").count(), 1, "{err}");
    assert!(err.contains("mixed.py:accumulate N=3: the same error as "), "{err}");
    let out = semcheck_cmd().arg("check").arg(&mixed).args(["--devices", "2", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v = crate::common::document(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(v["verdict"], "error", "{v}");
    let verdicts: Vec<&str> = v["cases"].as_array().unwrap().iter().map(|c| c["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts, ["proved", "error"], "{v}");
    assert!(v["cases"][1]["error"].as_str().unwrap().contains("dma_start(add=True)"), "{v}");
    // An unknown --kernel lists the file's kernels; one that could not be read is not
    // said not to communicate (whether it does is unknown).
    let file = dir.join("semaphore_read.py");
    let out = semcheck_cmd().arg("check").arg(&file).args(["--devices", "2", "--kernel", "nosuch"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("has no kernel `nosuch`") && err.contains("(unsupported)"), "{err}");
    assert!(!err.contains("does not communicate"), "{err}");
    for args in [&["check", "missing.py", "--devices", "2"][..], &["check", "x.py", "--devices", "0"]] {
        assert_eq!(semcheck_cmd().args(args).output().unwrap().status.code(), Some(2), "{args:?}");
    }
    let bad = std::env::temp_dir().join(format!("semcheck-bad-{}.json", std::process::id()));
    std::fs::write(&bad, "{\"format\": \"semcheck-kernel 1\", \"devices\": 2, \"kernels\": [{\"name\": 3}]}").unwrap();
    let out = semcheck_cmd().arg("check").arg(&bad).output().unwrap();
    let _ = std::fs::remove_file(&bad);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("malformed document"));
}

/// The environment's interpreter, made on first use like the checker makes it.
fn python() -> PathBuf {
    semcheck::frontend::env::python_env().unwrap_or_else(|e| panic!("{e}")).python
}

#[test]
fn the_python_package_test_suite_passes() {
    let dir = repo().join("python");
    // On up to four pytest-xdist workers: the suite is most of this binary's time, and
    // the rest of it mostly waits on child processes. Its tests' times differ a hundredfold:
    // an idle worker takes tests from a busy one (measured on two: 133 s, 152 s without).
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 4));
    let out = Command::new(python())
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            &workers.to_string(),
            "--dist",
            "worksteal",
            "tests",
        ])
        .current_dir(&dir)
        .env("SEMCHECK_BIN", env!("CARGO_BIN_EXE_semcheck"))
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "pytest failed:\n{text}");
    let summary = text.lines().rev().find(|l| l.contains(" passed")).unwrap_or("");
    eprintln!("pytest: {summary}");
    assert!(!summary.contains("failed"), "{text}");
}

#[test]
fn a_document_whose_statement_flags_are_not_booleans_is_refused() {
    // A document the front end wrote checks; with a statement's `implicit` (Pallas's own
    // copies of pipelined blocks) not a boolean, it is a malformed document, exit 2.
    let dir = crate::common::temp_dir("implicit-flag");
    let doc = dir.join("grid_blocks.json");
    let out = Command::new(python())
        .args(["-m", "semcheck.frontend", "export", "--devices", "2", "--no-lower", "--out"])
        .arg(&doc)
        .arg(repo().join("python/tests/kernels/grid_blocks.py"))
        .env("PYTHONPATH", repo().join("python"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(semcheck_cmd().arg("check").arg(&doc).output().unwrap().status.code(), Some(0));
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&doc).unwrap()).unwrap();
    assert_eq!(v["kernels"][0]["body"][0]["implicit"], true, "{v}");
    v["kernels"][0]["body"][0]["implicit"] = serde_json::json!("yes");
    std::fs::write(&doc, serde_json::to_vec(&v).unwrap()).unwrap();
    let out = semcheck_cmd().arg("check").arg(&doc).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("malformed document at body[0]: `implicit` must be a boolean")
    );
}

#[test]
fn expect_trace_simulate_and_replay_of_a_kernel_file() {
    let psum = repo().join("protocols/pallas/psum.py");
    let run = |args: &[&str]| semcheck_cmd().args(args).output().unwrap();
    let p = psum.to_str().unwrap();
    assert_eq!(run(&["check", p, "--devices", "3", "--expect", "psum"]).status.code(), Some(0));
    let wrong = run(&["check", p, "--devices", "2", "--expect", "ppermute"]);
    assert_eq!(wrong.status.code(), Some(1));
    let text = String::from_utf8_lossy(&wrong.stdout);
    assert!(text.contains("wrong-result") && text.contains("x0+x1") && text.contains("specification says x"), "{text}");
    assert_eq!(run(&["check", p, "--devices", "2", "--expect", "nosuch"]).status.code(), Some(2));

    let sim = run(&["simulate", p, "--lockstep", "--devices", "4"]);
    assert_eq!(sim.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&sim.stdout).contains("after (3)"));

    // A trace of a copy of a mutant file: every rendering names its lines; replay notices edits.
    let dir = crate::common::temp_dir("frontend");
    let file = dir.join("tc.py");
    std::fs::copy(repo().join("protocols/pallas/tc_exchange--no-barrier.py"), &file).unwrap();
    let f = file.to_str().unwrap();
    for format in ["text", "table", "mermaid", "dot", "json"] {
        let out = run(&["trace", f, "--devices", "2", "--format", format]);
        assert_eq!(out.status.code(), Some(1), "{format}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("tc.py:26"), "{format}");
    }
    let trace = run(&["trace", f, "--devices", "2", "--format", "trace"]);
    let trace_file = dir.join("tc.trace");
    std::fs::write(&trace_file, &trace.stdout).unwrap();
    assert!(String::from_utf8_lossy(&trace.stdout).contains("kernel-sha256 "));
    let t = trace_file.to_str().unwrap();
    assert_eq!(run(&["replay", t]).status.code(), Some(1));
    let source = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("# edited\n{source}")).unwrap();
    let replayed = run(&["replay", t]);
    let err = String::from_utf8_lossy(&replayed.stderr);
    assert!(err.contains("changed since this trace was written"), "{err}");
    assert_eq!(replayed.status.code(), Some(2), "the lines moved: {err}");
    // Run anyway, the lines moved: the schedule no longer reproduces as written (exit 4).
    let replayed = run(&["replay", t, "--allow-changed"]);
    let err = String::from_utf8_lossy(&replayed.stderr);
    assert_eq!(replayed.status.code(), Some(4), "{err}");
    assert!(err.contains("no longer reproduces: line "), "{err}");
}

#[test]
fn a_descriptor_built_only_to_wait_is_checked_for_its_semaphore_and_bytes() {
    let file = repo().join("python/tests/kernels/wait_descriptor.py");
    let run = |env: Option<(&str, &str)>| {
        let mut cmd = semcheck_cmd();
        cmd.arg("check").arg(&file).args(["--devices", "2-3"]);
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // The mirrored descriptor's source runs past its block from N = 3: a wait touches no
    // cell, so it is proved (it was refused as "slice out of range").
    let (code, out, err) = run(None);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(out.matches(": PROVED").count(), 2, "{out}");
    // Its start as run-time data: proved, with a note naming the line.
    let (code, out, err) = run(Some(("OFFSET", "data")));
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains("`run-time offset of a DMA wait's descriptor` at wait_descriptor.py:35"), "{err}");
    // Its size as run-time data: the byte count depends on it, refused by name.
    let (code, out, err) = run(Some(("SIZE", "data")));
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("wait_descriptor.py:35: run-time data: the size of a slice"), "{err}");
    // Its semaphore picked by run-time data: what the wait waits on, refused by name.
    let (code, out, err) = run(Some(("SEM", "data")));
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("wait_descriptor.py:35: run-time data: an index of the receive semaphore"), "{err}");
    // A wait for fewer bytes than the copy brings: still caught.
    let (code, out, err) = run(Some(("SIZE", "short")));
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("VIOLATION (semaphore-leak)") && out.contains("recvs[0] is 512 at exit"), "{out}");
}

#[test]
fn routing_from_an_input_is_read_with_the_values_the_script_passes_and_checked_over_many() {
    let file = repo().join("python/tests/kernels/moe_dispatch.py");
    let run = |devices: &str, env: &[(&str, &str)], json: bool| {
        let mut cmd = semcheck_cmd();
        cmd.arg("check").arg(&file).args(["--devices", devices]);
        if json {
            cmd.arg("--json");
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Top-k ids in VMEM decide each copy's device, slot and kind (local or remote) and the
    // count each device waits for: read with the script's routing, proved.
    let (code, out, err) = run("2-3", &[], false);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(out.matches(": PROVED").count(), 2, "{out}");
    assert!(err.contains("`route_ref` (in VMEM) = [0, 2, 1, 3, 2, 0, 3, 1] on every device"), "{err}");
    assert!(err.contains("the verdict covers these values only"), "{err}");
    // Counting tokens instead of (token, expert) pairs: right for that routing, wrong for one
    // where a token picks two experts of one device (a row's bytes never waited for).
    let (code, out, err) = run("2", &[("COUNT", "tokens")], false);
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = run("2", &[("COUNT", "tokens"), ("ROUTING", "clash")], false);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("VIOLATION (outside-kernel)") && out.contains("-> d0 o_ref"), "{out}");
    // The script's routing and the generated ones (all to one expert, local only, remote
    // only, empty experts, 3 random draws), in one command.
    let (code, out, err) = run("2", &[("ROUTING", "generated")], false);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("kernel kernel: checked for 8 routings")
            && out.contains("(the verdicts cover these only): 8 proved"),
        "{out}"
    );
    assert!(err.contains("(routing 8 of the 8 the script passes, `random-3`)"), "{err}");
    let (code, out, err) = run("2", &[("ROUTING", "generated"), ("COUNT", "tokens")], false);
    assert_eq!(code, Some(1), "{out}{err}");
    // Each routing under the name the script gave it (`semcheck.routings.routing`).
    assert!(
        out.contains(
            "4 proved, 4 violation (kernel#2 (all-to-one), kernel#4 (remote-only), kernel#6 (random-1), kernel#7 (random-2))"
        ),
        "{out}"
    );
    let (_, out, _) = run("2", &[("ROUTING", "generated"), ("COUNT", "tokens")], true);
    let doc = crate::common::document(&out);
    let sets = &doc["summary"]["value_sets"][0];
    assert_eq!(sets["routings"], 8, "{sets}");
    let violations = serde_json::json!([
        "kernel#2 (all-to-one)",
        "kernel#4 (remote-only)",
        "kernel#6 (random-1)",
        "kernel#7 (random-2)"
    ]);
    assert_eq!(sets["violation"], violations, "{sets}");
    // Every routing of one token per device and two of four experts (12 ordered choices
    // per token, 144 routings): with pairs counted, all proved; with tokens counted, the
    // 44 = 144 - 10 x 10 where some token picks both experts of the other device break it.
    let every = [("ROUTING", "every"), ("TOKENS", "1"), ("TOPK", "2")];
    let (code, out, err) = run("2", &every, false);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("checked for 144 routings") && out.contains("only): 144 proved"), "{out}");
    let (code, out, err) = run("2", &[every[0], every[1], every[2], ("COUNT", "tokens")], false);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("checked for 144 routings") && out.contains("only): 100 proved, 44 violation"), "{out}");
    // The table copied from HBM into VMEM scratch first: read with the copied values;
    // read before the copy is waited for, a race on the scratch.
    let (code, out, err) = run("2", &[("FETCH", "waited")], false);
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = run("2", &[("FETCH", "late")], false);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("race on d0 route_vmem") && out.contains("route_vmem@loads"), "{out}");
}
