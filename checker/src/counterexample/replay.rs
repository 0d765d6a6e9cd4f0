//! Replaying a trace file against the current model.

use semcheck_model::Program;
use tracing::debug;

use super::error::{TraceError, TraceErrorKind};
use super::format::TraceFile;
use super::names::Namer;
use super::run::{run_names, Ending, TracedRun};

/// A trace that reproduced its rule.
#[derive(Clone, Debug)]
pub struct Replayed {
    /// The executed run, with every state.
    pub run: TracedRun,
    /// Whether the violation message is word for word the recorded one (a different message
    /// for the same rule is allowed: messages are for people).
    pub message_matches: bool,
}

/// Re-executes the trace's events against `program`: every event must be enabled when it
/// is applied, and the run must break the recorded rule exactly at the last event (or,
/// for a deadlock, be stuck right after it).
pub fn replay(program: &Program, trace: &TraceFile) -> Result<Replayed, TraceError> {
    let namer = Namer::new(program);
    let names: Vec<&str> = trace.events.iter().map(|l| l.text.as_str()).collect();
    let line_of = |i: usize| trace.events.get(i).map(|l| l.number);
    let run = run_names(&namer, &names).map_err(|e| {
        let mut msg = format!("event {} is not possible any more, because {}: `{}`", e.index + 1, e.why, e.wanted);
        if e.enabled.is_empty() {
            msg.push_str("; no event is enabled there");
        } else {
            msg.push_str("; enabled there: ");
            msg.push_str(&e.enabled.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "));
        }
        TraceError::new(TraceErrorKind::NotEnabled, line_of(e.index), msg)
    })?;
    let (want, rule_line) = trace.rule;
    let last = names.len().checked_sub(1);
    match &run.ending {
        Ending::Violation { at, violation } if Some(*at) != last => {
            return Err(TraceError::new(
                TraceErrorKind::Rule,
                line_of(*at),
                format!("this event already breaks a rule ({violation}), before the end of the trace"),
            ))
        }
        Ending::Clean => {
            return Err(TraceError::new(
                TraceErrorKind::Rule,
                Some(rule_line),
                format!("every event replays but no rule is broken; the trace says `{want}`"),
            ))
        }
        _ => {}
    }
    let violation = run.ending.violation().expect("a violation or a deadlock");
    if violation.rule != want {
        return Err(TraceError::new(
            TraceErrorKind::Rule,
            Some(rule_line),
            format!("every event replays but the run breaks `{}`, not `{want}`: {}", violation.rule, violation.message),
        ));
    }
    let message_matches = trace.message.as_deref().is_none_or(|m| m == violation.message);
    debug!(events = names.len(), rule = %want, message_matches, "trace replayed");
    Ok(Replayed { run, message_matches })
}
