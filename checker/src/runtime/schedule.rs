//! The runtime's model schedules: the model events a recording [`super::checks::Sink`]
//! logged, replayed on the model.

use semcheck_model::Program;

use crate::counterexample::{run_events, Ending, Namer, TracedRun};
use crate::outcome::Counterexample;

/// Replays a runtime counterexample's model events on the model: the run, which must break
/// the same rule as the runtime did, at its last event (or, for a deadlock, be stuck right
/// after it). `Err` says how the model's replay ended otherwise: a disagreement between the
/// runtime and the model.
pub fn on_model(program: &Program, cex: &Counterexample) -> Result<TracedRun, String> {
    let namer = Namer::new(program);
    let run = run_events(&namer, &cex.schedule)
        .map_err(|e| format!("the model cannot take event {} of the runtime's schedule ({})", e.index + 1, e.wanted))?;
    let want = cex.violation.rule;
    let last = cex.schedule.len().checked_sub(1);
    match &run.ending {
        Ending::Violation { at, violation } if Some(*at) == last && violation.rule == want => Ok(run),
        Ending::Deadlock(violation) if violation.rule == want => Ok(run),
        Ending::Violation { at, violation } => Err(format!(
            "the model breaks `{}` at event {} of {} ({}); the runtime broke `{want}` at the end",
            violation.rule,
            at + 1,
            cex.schedule.len(),
            violation.message
        )),
        Ending::Deadlock(violation) => {
            Err(format!("the model is stuck after the schedule ({}); the runtime broke `{want}`", violation.message))
        }
        Ending::Clean => Err(format!(
            "the model replays all {} events and breaks no rule; the runtime broke `{want}`",
            cex.schedule.len()
        )),
    }
}
