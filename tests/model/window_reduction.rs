//! The window's stubborn sets (`semcheck_model::window`, `reduction.rs`) against the full
//! window graph, finer than the verdicts `window.rs` compares: every *first violation*
//! at the center (an event, named by its device and pc, its DMA or its token class, and
//! the rule it breaks, reached by a path that breaks no rule) that the full window graph
//! has, the reduced graph has too. That is what the reduction's soundness argument
//! promises (the violating event is only ever moved later, never replaced), and it
//! exercises every unit (tokens, sendings, landings) and every progress bound, not only
//! the first violation a breadth-first search stops at.
//!
//! Windows of radius 1 and 2 around several centers, on random kernels (signals, waits,
//! local and remote copies, computations, branches on the device id: windows of one
//! kernel differ by center) and on the ring catalogue's cases and random single-edit
//! mutants at sizes where the window leaves devices out (environment tokens).

use std::collections::{BTreeSet, HashSet};

use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, RngAlgorithm, TestRng, TestRunner};
use semcheck::model::mutate::{mutations, Operator};
use semcheck::model::window::{check_conditions, Window, WindowEvent, WindowScratch};
use semcheck::model::{compile, DeviceId, Mesh, Notation, Program, Spec};
use semcheck::protocols::{catalogue, MeshKind, Mutant};

use crate::random_kernel::{kernel, stmt};

/// The first violations at the center of a window's graph (full, or reduced by its
/// stubborn sets) and its number of states, or `None` beyond `cap` states.
fn first_violations(window: &Window<'_>, reduced: bool, cap: usize) -> Option<(BTreeSet<String>, usize)> {
    let initial = window.initial_state();
    let mut seen: HashSet<Vec<u32>> = HashSet::from([initial.clone()]);
    let mut queue = vec![initial];
    let mut found = BTreeSet::new();
    let (mut enabled, mut chosen, mut next) = (Vec::new(), Vec::new(), Vec::new());
    let mut scratch = WindowScratch::default();
    while let Some(state) = queue.pop() {
        enabled.clear();
        window.enabled(&state, &mut enabled);
        if reduced {
            window.stubborn_set(&state, &enabled, &mut scratch, &mut chosen);
            std::mem::swap(&mut enabled, &mut chosen);
        }
        for &e in &enabled {
            if let Some(v) = window.step(&state, e, &mut next) {
                found.insert(format!("{} breaks {}", identity(window, &state, e), v.rule));
            } else if seen.insert(next.clone()) {
                if seen.len() > cap {
                    return None;
                }
                queue.push(next.clone());
            }
        }
    }
    Some((found, seen.len()))
}

/// An event's identity, the same on every path: a device's operation by its pc.
fn identity(window: &Window<'_>, state: &[u32], e: WindowEvent) -> String {
    match e {
        WindowEvent::Step(d) => format!("{d}@{}", window.pc(state, d)),
        other => other.to_string(),
    }
}

/// How many windows were compared, and how many had a violation.
#[derive(Debug, Default)]
struct Tally {
    compared: usize,
    with_violations: usize,
    with_tokens: usize,
    skipped: usize,
}

impl Tally {
    /// Compares the full and the reduced graph of every window of `program` of radius 1
    /// and 2 around `centers`.
    fn compare(&mut self, label: &str, program: &Program, centers: &[usize], cap: usize) {
        if check_conditions(program).is_err() {
            return;
        }
        for radius in [1, 2] {
            for &c in centers {
                let Ok(window) = Window::new(program, DeviceId(c as u16), radius) else { continue };
                let Some((full, full_states)) = first_violations(&window, false, cap) else {
                    self.skipped += 1;
                    continue;
                };
                let (reduced, reduced_states) = first_violations(&window, true, cap).expect("smaller than the full");
                assert_eq!(full, reduced, "{label}: window of radius {radius} around d{c}: first violations differ");
                assert!(reduced_states <= full_states, "{label}: the reduced graph is larger");
                self.compared += 1;
                self.with_violations += usize::from(!full.is_empty());
                self.with_tokens += usize::from(!window.tokens().is_empty());
            }
        }
    }
}

#[test]
fn window_reduction_keeps_every_first_violation_on_random_kernels() {
    let config = RunnerConfig { cases: 250, failure_persistence: None, ..RunnerConfig::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let tally = std::cell::RefCell::new(Tally::default());
    let strategy = (4..8usize, any::<bool>(), 1..3u32, prop::collection::vec(stmt(), 1..9));
    runner
        .run(&strategy, |(n, collective, repeat, body)| {
            let Some(kernel) = kernel(n, collective, &body) else { return Ok(()) };
            let spec = Spec { notation: Notation::Plain, outputs: vec![] };
            let Ok(program) = compile(&kernel, &Mesh::ring(n).unwrap(), &spec, repeat) else { return Ok(()) };
            let label = format!("random kernel N={n} repeat {repeat} collective {collective}: {body:?}");
            tally.borrow_mut().compare(&label, &program, &[0, 1, n / 2], 20_000);
            Ok(())
        })
        .unwrap();
    let tally = tally.into_inner();
    eprintln!("{tally:?}");
    assert!(tally.compared > 300, "{tally:?}");
    assert!(tally.with_violations > 50 && tally.with_tokens > 100, "{tally:?}");
}

/// A small deterministic generator (xorshift), so the sample is the same on every run.
fn below(state: &mut u64, n: usize) -> usize {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state % n as u64) as usize
}

#[test]
fn window_reduction_keeps_every_first_violation_on_the_catalogue_and_mutants() {
    let mut tally = Tally::default();
    let mut rng = 0x5eed_0bad_cafe_0001u64;
    for p in catalogue().iter().filter(|p| p.mesh_kind == MeshKind::Ring) {
        let variants: Vec<Option<&Mutant>> = std::iter::once(None).chain(p.mutants.iter().map(Some)).collect();
        for n in [7] {
            for &m in &variants {
                let repeat = semcheck::protocols::Protocol::default_repeat(m);
                let program = p.program(n, m, repeat).unwrap();
                let label = format!("{}/{} N={n}", p.name, m.map_or("-", |m| m.name));
                tally.compare(&label, &program, &[0, 1], 60_000);
            }
            let kernel = p.kernel(n, None).unwrap();
            let mut edits = mutations(&kernel, &Operator::ALL);
            for _ in 0..8 {
                if edits.is_empty() {
                    break;
                }
                let m = edits.swap_remove(below(&mut rng, edits.len()));
                let Ok(program) = compile(&m.kernel, &p.mesh(n).unwrap(), &p.spec(n), 1) else { continue };
                tally.compare(&format!("{} N={n} {}", p.name, m.edit), &program, &[0, 1], 60_000);
            }
        }
    }
    eprintln!("{tally:?}");
    assert!(tally.compared > 40 && tally.with_violations > 10 && tally.with_tokens > 30, "{tally:?}");
}
