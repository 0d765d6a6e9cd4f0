//! What a kernel read from a file must compute.
//!
//! * By default, **what it computes in the lock-step schedule** (every device finishes a
//!   grid index before any starts the next; the seed's traversal tables): the value of
//!   every output cell of every device at the end of that run. Any other schedule that
//!   exits with a different value is a `wrong-result`, whose message shows both values.
//!   If the lock-step run itself breaks a rule or cannot finish, there is no reference:
//!   outputs are not compared (the other rules still are), and a note says why.
//! * `--expect all_gather|psum|psum_scatter|ppermute`: the collective's own definition on
//!   the kernel's first input and first output buffer, whose cell shapes must fit it.

use semcheck_model::compile::{input_atom, input_ordinal, with_spec};
use semcheck_model::ir::{BufferDecl, Kernel};
use semcheck_model::{compile, Atom, ErrorKind, Expectation, Expected, Mesh, ModelError, Program, Spec};

use semcheck_checker::counterexample::lockstep_unnamed;

/// The references `--expect` knows.
pub const REFERENCES: [&str; 4] = ["all_gather", "psum", "psum_scatter", "ppermute"];

/// The lock-step specification, or an empty one and the reason there is none.
pub fn lockstep_spec(kernel: &Kernel, mesh: &Mesh, repeat: u32) -> Result<(Spec, Option<String>), ModelError> {
    let (_, spec, note) = unspecified(kernel, mesh, repeat)?;
    Ok((spec, note))
}

/// The kernel compiled for `mesh` and checked against what it computes in lock step (or
/// against nothing, with the reason there is no reference): the program
/// `compile(kernel, mesh, &lockstep_spec(..).0, repeat)` makes, compiled once.
pub fn lockstep_program(kernel: &Kernel, mesh: &Mesh, repeat: u32) -> Result<(Program, Option<String>), ModelError> {
    let (program, spec, note) = unspecified(kernel, mesh, repeat)?;
    Ok((with_spec(program, &spec)?, note))
}

/// The kernel compiled against an empty specification, with its lock-step specification
/// (or an empty one and why there is none).
fn unspecified(kernel: &Kernel, mesh: &Mesh, repeat: u32) -> Result<(Program, Spec, Option<String>), ModelError> {
    let program = compile(kernel, mesh, &Spec::plain(vec![]), repeat)?;
    let (spec, note) = spec_of(&program);
    Ok((program, spec, note))
}

/// What `program` (compiled against an empty specification) leaves in its output cells
/// at the end of its lock-step run, or an empty specification and why there is none.
fn spec_of(program: &Program) -> (Spec, Option<String>) {
    let sim = match lockstep_unnamed(program) {
        Ok(sim) => sim,
        Err(e) => {
            return (
                Spec::plain(vec![]),
                Some(format!(
                    "no reference value: {e}; outputs are not compared (races, deadlocks, leaks and writes outside the kernel still are)"
                )),
            )
        }
    };
    let Some(last) = sim.checkpoints.last() else {
        return (Spec::plain(vec![]), Some("the lock-step run is empty".into()));
    };
    let mut outputs = Vec::new();
    for (c, info) in program.cells.iter().enumerate() {
        let decl = &program.buffers[info.buffer];
        if !decl.role.is_output() {
            continue;
        }
        let value = program.cell_value(&last.state, semcheck_model::program::CellId(c as u32));
        outputs.push(Expectation {
            device: info.owner.unwrap_or(semcheck_model::DeviceId(0)),
            buffer: decl.name.clone(),
            index: info.index.clone(),
            value: Expected::of_value(&sim.values, value),
        });
    }
    (Spec::plain(outputs), None)
}

fn cells(shape: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new()];
    for &s in shape {
        out = out.into_iter().flat_map(|p| (0..s).map(move |i| [p.clone(), vec![i]].concat())).collect();
    }
    out
}

/// Checks that `name` is one of the [`REFERENCES`]; the error says which there are
/// (the caller names where `name` came from: `--expect`, a trace's `kernel-expect`).
pub fn known_reference(name: &str) -> Result<(), String> {
    if REFERENCES.contains(&name) {
        Ok(())
    } else {
        Err(format!("unknown reference; the references are: {}", REFERENCES.join(", ")))
    }
}

/// The specification of a named collective over the kernel's first input and output.
pub fn reference_spec(name: &str, kernel: &Kernel, mesh: &Mesh) -> Result<Spec, ModelError> {
    let bad =
        |m: String| ModelError::new(ErrorKind::Unsupported, format!("--expect {name}: kernel {}: {m}", kernel.name));
    known_reference(name).map_err(|e| ModelError::new(ErrorKind::UnknownName, format!("--expect {name}: {e}")))?;
    if mesh.axes().len() != 1 {
        return Err(bad(format!("the references are defined on a 1-D ring, the mesh is {mesh}")));
    }
    let find = |pred: fn(&BufferDecl) -> bool, what: &str| {
        kernel.buffers.iter().find(|b| pred(b)).ok_or_else(|| bad(format!("the kernel has no {what} buffer")))
    };
    let input = find(|b| b.role.has_input() && !b.shared, "input")?;
    let output = find(|b| b.role.is_output() && !b.shared, "output")?;
    let n = mesh.num_devices();
    let (ins, outs) = (&input.shape, &output.shape);
    let cells_of = |shape: &[usize]| match shape {
        [] => "is one cell (copied only whole)".to_string(),
        s => format!("has cells of shape {s:?}"),
    };
    let shape_err = |want: String| {
        bad(format!(
            "the output `{}` {} and the input `{}` {}; {name} needs {want} (docs/kernel-files.md, the specification)",
            output.name,
            cells_of(outs),
            input.name,
            cells_of(ins)
        ))
    };
    let ordinal = kernel.buffers.iter().position(|b| std::ptr::eq(b, input)).and_then(|i| input_ordinal(kernel, i));
    let ordinal = ordinal.expect("the input is one of the kernel's input buffers");
    let atom = |origin: usize, index: &[usize]| -> Atom { input_atom(ordinal, origin as u16, index, ins) };
    let mut outputs = Vec::new();
    for d in 0..n {
        for idx in cells(outs) {
            let value = match name {
                "ppermute" => {
                    if ins != outs {
                        return Err(shape_err("the same cells".into()));
                    }
                    Expected::Sum(vec![atom((d + n - 1) % n, &idx)])
                }
                "all_gather" => {
                    if outs.first() != Some(&n) || outs[1..] != ins[..] {
                        return Err(shape_err(format!("the output's cells to be [{n}] followed by the input's")));
                    }
                    Expected::Sum(vec![atom(idx[0], &idx[1..])])
                }
                "psum" => {
                    if ins != outs {
                        return Err(shape_err("the same cells".into()));
                    }
                    Expected::Sum((0..n).map(|e| atom(e, &idx)).collect())
                }
                _ => {
                    if ins.first() != Some(&n) || ins[1..] != outs[..] {
                        return Err(shape_err(format!("the input's cells to be [{n}] followed by the output's")));
                    }
                    let full: Vec<usize> = [vec![d], idx.clone()].concat();
                    Expected::Sum((0..n).map(|e| atom(e, &full)).collect())
                }
            };
            outputs.push(Expectation {
                device: semcheck_model::DeviceId(d as u16),
                buffer: output.name.clone(),
                index: idx,
                value,
            });
        }
    }
    Ok(Spec::plain(outputs))
}
