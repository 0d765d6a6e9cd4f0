//! A counterexample as every command shows it (`check` of one size and of `--sizes`,
//! SARIF, the JSON): its schedule executed on the model, minimised and rotated to its
//! canonical devices (what `trace` and `replay` show of the same case), explained, and its
//! events located in the kernel's source.

use semcheck::checker::counterexample::{counterexample, explain, notes, Ending, Explanation, Found, Namer, Role};
use semcheck::checker::Counterexample;
use semcheck::model::ir::Loc;
use semcheck::model::Violation;
use semcheck::Program;
use serde_json::{json, Value};

/// One event of a counterexample, for machines.
pub(crate) struct EventView {
    /// 1-based position in the schedule.
    pub(crate) index: usize,
    /// The device it happens on.
    pub(crate) device: u16,
    /// Its name (`d1 (0) wait recv_sem 4096`).
    pub(crate) text: String,
    /// Why it could happen when it did, where that is worth saying.
    pub(crate) note: Option<String>,
    /// The kernel source line it comes from.
    pub(crate) loc: Option<Loc>,
}

impl EventView {
    /// The event's JSON object (`file`/`line` null when it has no source line).
    pub(crate) fn json(&self) -> Value {
        json!({
            "index": self.index,
            "device": self.device,
            "text": self.text,
            "note": self.note,
            "file": self.loc.as_ref().map(|l| l.file.clone()),
            "line": self.loc.as_ref().map(|l| l.line),
        })
    }
}

/// A violation with its schedule's events located in the kernel's source.
pub(crate) struct ViolationView<'s> {
    /// The events, in order.
    pub(crate) events: Vec<EventView>,
    /// The 1-based index of the event that broke the rule (`None` for a deadlock: no
    /// event breaks it, the schedule ends with every device blocked).
    pub(crate) breaking: Option<usize>,
    /// Where the violation is reported: the breaking event's line; for a deadlock, the
    /// line of the wait the first stuck device is stuck at; else (a leak found at exit)
    /// the line of the last located event of the devices involved.
    pub(crate) location: Option<Loc>,
    /// The few events without which the violation does not happen.
    pub(crate) explanation: &'s Explanation,
}

/// How event names read, printed under every schedule a person reads.
pub(crate) const LEGEND: &str = "\
(dN: device N; (i) or (i,j): the grid index; #k: the k-th invocation (with --repeat);
 [k of n]: the k-th of n identical operations in one grid step; `sem a -> b`: the
 semaphore's value before and after, DMA semaphores counting bytes)";

/// A counterexample of `program` as shown: executed, minimised, rotated and explained
/// once, or why its schedule does not replay (`None`: the engine gave no schedule).
pub(crate) struct Shown {
    found: Option<Result<(Found, Explanation), String>>,
}

impl Shown {
    /// `c`, a counterexample of `program`, as every command shows it.
    pub(crate) fn of(program: &Program, c: &Counterexample) -> Shown {
        let found = (!c.schedule.is_empty()).then(|| {
            counterexample(program, c, true)
                .map(|found| {
                    let explanation = explain(program, &found.run);
                    (found, explanation)
                })
                .map_err(|e| format!("(the schedule does not replay at event {}: {})", e.index + 1, e.wanted))
        });
        Shown { found }
    }

    /// The shown schedule's run, minimised and rotated, if it replays.
    pub(crate) fn found(&self) -> Option<&Found> {
        match &self.found {
            Some(Ok((found, _))) => Some(found),
            _ => None,
        }
    }

    /// The violation as the shown schedule breaks it (`c`'s own, the engine's, when there
    /// is no schedule): the same devices and cells for `check`, `trace` and `replay`.
    pub(crate) fn violation<'a>(&'a self, c: &'a Counterexample) -> &'a Violation {
        self.found().and_then(|f| f.run.ending.violation()).unwrap_or(&c.violation)
    }

    /// The violation's message as a person reads it: a race's also says where the shown
    /// schedule started its in-flight DMA, which the message names by its statement only
    /// (the same as the other access's when both are one line of a loop).
    pub(crate) fn message(&self, c: &Counterexample) -> String {
        let shown = self.violation(c);
        let started = match &self.found {
            Some(Ok((_, e))) if shown.rule == semcheck::model::Rule::Race => dma_started(e),
            _ => String::new(),
        };
        format!("{}{started}", shown.message)
    }

