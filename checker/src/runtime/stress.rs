//! `semcheck stress`: the runtime on OS threads with real `f32` data, many times.

use std::sync::Arc;
use std::time::Instant;

use semcheck_model::{Program, Rule};

use super::checks::Sink;
use super::{os, RunConfig};
use crate::outcome::{Counterexample, EngineRun, Outcome, Stats, StopReason, StressTally, Verdict};

/// Runs `program` `runs` times on OS threads, run `i` with inputs from seed `seed + i`.
///
/// The verdict is the first violation seen (its counterexample has no model schedule: the
/// OS schedules; `engine_schedule` names the inputs' seed), or `incomplete`: real-thread
/// runs sample schedules and prove nothing. The counts are in the outcome's
/// [`EngineRun::Stress`].
pub fn stress(program: &Program, runs: u64, seed: u64) -> Outcome {
    let program = Arc::new(program.clone());
    let start = Instant::now();
    let mut counts = [0u64; Rule::ALL.len()];
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
    let wrong = Rule::ALL.iter().position(|r| *r == Rule::WrongResult).expect("a rule of ALL");
    let tally =
        StressTally { mismatched: counts[wrong], raced, by_rule: Rule::ALL.iter().copied().zip(counts).collect() };
    let verdict = match first {
        Some((s, violation)) => Verdict::Violation(Counterexample {
            violation,
            schedule: Vec::new(),
            engine_schedule: Some(format!("inputs seed {s} (OS thread schedules are not replayable)")),
        }),
        None => Verdict::Incomplete {
            reason: StopReason::Sampled,
            detail: format!(
                "no rule broken in {runs} runs on OS threads; real-thread runs sample schedules and prove nothing"
            ),
        },
    };
    let stats = Stats { executions: runs, seconds: start.elapsed().as_secs_f64(), ..Stats::default() };
    Outcome { verdict, stats, run: EngineRun::Stress { runs, seed, tally } }
}
