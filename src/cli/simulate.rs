//! `semcheck simulate PROTOCOL [--lockstep]`: run a protocol in the seed's lock-step schedule
//! and print its traversal tables.

use clap::{Args, ValueEnum};
use semcheck::checker::counterexample::lockstep;
use semcheck::checker::counterexample::render::{table, TableSection};
use semcheck::model::program::SemSlot;
use semcheck::ModelError;
use serde_json::json;

use super::args::{BudgetArgs, CaseArgs};
use super::watch::{watch, Style};
use super::{emit, emitln, EXIT_PROVED, EXIT_VIOLATION};

/// How the simulation is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum SimFormat {
    /// The traversal tables.
    Table,
    /// Every event of the run, then the tables.
    Text,
    /// JSON: every checkpoint, every device's slots and semaphores.
    Json,
}

/// Arguments of `semcheck simulate`.
#[derive(Args, Debug)]
pub(crate) struct SimulateArgs {
    /// The protocol or kernel file, mutant, mesh sizes (default: 4 on a ring, 2 on the
    /// TensorCores), repeat count.
    #[command(flatten)]
    pub(crate) case: CaseArgs,
    /// The lock-step schedule of the seed's tables (every device finishes a grid index
    /// before any starts the next): the only schedule `simulate` runs, and so the default;
    /// the flag says so explicitly.
    #[arg(long)]
    pub(crate) lockstep: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SimFormat::Table)]
    format: SimFormat,
    /// The same as `--format json`.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// Time and memory budgets.
    #[command(flatten)]
    pub(crate) budget: BudgetArgs,
    /// The kernel file's script's own arguments, after `--`.
    #[command(flatten)]
    pub(crate) script: super::args::ScriptArgs,
}

/// The mesh size `simulate` uses without `--devices`: the seed tables' 4 on a ring, the
/// 2 TensorCores otherwise.
fn default_devices(target: &str) -> usize {
    match semcheck::protocols::find(target) {
        Ok(p) if p.mesh_kind == semcheck::protocols::MeshKind::TensorCores => 2,
        _ => 4,
    }
}

pub(crate) fn run(args: &SimulateArgs) -> Result<i32, ModelError> {
    let mut code = EXIT_PROVED;
    let w = watch();
    // `--json` is `--format json`.
    let format = if args.json { SimFormat::Json } else { args.format };
    let report = if format == SimFormat::Json { Style::Json } else { Style::Text };
    for case in args.case.cases(default_devices(&args.case.target), report)? {
        if w.interrupted() {
            break;
        }
        w.case(&case.to_string(), report);
        w.doing("compiling the kernel", false);
        let program = semcheck::program(&case)?;
        code = code.max(simulate(&case, &program, format));
    }
    Ok(code)
}

fn simulate(case: &semcheck::Case, program: &semcheck::Program, format: SimFormat) -> i32 {
    let w = watch();
    w.doing("running the lock-step schedule", false);
    let sim = lockstep(program);
    w.idle();
    let sim = match sim {
        Ok(sim) => sim,
        Err(e) => {
            eprintln!("semcheck: {case}: {e}");
            return EXIT_VIOLATION;
        }
    };
    let titles: Vec<String> = sim
        .checkpoints
        .iter()
        .map(|c| if c.name == "initial" { c.name.clone() } else { format!("after {}", c.name) })
        .collect();
    let sections: Vec<TableSection<'_>> =
        sim.checkpoints.iter().zip(&titles).map(|(c, t)| TableSection { title: t, state: &c.state }).collect();
    match format {
        SimFormat::Table => emit(&table(program, &sim.values, &sections)),
        SimFormat::Text => {
            for (i, e) in sim.events.iter().enumerate() {
                emitln!("{:>4}. {e}", i + 1);
            }
            emit("\n");
            emit(&table(program, &sim.values, &sections));
        }
        SimFormat::Json => {
            let notation = program.spec.notation;
            let checkpoints: Vec<_> = sim
                .checkpoints
                .iter()
                .map(|c| {
                    let devices: Vec<_> = program
                        .mesh
                        .devices()
                        .map(|d| {
                            let slots: serde_json::Map<String, serde_json::Value> =
                                semcheck::checker::counterexample::render::slot_cells(program, Some(d))
                                    .into_iter()
                                    .map(|cell| {
                                        let v = sim.values.display(program.cell_value(&c.state, cell), notation);
                                        (program.cell_name(cell), json!(v))
                                    })
                                    .collect();
                            let first = d.index() * program.sems_per_device;
                            let sems: serde_json::Map<String, serde_json::Value> = (first
                                ..first + program.sems_per_device)
                                .map(|s| {
                                    let slot = SemSlot(s as u32);
                                    (program.sem_name(slot), json!(program.sem_value(&c.state, slot)))
                                })
                                .collect();
                            json!({"device": d.0, "slots": slots, "semaphores": sems})
                        })
                        .collect();
                    json!({"checkpoint": c.name, "devices": devices})
                })
                .collect();
            let v = json!({"source": case.source, "protocol": case.source.protocol(), "mutant": case.source.mutant(),
                "devices": case.devices, "repeat": case.repeat, "schedule": "lockstep", "checkpoints": checkpoints});
            super::output::emit_document(&super::output::document("simulate", v));
        }
    }
    EXIT_PROVED
}
