//! Shortening a counterexample: drop events that play no part while it still breaks the
//! same rule, then group each device's steps together.
//!
//! The explorer's BFS gives a shortest schedule of the (partial-order reduced) graph; a
//! schedule can still carry steps of devices that do not matter to the violation. The
//! minimiser works on event *names*, so removing a step of a device does not silently turn
//! the device's later steps into other operations: a candidate is kept only if every
//! remaining event is still enabled as named and the run breaks the same rule (a run that
//! breaks it earlier is cut there). It first tries to drop every event of one device at
//! once (a device that plays no part goes in one try, even where no single one of its
//! events could go alone, like its `enter`), then removes chunks, halving their size down
//! to single events, until no single event can go (1-minimal).
//!
//! A last pass ([`regroup`](super::regroup)) reorders independent events so that each
//! device runs as long as it can before another takes over, keeping the same violation;
//! the [`Minimized`] record says what every pass did.

use semcheck_model::{DeviceId, Event, Rule, StepOutcome, ValueTable};
use tracing::debug;

use super::names::Namer;
use super::regroup::{regroup, switches};
use super::run::{run_events_in, Ending, TracedRun};

/// A minimised run and what minimising did.
#[derive(Clone, Debug)]
pub struct Minimized {
    /// The shortest run found.
    pub run: TracedRun,
    /// Events before minimising.
    pub before: usize,
    /// What changed, in numbers.
    pub stats: MinimizeStats,
}

/// What minimising did to a schedule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MinimizeStats {
    /// Events before.
    pub events_before: usize,
    /// Events after.
    pub events_after: usize,
    /// Devices with events before and none after.
    pub devices_dropped: usize,
    /// Context switches (consecutive events on different devices) before.
    pub switches_before: usize,
    /// Context switches after.
    pub switches_after: usize,
}

impl MinimizeStats {
    /// `44 events -> 27 after minimising: 2 devices dropped, 9 context switches -> 4`.
    pub fn sentence(&self) -> String {
        let mut out = format!("{} events -> {} after minimising", self.events_before, self.events_after);
        let mut parts = Vec::new();
        if self.devices_dropped > 0 {
            let s = if self.devices_dropped == 1 { "" } else { "s" };
            parts.push(format!("{} device{s} dropped", self.devices_dropped));
        }
        let s = if self.switches_before == 1 { "" } else { "es" };
        parts.push(format!("{} context switch{s} -> {}", self.switches_before, self.switches_after));
        out.push_str(": ");
        out.push_str(&parts.join(", "));
        out
    }

    /// The trace file's `minimized` note: `44 -> 27 events, 9 -> 4 context switches`.
    pub fn header_note(&self) -> String {
        let mut out = format!("{} -> {} events", self.events_before, self.events_after);
        if self.devices_dropped > 0 {
            out.push_str(&format!(", {} devices dropped", self.devices_dropped));
        }
        let s = if self.switches_before == 1 { "" } else { "es" };
        out.push_str(&format!(", {} -> {} context switch{s}", self.switches_before, self.switches_after));
        out
    }
}

/// Whether running `rest` from `best`'s state before its event `from` breaks `rule`: the
/// quick test a candidate (`best`'s first `from` events, then `rest`) passes before it is
/// run again in full by [`candidate`]; `Some` with the events it ran when it does. `rest`
/// pairs each name with the event that had it in `best`, tried first. The shared prefix
/// is not run again, names are made only until the wanted one is found, nothing is
/// recorded, and a failure is not explained: minimising tries hundreds of candidates that
/// fail.
fn breaks_from<'n>(
    namer: &Namer<'_>,
    t: &mut Trial<'_>,
    from: usize,
    rest: impl IntoIterator<Item = (Event, &'n str)>,
    rule: Rule,
) -> Option<Vec<Event>> {
    let program = namer.program();
    let mut state = t.best.states[from].clone();
    let values = &mut *t.values;
    let (mut next, mut enabled) = (Vec::new(), Vec::new());
    let mut ran = Vec::new();
    for (hint, want) in rest {
        enabled.clear();
        program.enabled(&state, &mut enabled);
        // The event that had this name in `best` most often still has it: one name made.
        let named = |e: Event| namer.event(&state, e) == want;
        let event = if enabled.contains(&hint) && named(hint) {
            hint
        } else {
            *enabled.iter().find(|&&e| e != hint && named(e))?
        };
        ran.push(event);
        match program.step(&state, event, values, &mut next) {
            StepOutcome::Next => std::mem::swap(&mut state, &mut next),
            StepOutcome::Violation(v) => return (v.rule == rule).then_some(ran),
        }
    }
    enabled.clear();
    program.enabled(&state, &mut enabled);
    (enabled.is_empty() && !program.is_final(&state) && program.deadlock(&state).rule == rule).then_some(ran)
}

