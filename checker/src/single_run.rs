//! One maximal run of the whole ring: the global rules (deadlock, wrong-result, the final
//! barrier semaphore) of a kernel whose local rules hold everywhere.
//!
//! When no reachable state breaks a local rule, the kernel's transition system is
//! confluent with identical rule checks on every execution (the model crate's
//! [`semcheck_model::window`] docs prove it), so any one maximal run decides the global
//! rules. This one runs each device as far as it can, in id order, completing every DMA
//! as soon as it starts, then every pending DMA event, and repeats until nothing is
//! enabled. Every event is the model's own step
//! function on the real program, so a violation it meets is real and comes with its
//! schedule.

use std::time::Instant;

use semcheck_model::event::DmaKey;
use semcheck_model::{Event, Program, StepOutcome};
use serde::Serialize;

use crate::outcome::{Counterexample, Verdict};

/// What the run found, and what it cost.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunToEnd {
    /// `Proved` when every device finished with no rule broken; else the violation, with
    /// the whole schedule of the run.
    pub verdict: Verdict,
    /// Events applied.
    pub events: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// Runs `program` until no event is enabled, or a rule breaks.
pub fn run_to_end(program: &Program) -> RunToEnd {
    let start = Instant::now();
    let mut values = program.values.clone();
    let mut state = program.initial_state();
    let mut enabled = Vec::new();
    let mut schedule: Vec<Event> = Vec::new();
    let finish = |verdict: Verdict, schedule: &Vec<Event>| RunToEnd {
        verdict,
        events: schedule.len() as u64,
        seconds: start.elapsed().as_secs_f64(),
    };
    loop {
        let before = schedule.len();
        for d in program.mesh.devices() {
            while program.is_enabled(&state, Event::Step(d)) {
                let pc = program.pc(&state, d);
                if let Some(v) = apply(program, &mut state, Event::Step(d), &mut values, &mut schedule) {
                    return finish(v, &schedule);
                }
                // A DMA it started completes at once: few DMAs are ever in flight, so
                // the race checks stay cheap on big rings.
                let key = DmaKey { issuer: d, pc };
                for e in [Event::Sent(key), Event::Received(key), Event::Done(key)] {
                    if program.is_enabled(&state, e) {
                        if let Some(v) = apply(program, &mut state, e, &mut values, &mut schedule) {
                            return finish(v, &schedule);
                        }
                    }
                }
            }
        }
        enabled.clear();
        program.enabled(&state, &mut enabled);
        for &e in &enabled {
            if matches!(e, Event::Step(_)) || !program.is_enabled(&state, e) {
                continue;
            }
            if let Some(v) = apply(program, &mut state, e, &mut values, &mut schedule) {
                return finish(v, &schedule);
            }
        }
        if schedule.len() == before {
            break;
        }
    }
    let verdict = if program.is_final(&state) {
        Verdict::Proved
    } else {
        Verdict::Violation(Counterexample {
            violation: program.deadlock(&state),
            schedule: schedule.clone(),
            engine_schedule: None,
        })
    };
    finish(verdict, &schedule)
}

/// Applies one event; the verdict if it breaks a rule.
fn apply(
    program: &Program,
    state: &mut Vec<u32>,
    event: Event,
    values: &mut semcheck_model::ValueTable,
    schedule: &mut Vec<Event>,
) -> Option<Verdict> {
    schedule.push(event);
    match program.advance(state, event, values) {
        StepOutcome::Next => None,
        StepOutcome::Violation(violation) => {
            Some(Verdict::Violation(Counterexample { violation, schedule: schedule.clone(), engine_schedule: None }))
        }
    }
}
