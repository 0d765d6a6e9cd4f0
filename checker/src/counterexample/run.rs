//! Executing a schedule step by step, recording every state: the common core of replay,
//! minimisation and the renderings.

use semcheck_model::{Event, Program, StepOutcome, ValueTable, Violation};

use super::names::Namer;

/// How an executed schedule ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The event at this index broke a rule.
    Violation {
        /// Index of the event in the schedule.
        at: usize,
        /// The broken rule.
        violation: Violation,
    },
    /// After the last event no event is enabled and some device has not finished.
    Deadlock(Violation),
    /// The schedule ran out with the system still able to move (or finished): no rule broken.
    Clean,
}

impl Ending {
    /// The violation, if the schedule broke a rule.
    pub fn violation(&self) -> Option<&Violation> {
        match self {
            Ending::Violation { violation, .. } | Ending::Deadlock(violation) => Some(violation),
            Ending::Clean => None,
        }
    }
}

/// An executed schedule: each event with its name and the state it happened in.
#[derive(Clone, Debug)]
pub struct TracedRun {
    /// The events, in order.
    pub events: Vec<Event>,
    /// The stable name of each event (see [`Namer`]).
    pub names: Vec<String>,
    /// `states[i]` is the state in which `events[i]` happened; the last entry is the state
    /// after the last event (or, when the last event broke a rule, the state before it,
    /// since the state after a violation is meaningless).
    pub states: Vec<Vec<u32>>,
    /// The values interned while running, for printing cells.
    pub values: ValueTable,
    /// How it ended.
    pub ending: Ending,
}

/// Why an event of a schedule could not be applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotEnabled {
    /// Index of the event in the schedule.
    pub index: usize,
    /// What was asked for.
    pub wanted: String,
    /// The names of the events that were enabled instead.
    pub enabled: Vec<String>,
    /// Why it is not enabled there, in words (see [`why_not`](super::why_not::why_not)).
    pub why: String,
}

/// Runs a schedule from the initial state. `pick(i, state, enabled)` chooses event `i`
/// among the enabled events of `state`, or says what was wanted instead (the names of the
/// enabled events are then made for the report). Stops at the first violation. Only the
/// events run are named: a state has several enabled events, and naming is most of the
/// cost of a run.
pub fn execute(
    namer: &Namer<'_>,
    len: usize,
    pick: impl FnMut(usize, &[u32], &[Event]) -> Result<Event, String>,
) -> Result<TracedRun, NotEnabled> {
    let mut values = namer.program().values.clone();
    let mut run = execute_in(namer, len, &mut values, pick)?;
    run.values = values;
    Ok(run)
}

/// [`execute`], interning the values it computes in `values` (a table that extends the
/// program's: the ids of its states are `values`' ids); the run's own `values` are left
/// empty.
pub fn execute_in(
    namer: &Namer<'_>,
    len: usize,
    values: &mut ValueTable,
    mut pick: impl FnMut(usize, &[u32], &[Event]) -> Result<Event, String>,
) -> Result<TracedRun, NotEnabled> {
    let program: &Program = namer.program();
    let mut state = program.initial_state();
    let mut next = Vec::new();
    let mut enabled = Vec::new();
    let mut run = TracedRun {
        events: Vec::with_capacity(len),
        names: Vec::with_capacity(len),
        states: Vec::with_capacity(len + 1),
        values: ValueTable::new(),
        ending: Ending::Clean,
    };
    for i in 0..len {
        enabled.clear();
        program.enabled(&state, &mut enabled);
        let event = pick(i, &state, &enabled).map_err(|wanted| NotEnabled {
            index: i,
            why: super::why_not::why_not(namer, &state, &wanted),
            wanted,
            enabled: enabled.iter().map(|&e| namer.event(&state, e)).collect(),
        })?;
        let name = namer.event(&state, event);
        tracing::trace!(index = i, event = %name, "replay step");
        run.events.push(event);
        run.names.push(name);
        run.states.push(state.clone());
        match program.step(&state, event, values, &mut next) {
            StepOutcome::Next => std::mem::swap(&mut state, &mut next),
            StepOutcome::Violation(violation) => {
                run.states.push(state);
                run.ending = Ending::Violation { at: i, violation };
                return Ok(run);
            }
        }
    }
    enabled.clear();
    program.enabled(&state, &mut enabled);
    if enabled.is_empty() && !program.is_final(&state) {
        run.ending = Ending::Deadlock(program.deadlock(&state));
    }
    run.states.push(state);
    Ok(run)
}

/// Runs a schedule of events (as the explorer returns it), naming each one.
pub fn run_events(namer: &Namer<'_>, events: &[Event]) -> Result<TracedRun, NotEnabled> {
    execute(namer, events.len(), pick_events(events))
}

/// [`run_events`] with the values interned in `values` ([`execute_in`]).
pub fn run_events_in(namer: &Namer<'_>, events: &[Event], values: &mut ValueTable) -> Result<TracedRun, NotEnabled> {
    execute_in(namer, events.len(), values, pick_events(events))
}

/// Picks `events` in order, each if it is enabled.
fn pick_events(events: &[Event]) -> impl FnMut(usize, &[u32], &[Event]) -> Result<Event, String> + '_ {
    |i, _, enabled| {
        let want = events[i];
        if enabled.contains(&want) {
            Ok(want)
        } else {
            Err(want.to_string())
        }
    }
}

/// Runs a schedule of event names (as a trace file stores it).
pub fn run_names<S: AsRef<str>>(namer: &Namer<'_>, names: &[S]) -> Result<TracedRun, NotEnabled> {
    execute(namer, names.len(), |i, state, enabled| {
        let want = names[i].as_ref();
        enabled.iter().copied().find(|&e| namer.event(state, e) == want).ok_or_else(|| want.to_string())
    })
}
