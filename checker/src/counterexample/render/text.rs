//! The per-device column timeline.

use semcheck_model::Program;

use super::{short_name, title, wrap};
use crate::counterexample::causes::notes;
use crate::counterexample::explain::explain;
use crate::counterexample::format::Header;
use crate::counterexample::names::Namer;
use crate::counterexample::run::{Ending, TracedRun};

/// Width of a device column.
const COLUMN: usize = 44;

/// One row per event, in the column of the device it happens on (a DMA's *received* in
/// the target's column), the events of the explanation marked `*`; the violation and its
/// explanation below.
pub fn text(program: &Program, header: &Header, run: &TracedRun) -> String {
    let namer = Namer::new(program);
    let (notes, about) = notes(program, run);
    let n = program.num_devices();
    let mut out = format!("{}: {} events\n\n", title(header), run.events.len());
    let rule = |out: &mut String| {
        out.push_str(&format!("{:->6}", "+"));
        for _ in 0..n {
            out.push_str(&format!("{:-<w$}+", "", w = COLUMN + 2));
        }
        out.push('\n');
    };
    rule(&mut out);
    out.push_str("   # |");
    for d in program.mesh.devices() {
        out.push_str(&format!(" {:<w$} |", d.to_string(), w = COLUMN));
    }
    out.push('\n');
    rule(&mut out);
    let core = explain(program, run).indices();
    for (i, (&event, name)) in run.events.iter().zip(&run.names).enumerate() {
        let col = namer.device_of(event).index();
        let mut text = short_name(&namer, event, name);
        if core.contains(&i) && !matches!(run.ending, Ending::Violation { at, .. } if at == i) {
            text = format!("* {text}");
        }
        if matches!(run.ending, Ending::Violation { at, .. } if at == i) {
            text = format!("!! {text}");
        }
        if let Some(note) = &notes[i] {
            text = format!("{text} [{note}]");
        }
        for (k, line) in wrap(&text, COLUMN).iter().enumerate() {
            if k == 0 {
                out.push_str(&format!("{:>4} |", i + 1));
            } else {
                out.push_str("     |");
            }
            for d in 0..n {
                let cell = if d == col { line.as_str() } else { "" };
                out.push_str(&format!(" {cell:<w$} |", w = COLUMN));
            }
            out.push('\n');
        }
    }
    rule(&mut out);
    match &run.ending {
        Ending::Violation { at, violation } => {
            out.push_str(&format!(
                "\nevent {} (marked !!) breaks {}:\n  {}\n",
                at + 1,
                violation.rule,
                violation.message
            ));
            if let Some(about) = about {
                out.push_str(&format!("  ({about})\n"));
            }
        }
        Ending::Deadlock(v) => {
            out.push_str(&format!("\nafter the last event no event is enabled: {}\n  {}\n", v.rule, v.message))
        }
        Ending::Clean => out.push_str("\nno rule is broken\n"),
    }
    let explanation = explain(program, run);
    if !explanation.points.is_empty() {
        out.push_str(&format!("\nwhy ({} of {} events):\n", explanation.indices().len(), run.events.len()));
        for line in explanation.lines() {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}
