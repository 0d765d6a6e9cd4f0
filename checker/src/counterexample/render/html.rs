//! One self-contained HTML page of a counterexample (inline CSS and script, nothing
//! fetched): a lane per device with its events in order, the explanation's events
//! highlighted, each event's source line on hover and on click, and, for the selected
//! event, every semaphore, every in-flight DMA and every slot of the state after it.
//!
//! The page carries its data as one JSON object (`<script type="application/json"
//! id="data">`) that its script turns into the view; once drawn the script writes
//! `ready: N events, K highlighted` into `#status` (and `data-state="ready"` on the body),
//! and any error into `#errors`, so a headless browser can tell that it worked.

use semcheck_model::program::{Op, SemSlot};
use semcheck_model::state::{RECEIVED, SENT};
use semcheck_model::{Event, Program};
use serde_json::{json, Value};

use super::slot_cells;
use crate::counterexample::explain::{explain, Role};
use crate::counterexample::format::Header;
use crate::counterexample::names::Namer;
use crate::counterexample::run::{Ending, TracedRun};

/// The page's style.
const CSS: &str = include_str!("html.css");
/// The page's script.
const SCRIPT: &str = include_str!("html.js");

/// The page.
pub fn html(program: &Program, header: &Header, run: &TracedRun) -> String {
    let data = script_safe(&serde_json::to_string(&data(program, header, run)).expect("JSON of plain data"));
    let title = escape(&format!("semcheck: {}", header.case));
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n\
         <style>\n{CSS}</style>\n</head>\n<body data-state=\"loading\">\n\
         <header><h1>{title}</h1><p id=\"violation\"></p><p id=\"minimized\"></p></header>\n\
         <div id=\"status\">loading</div>\n<pre id=\"errors\"></pre>\n\
         <main>\n<section id=\"left\">\n<h2>Why</h2>\n<ol id=\"explanation\"></ol>\n\
         <h2>Schedule</h2>\n<label><input type=\"checkbox\" id=\"only\"> only the events of the explanation</label>\n\
         <table id=\"lanes\"></table>\n</section>\n<aside id=\"detail\"><p>Click an event.</p></aside>\n</main>\n\
         <script type=\"application/json\" id=\"data\">{data}</script>\n<script>\n{SCRIPT}</script>\n</body>\n</html>\n"
    )
}

/// JSON text that can sit inside a `<script>` element and still parse as the same JSON:
/// `<`, `>` and `&` (which could end the element, open a comment in it, or start a
/// character reference) and U+2028/U+2029 (line ends to older JavaScript) written as
/// `\uXXXX` escapes. JSON has them only inside strings, where such an escape is the same
/// character; every escape of JSON text starts with a backslash, so none of these characters
/// is part of one.
fn script_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// HTML text escaping.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Everything the page shows, as one JSON object.
fn data(program: &Program, header: &Header, run: &TracedRun) -> Value {
    let namer = Namer::new(program);
    let explanation = explain(program, run);
    let breaking = match run.ending {
        Ending::Violation { at, .. } => Some(at),
        _ => None,
    };
    let events: Vec<Value> = run
        .events
        .iter()
        .enumerate()
        .map(|(i, &e)| {
            let loc = namer.event_loc(&run.states[i], e);
            let point = explanation.points.iter().find(|p| p.index == Some(i) && p.role != Role::Summary);
            // The state the event leaves (for the breaking event, the one it broke the rule in).
            let after = if breaking == Some(i) { &run.states[i] } else { &run.states[i + 1] };
            json!({
                "index": i + 1,
                "device": namer.device_of(e).0,
                "name": run.names[i],
                "kind": kind(e),
                "role": point.map(|p| p.role.name()),
                "note": point.and_then(|p| p.note.clone()),
                "wrong": point.is_some_and(|p| p.wrong),
                "breaks": breaking == Some(i),
                "file": loc.map(|l| l.file.clone()),
                "line": loc.map(|l| l.line),
                "code": loc.and_then(|l| l.text.clone()),
                "state": state(program, &namer, run, after),
            })
        })
        .collect();
    let points: Vec<Value> = explanation
        .points
        .iter()
        .map(|p| {
            json!({
                "index": p.index.map(|i| i + 1),
                "device": p.device.map(|d| d.0),
                "role": p.role.name(),
                "text": p.text,
                "note": p.note,
                "wrong": p.wrong,
                "file": p.loc.as_ref().map(|l| l.file.clone()),
                "line": p.loc.as_ref().map(|l| l.line),
            })
        })
        .collect();
    json!({
        "case": header.case.to_string(),
        "minimized": header.minimized,
        "devices": program.mesh.devices().map(|d| d.to_string()).collect::<Vec<_>>(),
        "events": events,
        "explanation": points,
        "violation": run.ending.violation().map(|v| json!({
            "rule": v.rule.name(),
            "message": v.message,
            "deadlock": matches!(run.ending, Ending::Deadlock(_)),
        })),
        "initial": state(program, &namer, run, &run.states[0]),
    })
}

