//! `semcheck mutate`: the kill matrix of a kernel's single-edit mutants, and the
//! synchronisation whose deletion stays proved.

use crate::common::{document, semcheck};

use semcheck::checker::Config;
use semcheck::model::dsl::trace;
use semcheck::model::ir::MemorySpace;
use semcheck::model::mutate::{mutations, Operator};
use semcheck::model::{compile, Mesh, Notation, Spec};
use semcheck::mutate::{check_mutants, kill_matrix, Fate};
use serde_json::Value;

/// The exit code and the report (the one kernel's, for a kill matrix).
fn json(args: &[&str]) -> (i32, Value) {
    let (code, out, err) = semcheck(args);
    assert!(!out.is_empty(), "{err}");
    let doc = document(&out);
    let v = match doc["cases"].as_array() {
        Some(cases) if cases.len() == 1 => cases[0].clone(),
        _ => doc,
    };
    (code, v)
}

fn mutants(v: &Value) -> &Vec<Value> {
    v["mutants"].as_array().unwrap()
}

#[test]
fn psum_kill_matrix_kills_the_capacity_handshake() {
    let (code, v) = json(&["mutate", "psum", "--devices", "3", "--json"]);
    assert_eq!(code, 0, "the kernel itself is proved");
    assert_eq!((v["protocol"].as_str(), v["devices"].as_u64()), (Some("psum"), Some(3)));
    assert_eq!(v["baseline"]["verdict"], "proved");
    let all = mutants(&v);
    assert!(all.len() >= 30, "{} mutants", all.len());
    for m in all {
        let verdict = m["verdict"].as_str().unwrap();
        assert!(m["edit"].as_str().is_some_and(|e| !e.is_empty()), "{m}");
        assert!(m["location"].as_str().is_some_and(|l| l.contains(".rs:")), "{m}");
        match verdict {
            "killed" => assert!(m["rule"].is_string() && m["length"].as_u64() > Some(0), "{m}"),
            "rejected" => assert!(m["reason"].as_str().is_some_and(|r| r.contains("out of range")), "{m}"),
            "survived" => assert!(m["states"].as_u64() > Some(0), "{m}"),
            other => panic!("{other}: {m}"),
        }
    }
    // Every operator applies somewhere in psum.
    let operators: std::collections::BTreeSet<&str> = all.iter().map(|m| m["operator"].as_str().unwrap()).collect();
    assert_eq!(operators.len(), Operator::ALL.len(), "{operators:?}");
    let deleted = |what: &str| -> Vec<&Value> {
        all.iter().filter(|m| m["operator"] == "delete" && m["statement"].as_str().unwrap().contains(what)).collect()
    };
    for what in ["pl.semaphore_wait(capacity_sem, 1)", "pl.semaphore_signal(capacity_sem, 1"] {
        let found = deleted(what);
        assert_eq!(found.len(), 1, "{what}");
        assert_eq!(found[0]["verdict"], "killed", "{}", found[0]);
    }
}

