//! `semcheck check --sizes`: the report of a range of ring sizes (exact exploration, then
//! the window method), other hardware assumptions, kernel files, bad input. The method
//! itself is tested against exact exploration in `tests/model/window.rs`.

use crate::common::{document, only_case, semcheck};

#[test]
fn sizes_report_guarded_shift_broken_from_5_and_fixed_by_the_double_barrier() {
    let (code, out, err) = semcheck(&[
        "check",
        "guarded_shift",
        "--mutant",
        "single-barrier",
        "--sizes",
        "2..20",
        "--exact-max-states",
        "2000",
        "--json",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    let doc = document(&out);
    assert_eq!(doc["verdict"], "violation");
    let v = only_case(&doc);
    assert_eq!(v["kind"], "sizes");
    assert_eq!(v["verdict"], "violation");
    for s in v["report"]["sizes"].as_array().unwrap() {
        let n = s["devices"].as_u64().unwrap();
        let want = if n < 5 { "proved" } else { "violation" };
        assert_eq!(s["verdict"], want, "N={n}: {s}");
    }
    // Beyond exact exploration's budget the window finds it and a focused search on the
    // real ring confirms it.
    let last = &v["report"]["sizes"][18];
    assert_eq!(last["method"], "window", "{last}");
    assert!(last["confirmed_by"]["active"].as_u64().is_some_and(|a| a < 20), "{last}");

    let (code, out, err) =
        semcheck(&["check", "guarded_shift", "--repeat", "2", "--sizes", "2..10", "--exact-max-states", "60"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("guarded_shift (repeat 2): PROVED for every ring size N = 2..10"), "{out}");
    assert!(out.contains("windows of radius 2 (5 devices)"), "{out}");
    assert!(out.contains("one run of the whole ring per N"), "{out}");
}

#[test]
fn the_first_violating_sizes_counterexample_is_shown_as_check_shows_one() {
    let sizes = ["check", "guarded_shift", "--mutant", "single-barrier", "--repeat", "2", "--sizes", "2..8"];
    let (code, text, err) = semcheck(&sizes);
    assert_eq!(code, 1, "{text}{err}");
    // Minimised, rotated to the lowest devices and explained, as `check --devices 5`
    // shows a counterexample (the range explores each size with its own options: the
    // schedule may be another one).
    let (_, shown) = text.split_once("counterexample at N = 5: outside-kernel: ").expect(&text);
    assert!(shown.starts_with("the DMA `d0 #0 start remote_copy x_ref -> d1 y_ref"), "{shown}");
    assert!(shown.contains("\n  why (") && shown.contains("--schedule shows every one"), "{shown}");
    assert!(shown.contains("after minimising"), "{shown}");
    assert!(shown.contains("[satisfied-by, the wrong one]"), "{shown}");
    // In the JSON, the case's `counterexample`: the size and a `violation` with the keys
    // `check --devices 5 --json` gives one.
    let (_, out, _) = semcheck(&[&sizes[..], &["--json"]].concat());
    let doc = document(&out);
    let c = &only_case(&doc)["counterexample"];
    assert_eq!((c["devices"].as_u64(), c["violation"]["rule"].as_str()), (Some(5), Some("outside-kernel")), "{c}");
    assert_eq!(c["violation"]["devices"], serde_json::json!([0, 1]), "{c}");
    let explained = c["violation"]["explanation"].as_array().unwrap().len();
    assert!((3..=12).contains(&explained), "{c}");
    let one = ["check", "guarded_shift", "--mutant", "single-barrier", "--repeat", "2", "--devices", "5", "--json"];
    let (_, out, _) = semcheck(&one);
    let doc = document(&out);
    let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&c["violation"]), keys(&only_case(&doc)["violation"]));
    // A range that is proved has none.
    let (code, out, _) = semcheck(&["check", "guarded_shift", "--sizes", "2..4", "--json"]);
    assert_eq!(code, 0);
    assert!(only_case(&document(&out))["counterexample"].is_null());
}

#[test]
fn sizes_bad_input_exits_2() {
    for args in [
        &["check", "psum", "--sizes", "5..2"][..],
        &["check", "psum", "--sizes", "1..4"],
        &["check", "psum", "--sizes", "2..8", "--devices", "3"],
        &["check", "tc_exchange", "--sizes", "2..4"],
        &["check", "all", "--sizes", "2..4"],
        &["check", "psum", "--sizes", "2..4", "--engine", "shuttle"],
        &["check", "psum", "--window-radius", "2"],
        &["check", "psum", "--sizes", "2..4", "--max-states", "100"],
    ] {
        let (code, out, err) = semcheck(args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(!err.is_empty(), "{args:?}: no message");
    }
}

#[test]
fn a_time_budget_bounds_the_whole_range_and_says_which_sizes_it_decided() {
    let (code, out, err) = semcheck(&["check", "psum", "--sizes", "2..256", "--max-seconds", "1"]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("INCOMPLETE") && out.contains("stopped by the time budget of 1 s"), "{out}");
    assert!(out.contains("decided before it: N = 2..") && out.contains("nothing more is claimed"), "{out}");
}

/// `--dma-order pair-fifo` allows no execution the defaults do not: the window method runs
/// under the defaults and its proofs carry over (Theorem S); a violation under the defaults
/// that pair-fifo rules out leaves the size undecided.
#[test]
fn sizes_under_pair_fifo_carry_the_default_proof_over() {
    let (code, out, err) =
        semcheck(&["check", "psum", "--sizes", "2..8", "--dma-order", "pair-fifo", "--exact-max-states", "200"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("N = 2..3       proved: exact exploration"), "{out}");
    assert!(out.contains("allows only executions the default assumptions allow"), "{out}");
    let (code, out, err) = semcheck(&[
        "check",
        "all_gather",
        "--mutant",
        "shared-recv-sem",
        "--sizes",
        "6",
        "--dma-order",
        "pair-fifo",
        "--exact-max-states",
        "0",
    ]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("whose schedule is not one under dma-order=pair-fifo"), "{out}");
}

/// `--dma-landing cells` with a copy of several cells is outside the window method: exact
/// exploration only, and beyond its budget the size is not proved, with the reason.
#[test]
fn sizes_under_cell_landings_of_several_cells_are_exact_only() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/protocols/pallas/half_wait.py");
    let (code, out, err) =
        semcheck(&["check", file, "--sizes", "5", "--dma-landing", "cells", "--exact-max-states", "0"]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("NOT PROVED: the window method does not apply"), "{out}");
    assert!(out.contains("lands in parts"), "{out}");
}

#[test]
fn sizes_of_a_kernel_file() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/protocols/pallas/psum_scatter--no-final-drain.py");
    let (code, out, err) = semcheck(&["check", file, "--sizes", "7", "--exact-max-states", "0", "--json"]);
    assert_eq!(code, 1, "{out}{err}");
    let doc = document(&out);
    let size = &only_case(&doc)["report"]["sizes"][0];
    assert_eq!(size["method"], "window", "{size}");
    assert!(size["confirmed_by"]["active"].as_u64().is_some(), "{size}");
}

/// The rule and the length of the window method's counterexample for psum's `mutant` at
/// N = 64 (exact exploration skipped).
fn window_counterexample_at_64(mutant: &str) -> (String, usize) {
    let args = ["check", "psum", "--mutant", mutant, "--sizes", "64..64", "--exact-max-states", "0", "--json"];
    let (code, out, err) = semcheck(&args);
    assert_eq!(code, 1, "{out}{err}");
    let doc = document(&out);
    let size = &only_case(&doc)["report"]["sizes"][0];
    assert_eq!(size["method"], "window", "{size}");
    let rule = size["counterexample"]["violation"]["rule"].as_str().unwrap().to_string();
    (rule, size["counterexample"]["schedule"].as_array().unwrap().len())
}

#[test]
fn a_window_counterexample_is_short_when_the_unreduced_window_has_a_short_one() {
    // The reduced window graph of psum/no-barrier meets the violation only after some ten
    // thousand events; the unreduced one, breadth-first, after a handful.
    let (rule, events) = window_counterexample_at_64("no-barrier");
    assert_eq!(rule, "outside-kernel");
    assert!(events <= 10, "a {events}-event counterexample");
}

#[test]
fn a_followed_window_counterexample_moves_the_devices_near_the_window() {
    // psum/no-capacity's window is too large for the unreduced short search; the window's
    // execution is followed on the ring, and the devices near the window move first (in id
    // order, the whole ring moved: 15,695 events at N = 64).
    let (rule, events) = window_counterexample_at_64("no-capacity");
    assert_eq!(rule, "race");
    assert!(events <= 200, "a {events}-event counterexample");
}
