//! Renderings of a counterexample (and of the lock-step tables): text, table, mermaid, dot,
//! JSON and a self-contained HTML page.

mod dot;
mod html;
pub mod json;
mod mermaid;
mod table;
mod text;

pub use dot::dot;
pub use html::html;
pub use json::json;
pub use mermaid::mermaid;
pub use table::{slot_cells, table, table_of_trace, TableSection};
pub use text::text;

use semcheck_model::program::Op;
use semcheck_model::{DeviceId, Event, Program};

use super::format::Header;
use super::names::Namer;
use super::run::TracedRun;

/// The renderings `semcheck trace` and `semcheck replay` offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A per-device column timeline.
    Text,
    /// The seed's traversal-table view after every event.
    Table,
    /// A Mermaid `sequenceDiagram`.
    Mermaid,
    /// A Graphviz happens-before (and wait-for) graph.
    Dot,
    /// JSON.
    Json,
    /// One self-contained HTML page.
    Html,
}

/// Renders a counterexample in `format`.
pub fn render(format: Format, program: &Program, header: &Header, run: &TracedRun) -> String {
    match format {
        Format::Text => text(program, header, run),
        Format::Table => table_of_trace(program, run),
        Format::Mermaid => mermaid(program, run),
        Format::Dot => dot(program, run),
        Format::Json => json(program, header, run),
        Format::Html => html(program, header, run),
    }
}

/// The operation a step event runs, if it is a step.
pub(crate) fn step_op(program: &Program, state: &[u32], event: Event) -> Option<(DeviceId, u32, Op)> {
    match event {
        Event::Step(d) => {
            let pc = program.pc(state, d);
            Some((d, pc, program.devices[d.index()].ops[pc as usize]))
        }
        _ => None,
    }
}

/// An event's name without its leading device (`(0) wait barrier 2` for
/// `d1 (0) wait barrier 2`), for views that already place it in the device's column.
pub(crate) fn short_name(namer: &Namer<'_>, event: Event, name: &str) -> String {
    let prefix = format!("{} ", namer.device_of(event));
    match event {
        Event::Step(_) => name.strip_prefix(&prefix).unwrap_or(name).to_string(),
        _ => name.to_string(),
    }
}

/// The header as one line: `psum/no-capacity N=2`.
pub(crate) fn title(header: &Header) -> String {
    header.case.to_string()
}

/// Greedy word wrap at `width` characters (words longer than that stay whole).
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}
