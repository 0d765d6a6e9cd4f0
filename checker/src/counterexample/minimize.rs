//! Shortening a counterexample: drop events that play no part while it still breaks the
//! same rule.
//!
//! The explorer's BFS gives a shortest schedule of the (partial-order reduced) graph; a
//! schedule can still carry steps of devices that do not matter to the violation. The
//! minimiser works on event *names*, so removing a step of a device does not silently turn
//! the device's later steps into other operations: a candidate is kept only if every
//! remaining event is still enabled as named and the run breaks the same rule (a run that
//! breaks it earlier is cut there). It removes chunks, halving their size down to single
//! events, until no single event can go (1-minimal).

use semcheck_model::Rule;
use tracing::debug;

use super::names::Namer;
use super::run::{run_names, Ending, TracedRun};

/// A minimised run and how long it was before.
#[derive(Clone, Debug)]
pub struct Minimized {
    /// The shortest run found.
    pub run: TracedRun,
    /// Events before minimising.
    pub before: usize,
}

/// Runs `names`; `Some` if it breaks `rule`, cut right after the event that breaks it.
fn reproduces(namer: &Namer<'_>, names: &[String], rule: Rule) -> Option<TracedRun> {
    let mut run = run_names(namer, names).ok()?;
    match &run.ending {
        Ending::Violation { at, violation } if violation.rule == rule => {
            let at = *at;
            run.events.truncate(at + 1);
            run.names.truncate(at + 1);
            run.states.truncate(at + 2);
            Some(run)
        }
        Ending::Deadlock(v) if v.rule == rule => Some(run),
        _ => None,
    }
}

/// Minimises `run` (which must end in a violation) keeping its rule.
pub fn minimize(namer: &Namer<'_>, run: TracedRun) -> Minimized {
    let before = run.events.len();
    let Some(rule) = run.ending.violation().map(|v| v.rule) else {
        return Minimized { run, before };
    };
    let mut best = run;
    let mut chunk = (best.names.len() / 2).max(1);
    loop {
        let mut removed = false;
        let mut start = 0;
        while start < best.names.len() {
            let end = (start + chunk).min(best.names.len());
            let mut candidate = best.names[..start].to_vec();
            candidate.extend_from_slice(&best.names[end..]);
            match reproduces(namer, &candidate, rule) {
                Some(shorter) => {
                    best = shorter;
                    removed = true;
                }
                None => start = end,
            }
        }
        if chunk == 1 && !removed {
            break;
        }
        if !removed {
            chunk = (chunk / 2).max(1);
        }
    }
    debug!(before, after = best.events.len(), %rule, "counterexample minimised");
    Minimized { run: best, before }
}
