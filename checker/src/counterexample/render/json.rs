//! JSON: the header, every event with its name, device and kind, and the violation.

use semcheck_model::{Event, Program};
use serde_json::{json, Value};

use crate::counterexample::explain::{explain, Point};
use crate::counterexample::format::Header;
use crate::counterexample::names::Namer;
use crate::counterexample::run::{Ending, TracedRun};

/// The JSON object of a counterexample.
pub fn json(program: &Program, header: &Header, run: &TracedRun) -> String {
    serde_json::to_string_pretty(&value(program, header, run)).expect("JSON of plain data") + "\n"
}

/// The JSON value of a counterexample: every event with its name, device, kind, DMA and
/// source line (`file`/`line`, null when the event has none), and the violation with its
/// explanation (see [`point`]).
pub fn value(program: &Program, header: &Header, run: &TracedRun) -> Value {
    let namer = Namer::new(program);
    let events: Vec<Value> = run
        .events
        .iter()
        .zip(&run.names)
        .enumerate()
        .map(|(i, (&e, name))| {
            let (kind, dma) = match e {
                Event::Step(_) => ("step", Value::Null),
                Event::Sent(k) => ("sent", json!(namer.op(k.issuer, k.pc))),
                Event::Received(k) => ("received", json!(namer.op(k.issuer, k.pc))),
                Event::Done(k) => ("done", json!(namer.op(k.issuer, k.pc))),
                Event::CellLanded(k, _) => ("cell-landed", json!(namer.op(k.issuer, k.pc))),
            };
            let loc = namer.event_loc(&run.states[i], e);
            json!({
                "index": i + 1,
                "name": name,
                "device": namer.device_of(e).0,
                "kind": kind,
                "dma": dma,
                "file": loc.map(|l| l.file.clone()),
                "line": loc.map(|l| l.line),
            })
        })
        .collect();
    let (at, violation) = match &run.ending {
        Ending::Violation { at, violation } => (json!(at + 1), Some(violation)),
        Ending::Deadlock(v) => (Value::Null, Some(v)),
        Ending::Clean => (Value::Null, None),
    };
    let explanation: Vec<Value> = explain(program, run).points.iter().map(point).collect();
    let v = json!({
        "case": header.case,
        "protocol": header.case.source.protocol(),
        "mutant": header.case.source.mutant(),
        "devices": header.case.devices,
        "repeat": header.case.repeat,
        "engine": header.engine,
        "seed": header.seed,
        "minimized": header.minimized,
        "events": events,
        "violation": violation.map(|v| json!({
            "rule": v.rule.name(),
            "message": v.message,
            "devices": v.devices.iter().map(|d| d.0).collect::<Vec<_>>(),
            "at_event": at,
            "deadlock": matches!(run.ending, Ending::Deadlock(_)),
            "explanation": explanation,
        })),
    });
    v
}

/// A point of an explanation: `index` (1-based, into `events`; null for a device stuck at
/// the end of a deadlock), `device` (null for the summary), `text`, `role`, `note`,
/// `wrong`, `file`/`line` (null when none).
pub fn point(p: &Point) -> Value {
    json!({
        "index": p.index.map(|i| i + 1),
        "device": p.device.map(|d| d.0),
        "text": p.text,
        "role": p.role.name(),
        "note": p.note,
        "wrong": p.wrong,
        "file": p.loc.as_ref().map(|l| l.file.clone()),
        "line": p.loc.as_ref().map(|l| l.line),
    })
}