    /// The counterexample's events with their source lines (`None` when the schedule does
    /// not replay or there is none).
    pub(crate) fn view(&self, program: &Program, c: &Counterexample) -> Option<ViolationView<'_>> {
        let Some(Ok((found, explanation))) = &self.found else { return None };
        let run = &found.run;
        let violation = self.violation(c);
        let namer = Namer::new(program);
        let (notes, _) = notes(program, run);
        let events: Vec<EventView> = run
            .events
            .iter()
            .enumerate()
            .map(|(i, &e)| EventView {
                index: i + 1,
                device: namer.device_of(e).0,
                text: run.names[i].clone(),
                note: notes[i].clone(),
                loc: namer.event_loc(&run.states[i], e).cloned(),
            })
            .collect();
        let breaking = match &run.ending {
            Ending::Violation { at, .. } => Some(at + 1),
            _ => None,
        };
        let involved = |e: &&EventView| violation.devices.iter().any(|d| d.0 == e.device);
        let located = |e: &&EventView| e.loc.is_some();
        let upto = breaking.unwrap_or(events.len());
        let stuck = || explanation.points.iter().find(|p| p.role == Role::Blocked).and_then(|p| p.loc.clone());
        let location = breaking
            .and_then(|b| events[b - 1].loc.clone())
            .or_else(stuck)
            .or_else(|| events[..upto].iter().rev().filter(involved).find(located).and_then(|e| e.loc.clone()))
            .or_else(|| events[..upto].iter().rev().find(located).and_then(|e| e.loc.clone()));
        Some(ViolationView { events, breaking, location, explanation })
    }

    /// The `violation` object of the JSON (`docs/json.md`).
    pub(crate) fn json(&self, program: &Program, c: &Counterexample) -> Value {
        let view = self.view(program, c);
        let shown = self.violation(c);
        json!({
            "rule": shown.rule.name(),
            "message": shown.message,
            "devices": shown.devices.iter().map(|d| d.0).collect::<Vec<_>>(),
            "events": view.as_ref().map(|v| v.events.iter().map(EventView::json).collect::<Vec<_>>()),
            "breaking_event": view.as_ref().and_then(|v| v.breaking),
            "location": view.as_ref().and_then(|v| v.location.as_ref()).map(|l| json!({"file": l.file, "line": l.line})),
            "engine_schedule": c.engine_schedule,
            "explanation": view.as_ref().map(|v| v.explanation.points.iter().map(semcheck::checker::counterexample::render::json::point).collect::<Vec<_>>()),
            "minimized": self.found().and_then(|f| f.stats).map(|s| json!({
                "events_before": s.events_before,
                "events_after": s.events_after,
                "devices_dropped": s.devices_dropped,
                "switches_before": s.switches_before,
                "switches_after": s.switches_after,
            })),
        })
    }

    /// The lines under a violation's headline: its explanation, what minimising did, with
    /// `schedule` every event, and the legend (or why the schedule does not replay).
    pub(crate) fn text(&self, program: &Program, schedule: bool) -> String {
        let (found, explanation) = match &self.found {
            Some(Ok((found, explanation))) => (found, explanation),
            Some(Err(e)) => return format!("  {e}\n"),
            None => return String::new(),
        };
        let run = &found.run;
        let mut out = String::new();
        let shown = explanation.indices().len();
        out.push_str(&format!(
            "  why ({shown} of {} events{}):\n",
            run.names.len(),
            if schedule { "" } else { "; --schedule shows every one" }
        ));
        for line in explanation.lines() {
            out.push_str(&format!("  {line}\n"));
        }
        if let Some(sentence) = found.minimized_sentence() {
            out.push_str(&format!("  schedule: {sentence}\n"));
        }
        if schedule {
            let (notes, about) = notes(program, run);
            if let Some(about) = about {
                out.push_str(&format!("  ({about})\n"));
            }
            out.push_str(&format!("  schedule ({} events):\n", run.names.len()));
            for (i, name) in run.names.iter().enumerate() {
                match &notes[i] {
                    Some(note) => out.push_str(&format!("  {:>4}. {name}   [{note}]\n", i + 1)),
                    None => out.push_str(&format!("  {:>4}. {name}\n", i + 1)),
                }
            }
        }
        for line in LEGEND.lines() {
            out.push_str(&format!("  {line}\n"));
        }
        out
    }
}

/// ` (started at event 31)`: where the shown schedule started the in-flight DMA of a race;
/// empty when the explanation does not say.
fn dma_started(explanation: &Explanation) -> String {
    match explanation.points.iter().find(|p| p.role == Role::DmaInFlight).and_then(|p| p.index) {
        Some(i) => format!(" (started at event {})", i + 1),
        None => String::new(),
    }
}
