//! The seed's traversal-table view: every slot of every device, in the seed's notation
//! (`T2(2+1+0)`, `x0+x3`, `-` for undefined), and every semaphore value, at chosen points.

use semcheck_model::ir::BufferRole;
use semcheck_model::program::{CellId, SemSlot};
use semcheck_model::{DeviceId, Program, ValueTable};

use crate::counterexample::run::{Ending, TracedRun};

/// One table: a title and the state it shows.
#[derive(Clone, Copy, Debug)]
pub struct TableSection<'a> {
    /// What the point is (`after (2)`, `after 7. d0 (0) wait barrier 2`).
    pub title: &'a str,
    /// The state.
    pub state: &'a [u32],
}

/// The non-input cells of a device (or of the shared buffers, for `None`), in order.
pub fn slot_cells(program: &Program, owner: Option<DeviceId>) -> Vec<CellId> {
    (0..program.cells.len() as u32)
        .map(CellId)
        .filter(|c| {
            let info = &program.cells[c.0 as usize];
            info.owner == owner && program.buffers[info.buffer].role != BufferRole::Input
        })
        .collect()
}

fn aligned(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> =
        (0..cols).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in rows {
        // Padded by hand: a format width is limited to 65535 and a value can be longer.
        let line: Vec<String> =
            r.iter().enumerate().map(|(c, s)| format!("{s}{}", " ".repeat(widths[c] - s.chars().count()))).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// Renders one table per section: a row per device with its slots and semaphores, and a
/// row for the shared buffers if the program has any.
pub fn table(program: &Program, values: &ValueTable, sections: &[TableSection<'_>]) -> String {
    let notation = program.spec.notation;
    let d0 = DeviceId(0);
    let slots0 = slot_cells(program, Some(d0));
    let shared = slot_cells(program, None);
    let sems: Vec<usize> = (0..program.sems_per_device).collect();
    let mut out = String::new();
    for s in sections {
        out.push_str(&format!("== {} ==\n", s.title));
        let mut head = vec!["device".to_string()];
        head.extend(slots0.iter().map(|&c| program.cell_name(c)));
        head.push("|".into());
        head.extend(sems.iter().map(|&i| program.sem_name(SemSlot(i as u32))));
        let mut rows = vec![head];
        for d in program.mesh.devices() {
            let mut row = vec![d.to_string()];
            row.extend(
                slot_cells(program, Some(d)).iter().map(|&c| values.display(program.cell_value(s.state, c), notation)),
            );
            row.push("|".into());
            let first = d.index() * program.sems_per_device;
            row.extend(sems.iter().map(|&i| program.sem_value(s.state, SemSlot((first + i) as u32)).to_string()));
            rows.push(row);
        }
        if !shared.is_empty() {
            let mut head = vec!["shared".to_string()];
            head.extend(shared.iter().map(|&c| program.cell_name(c)));
            rows.push(head);
            let mut row = vec![String::new()];
            row.extend(shared.iter().map(|&c| values.display(program.cell_value(s.state, c), notation)));
            rows.push(row);
        }
        out.push_str(&aligned(&rows));
        out.push('\n');
    }
    out
}

/// The table view of a counterexample: the initial state, then the state after every
/// event (for the event that breaks the rule, the state it broke it in).
pub fn table_of_trace(program: &Program, run: &TracedRun) -> String {
    let mut titles = vec!["initial".to_string()];
    let mut states: Vec<&[u32]> = vec![&run.states[0]];
    for (i, name) in run.names.iter().enumerate() {
        match &run.ending {
            Ending::Violation { at, violation } if *at == i => {
                titles.push(format!("{}. {name} -- breaks {} (state before it)", i + 1, violation.rule));
                states.push(&run.states[i]);
            }
            _ => {
                titles.push(format!("after {}. {name}", i + 1));
                states.push(&run.states[i + 1]);
            }
        }
    }
    let sections: Vec<TableSection<'_>> =
        titles.iter().zip(&states).map(|(t, s)| TableSection { title: t, state: s }).collect();
    let mut out = table(program, &run.values, &sections);
    if let Some(v) = run.ending.violation() {
        out.push_str(&format!("{v}\n"));
    }
    out
}
