//! A Mermaid `sequenceDiagram`: devices as participants, signals and landing DMAs as
//! arrows, waits and local work as notes, the violation highlighted in red.

use semcheck_model::program::Op;
use semcheck_model::{Event, Program};

use super::{short_name, step_op, wrap};
use crate::counterexample::names::Namer;
use crate::counterexample::run::{Ending, TracedRun};

/// Mermaid's statement separator `;` and entity start `#` cannot appear in message text;
/// they are written as entity codes, and long text is wrapped with `<br/>`.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '#' => out.push_str("#35;"),
            ';' => out.push_str("#59;"),
            c => out.push(c),
        }
    }
    wrap(&out, 56).join("<br/>")
}

/// The diagram.
pub fn mermaid(program: &Program, run: &TracedRun) -> String {
    let namer = Namer::new(program);
    let mut out = String::from("sequenceDiagram\n");
    for d in program.mesh.devices() {
        out.push_str(&format!("    participant {d}\n"));
    }
    let all = format!("d0,d{}", program.num_devices().saturating_sub(1));
    let all = if program.num_devices() == 1 { "d0".to_string() } else { all };
    for (i, (&event, name)) in run.events.iter().zip(&run.names).enumerate() {
        let state = &run.states[i];
        let breaks = matches!(&run.ending, Ending::Violation { at, .. } if *at == i);
        if breaks {
            out.push_str("    rect rgb(255, 200, 200)\n");
        }
        let n = i + 1;
        let line = match (event, step_op(program, state, event)) {
            (_, Some((d, _, Op::Signal { target, .. }))) if target != d => {
                format!("{d}->>{target}: {}", esc(&format!("{n}. {}", short_name(&namer, event, name))))
            }
            (Event::Received(k), _) | (Event::CellLanded(k, _), _)
                if matches!(program.dma_op(k), Op::RemoteDma { .. }) =>
            {
                let target = namer.device_of(event);
                format!("{}--){target}: {}", k.issuer, esc(&format!("{n}. {name}")))
            }
            _ => {
                let d = namer.device_of(event);
                format!("Note over {d}: {}", esc(&format!("{n}. {}", short_name(&namer, event, name))))
            }
        };
        out.push_str(&format!("    {line}\n"));
        if let Ending::Violation { at, violation } = &run.ending {
            if *at == i {
                out.push_str(&format!("    Note over {all}: {}\n", esc(&format!("VIOLATION {violation}"))));
                out.push_str("    end\n");
            }
        }
    }
    if let Ending::Deadlock(v) = &run.ending {
        out.push_str("    rect rgb(255, 200, 200)\n");
        out.push_str(&format!("    Note over {all}: {}\n", esc(&format!("VIOLATION {v}"))));
        out.push_str("    end\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::esc;

    #[test]
    fn hashes_and_semicolons_become_entity_codes_once() {
        // Regression: escaping `#` first and `;` second turned `#` into `#35#59;`.
        assert_eq!(esc("d0 #1 (0) wait; done"), "d0 #35;1 (0) wait#59; done");
    }
}
