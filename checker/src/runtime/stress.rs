//! `semcheck stress`: the runtime on OS threads with real `f32` data, many times.

use std::sync::Arc;
use std::time::Instant;

use semcheck_model::{Program, Rule, Violation};
use serde::Serialize;

use super::checks::Sink;
use super::{os, RunConfig};

/// What a stress campaign found.
#[derive(Clone, Debug, Serialize)]
pub struct StressReport {
    /// Runs made.
    pub runs: u64,
    /// Runs whose outputs differed from the reference (`wrong-result`).
    pub mismatched: u64,
    /// Runs in which the race rule saw a conflicting access (noted; the run went on).
    pub raced: u64,
    /// Runs that broke each rule, in [`Rule::ALL`] order (`wrong-result` included; a
    /// race that was only noted is counted in `raced`, not here).
    pub by_rule: Vec<(Rule, u64)>,
    /// The first violation seen, with the seed of its run.
    pub first: Option<(u64, Violation)>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// Runs `program` `runs` times on OS threads, run `i` with inputs from seed `seed + i`.
pub fn stress(program: &Program, runs: u64, seed: u64) -> StressReport {
    let program = Arc::new(program.clone());
    let start = Instant::now();
    let mut counts = [0u64; 5];
    let mut first = None;
    let mut raced = 0;
    for i in 0..runs {
        let s = seed.wrapping_add(i);
        let sink = Arc::new(Sink::default());
        os::run_into(&program, &RunConfig::stress(s), &sink);
        if let Some(v) = sink.take_race() {
            raced += 1;
            first.get_or_insert((s, v));
        }
        if let Some(v) = sink.take() {
            let k = Rule::ALL.iter().position(|r| *r == v.rule).expect("a rule of ALL");
            counts[k] += 1;
            first.get_or_insert((s, v));
        }
    }
    StressReport {
        runs,
        mismatched: counts[1],
        raced,
        by_rule: Rule::ALL.iter().copied().zip(counts).collect(),
        first,
        seconds: start.elapsed().as_secs_f64(),
    }
}