/// `best`'s first `from` events followed by `rest`, traced in full if it breaks `rule`
/// ([`breaks_from`] first, then the events it ran, from the initial state, cut right after
/// the event that breaks the rule).
fn candidate<'n>(
    namer: &Namer<'_>,
    t: &mut Trial<'_>,
    from: usize,
    rest: impl IntoIterator<Item = (Event, &'n str)>,
    rule: Rule,
) -> Option<TracedRun> {
    let ran = breaks_from(namer, t, from, rest, rule)?;
    let mut events = t.best.events[..from].to_vec();
    events.extend(ran);
    let mut run = run_events_in(namer, &events, t.values).ok()?;
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

/// The run candidates are cut from, and the value table every run of the minimiser
/// interns in: it extends `best`'s (values are interned, never removed, so the ids in the
/// states of every run made with it keep their meaning), and becomes the result's.
struct Trial<'a> {
    best: &'a TracedRun,
    values: &'a mut ValueTable,
}

/// The devices that own an event of `run`: the device that steps, and the issuer of a
/// DMA event (dropping a device drops its DMAs with it).
fn owner(event: Event) -> DeviceId {
    match event {
        Event::Step(d) => d,
        Event::Sent(k) | Event::Received(k) | Event::Done(k) | Event::CellLanded(k, _) => k.issuer,
    }
}

/// Tries to drop every event of one device at once, device by device, until none can go.
fn drop_devices(namer: &Namer<'_>, mut best: TracedRun, rule: Rule, values: &mut ValueTable) -> TracedRun {
    loop {
        let mut dropped = false;
        for d in namer.program().mesh.devices() {
            let Some(first) = best.events.iter().position(|&e| owner(e) == d) else {
                continue;
            };
            let rest = best.events[first..]
                .iter()
                .zip(&best.names[first..])
                .filter(|(&e, _)| owner(e) != d)
                .map(|(&e, n)| (e, n.as_str()));
            if let Some(shorter) = candidate(namer, &mut Trial { best: &best, values }, first, rest, rule) {
                debug!(device = %d, "every event of a device dropped");
                best = shorter;
                dropped = true;
            }
        }
        if !dropped {
            return best;
        }
    }
}

/// Removes chunks of events, halving their size down to single events, until no single
/// event can go.
fn one_minimal(namer: &Namer<'_>, mut best: TracedRun, rule: Rule, values: &mut ValueTable) -> TracedRun {
    let mut chunk = (best.names.len() / 2).max(1);
    loop {
        let mut removed = false;
        let mut start = 0;
        while start < best.names.len() {
            let mut trial = Trial { best: &best, values };
            let mut shorter = None;
            while start < best.names.len() {
                let end = (start + chunk).min(best.names.len());
                let rest = best.events[end..].iter().copied().zip(best.names[end..].iter().map(String::as_str));
                shorter = candidate(namer, &mut trial, start, rest, rule);
                if shorter.is_some() {
                    break;
                }
                start = end;
            }
            if let Some(shorter) = shorter {
                best = shorter;
                removed = true;
            }
        }
        if chunk == 1 && !removed {
            return best;
        }
        if !removed {
            chunk = (chunk / 2).max(1);
        }
    }
}

fn devices_of(namer: &Namer<'_>, run: &TracedRun) -> usize {
    let mut seen = vec![false; namer.program().num_devices()];
    for &e in &run.events {
        seen[owner(e).index()] = true;
    }
    seen.iter().filter(|&&s| s).count()
}

/// Minimises `run` (which must end in a violation) keeping its rule: devices that play no
/// part dropped, then 1-minimal, then regrouped (and made 1-minimal again if regrouping
/// opened a way).
pub fn minimize(namer: &Namer<'_>, run: TracedRun) -> Minimized {
    let before = run.events.len();
    let mut stats = MinimizeStats {
        events_before: before,
        events_after: before,
        switches_before: switches(namer, &run.events),
        switches_after: switches(namer, &run.events),
        devices_dropped: 0,
    };
    let Some(rule) = run.ending.violation().map(|v| v.rule) else {
        return Minimized { run, before, stats };
    };
    let devices_before = devices_of(namer, &run);
    let mut run = run;
    let mut values = std::mem::replace(&mut run.values, ValueTable::new());
    let mut best = drop_devices(namer, run, rule, &mut values);
    best = one_minimal(namer, best, rule, &mut values);
    for _ in 0..3 {
        let Some(mut grouped) = regroup(namer, &best).filter(|g| g.events != best.events) else { break };
        let len = grouped.events.len();
        // The regrouped run was made with a table of its own.
        values = std::mem::replace(&mut grouped.values, ValueTable::new());
        best = one_minimal(namer, grouped, rule, &mut values);
        if best.events.len() == len {
            break;
        }
    }
    best.values = values;
    stats.events_after = best.events.len();
    stats.switches_after = switches(namer, &best.events);
    stats.devices_dropped = devices_before - devices_of(namer, &best);
    debug!(before, after = best.events.len(), %rule, switches = stats.switches_after, "counterexample minimised");
    Minimized { run: best, before, stats }
}