#[test]
fn psum_scatter_capacity_handshakes_are_removable_and_psums_are_not() {
    let (code, v) = json(&["mutate", "psum_scatter", "--sync-only", "--devices", "2-3", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(v["devices"], serde_json::json!([2, 3]));
    let edits = |list: &str| -> Vec<String> {
        v[list].as_array().unwrap().iter().map(|d| d["edit"].as_str().unwrap().to_string()).collect()
    };
    let removable = edits("removable");
    for sem in ["left_capacity_sem", "right_capacity_sem"] {
        let edit = format!("delete every signal and wait on {sem}");
        assert!(removable.contains(&edit), "{edit} not in {removable:#?}");
        // A signal without its wait (or the reverse) is not removable on its own.
        assert!(!removable.iter().any(|e| e.contains(sem) && e.starts_with("delete pl.")), "{removable:#?}");
    }
    for d in v["removable"].as_array().unwrap() {
        let evidence = d["evidence"].as_array().unwrap();
        assert_eq!(evidence.len(), 2, "{d}");
        assert!(evidence.iter().all(|e| e["verdict"] == "proved" && e["states"].as_u64() > Some(0)), "{d}");
    }
    // In psum, the capacity handshake is what stops a device one step ahead.
    let (_, v) = json(&["mutate", "psum", "--sync-only", "--devices", "2-3", "--json"]);
    let needed: Vec<&str> = v["needed"].as_array().unwrap().iter().map(|d| d["edit"].as_str().unwrap()).collect();
    assert!(needed.contains(&"delete every signal and wait on capacity_sem"), "{needed:#?}");
}

#[test]
fn text_matrix_and_a_budget_that_stops_mutants_short() {
    let (code, out, _) = semcheck(&["mutate", "ppermute", "--devices", "2"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("kill matrix of ppermute N=2: "), "{out}");
    assert!(out.contains("delete => "), "{out}");
    // A state budget below the kernel's own size: nothing can survive (be proved) that
    // needs more states than the budget; the kernel itself is incomplete (exit 3).
    let (code, v) = json(&["mutate", "psum", "--devices", "3", "--max-states", "50", "--json"]);
    assert_eq!(code, 3);
    assert_eq!(v["baseline"]["verdict"], "incomplete");
    let all = mutants(&v);
    assert!(all.iter().any(|m| m["verdict"] == "incomplete"));
    for m in all.iter().filter(|m| m["verdict"] == "survived") {
        assert!(m["states"].as_u64() <= Some(50), "{m}");
    }
    let (code, _, err) = semcheck(&["mutate", "psum", "--devices", "3", "--threads", "0"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn mutants_of_a_dsl_kernel_report_its_own_source_lines() {
    let n = 3;
    let kernel = trace("right_shift", |k| {
        let x = k.input("x", MemorySpace::Hbm, &[]);
        let y = k.output("y", MemorySpace::Hbm, &[]);
        let (send, recv) = (k.dma_semaphore("send"), k.dma_semaphore("recv"));
        let dma = k.make_async_remote_copy(&x, &y, &send, &recv, (k.axis_index("x") + 1) % n);
        dma.start();
        dma.wait_send();
        dma.wait_recv();
    })
    .unwrap();
    let spec = Spec { notation: Notation::Plain, outputs: vec![] };
    let base = compile(&kernel, &Mesh::ring(n).unwrap(), &spec, 1).unwrap();
    let deletions = mutations(&kernel, &[Operator::Delete]);
    let results = check_mutants(&base, &deletions, &Config::default(), 2);
    assert_eq!(results.len(), 3);
    for r in &results {
        let loc = r.location.as_ref().unwrap();
        assert!(loc.file.ends_with("mutate.rs"), "{loc}");
        // Without the start the waits never return; without a wait a DMA is outstanding
        // at exit or lands after its target left.
        assert!(matches!(r.fate, Fate::Killed { .. }), "{}: {:?}", r.edit, r.fate);
    }
}

#[test]
fn the_kill_matrix_made_a_statement_at_a_time_is_every_mutant_in_order() {
    // `kill_matrix` never holds every mutant at once; its rows are those of checking
    // every mutant `mutations` makes, in the same order.
    let base = semcheck::catalogue_program("psum_scatter", None, 3, 1).unwrap();
    let all = mutations(&base.ir, &Operator::ALL);
    let one_by_one = check_mutants(&base, &all, &Config::default(), 2);
    let matrix = kill_matrix(&base, &Operator::ALL, &Config::default(), 2);
    let rows = |rs: &[semcheck::mutate::MutantResult]| -> Vec<String> {
        rs.iter().map(|r| format!("{} {:?} {:?}", r.edit, r.fate, r.stats.states)).collect()
    };
    assert!(all.len() > 100);
    assert_eq!(rows(&matrix), rows(&one_by_one));
}

#[test]
fn statements_of_one_source_line_are_listed_apart() {
    // `init_right.wait()` is a send half and a receive half; the capacity signals go
    // through one helper line. Each listed deletion has a heading of its own.
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/protocols/pallas/psum_scatter.py");
    let (code, out, err) = semcheck(&["mutate", file, "--sync-only", "--devices", "2"]);
    assert_eq!(code, 0, "{err}");
    let heads: Vec<&str> = out.lines().filter(|l| l.starts_with("  ") && !l.starts_with("   ")).collect();
    let distinct: std::collections::BTreeSet<&&str> = heads.iter().collect();
    assert!(heads.len() > 20, "{out}");
    assert_eq!(distinct.len(), heads.len(), "{out}");
    let waits: Vec<&&str> = heads.iter().filter(|h| h.contains("init_right.wait()")).collect();
    assert_eq!(waits.len(), 2, "{out}");
    assert!(waits[0].ends_with(".wait_send()]") && waits[1].ends_with(".wait_recv()]"), "{waits:?}");
}

#[test]
fn deletions_of_a_kernel_whose_trace_grows_with_n_are_paired_across_sizes() {
    // The all-pairs barrier loops are unrolled once per device: statement numbers differ
    // between N = 2 and 3, and the deletions are paired by their source lines instead.
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/python/tests/kernels/pairs_barrier.py");
    let (code, v) = json(&["mutate", file, "--sync-only", "--devices", "2-3", "--json"]);
    assert_eq!(code, 0, "{v}");
    let removable = v["removable"].as_array().unwrap();
    let scope = removable
        .iter()
        .find(|d| d["statement"].as_str().unwrap().contains("pl.run_scoped(all_pairs"))
        .unwrap_or_else(|| panic!("the second barrier is not removable: {v:#}"));
    let sizes: Vec<u64> =
        scope["evidence"].as_array().unwrap().iter().map(|e| e["devices"].as_u64().unwrap()).collect();
    assert_eq!(sizes, [2, 3], "{scope}");
    // A barrier's third signal exists at N = 3 only: needed there, paired with nothing.
    let only_at_3 = |d: &&Value| d["evidence"].as_array().unwrap().len() == 1 && d["evidence"][0]["devices"] == 3;
    let needed = v["needed"].as_array().unwrap();
    assert_eq!(needed.iter().filter(only_at_3).count(), 2, "{v:#}");
}