/// The kind of an event, as the JSON rendering names it.
fn kind(e: Event) -> &'static str {
    match e {
        Event::Step(_) => "step",
        Event::Sent(_) => "sent",
        Event::Received(_) => "received",
        Event::Done(_) => "done",
        Event::CellLanded(..) => "cell-landed",
    }
}

/// One state: per device its next operation, semaphores and slots, and the DMAs in flight.
fn state(program: &Program, namer: &Namer<'_>, run: &TracedRun, state: &[u32]) -> Value {
    let notation = program.spec.notation;
    let devices: Vec<Value> = program
        .mesh
        .devices()
        .map(|d| {
            let pc = program.pc(state, d);
            let next = ((pc as usize) < program.devices[d.index()].len()).then(|| namer.op(d, pc));
            let first = d.index() * program.sems_per_device;
            let sems: Vec<Value> = (0..program.sems_per_device)
                .map(|i| {
                    let slot = SemSlot((first + i) as u32);
                    json!([program.sem_name(slot), program.sem_value(state, slot)])
                })
                .collect();
            let cells: Vec<Value> = slot_cells(program, Some(d))
                .iter()
                .map(|&c| json!([program.cell_name(c), run.values.display(program.cell_value(state, c), notation)]))
                .collect();
            json!({"device": d.to_string(), "next": next, "semaphores": sems, "cells": cells})
        })
        .collect();
    let dmas: Vec<Value> = program
        .dmas(state)
        .map(|r| {
            let what = match program.dma_op(r.key) {
                Op::RemoteDma { .. } => match (r.flags & SENT != 0, r.flags & RECEIVED != 0) {
                    (false, false) => "in flight: not sent, not received",
                    (true, false) => "sent (source read), not yet received",
                    (false, true) => "received, source not yet released",
                    (true, true) => "complete",
                },
                _ => "in flight: not done",
            };
            json!({"dma": namer.op(r.key.issuer, r.key.pc), "state": what})
        })
        .collect();
    let shared: Vec<Value> = slot_cells(program, None)
        .iter()
        .map(|&c| json!([program.cell_name(c), run.values.display(program.cell_value(state, c), notation)]))
        .collect();
    json!({"devices": devices, "dmas": dmas, "shared": shared})
}

#[cfg(test)]
mod tests {
    #[test]
    fn script_safe_json_has_no_markup_and_parses_to_the_same_value() {
        let value = serde_json::json!({"code": "x = \"</script><!--<b>&amp;\u{2028}\u{2029}\\\"", "<key>": 1});
        let safe = super::script_safe(&serde_json::to_string(&value).unwrap());
        assert!(!safe.contains(['<', '>', '&', '\u{2028}', '\u{2029}']), "{safe}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), value);
    }
}
