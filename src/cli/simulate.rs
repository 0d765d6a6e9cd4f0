//! `semcheck simulate PROTOCOL --lockstep`: run a protocol in the seed's lock-step schedule
//! and print its traversal tables.

use clap::{Args, ValueEnum};
use semcheck::checker::counterexample::lockstep;
use semcheck::checker::counterexample::render::{table, TableSection};
use semcheck::model::program::SemSlot;
use semcheck::protocols::find;
use semcheck::ModelError;
use serde_json::json;

use super::{EXIT_PROVED, EXIT_USAGE, EXIT_VIOLATION};

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
    /// Protocol name (see `semcheck list`).
    pub(crate) protocol: String,
    /// Simulate this mutant instead.
    #[arg(long)]
    pub(crate) mutant: Option<String>,
    /// Number of devices.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub(crate) devices: u16,
    /// Back-to-back invocations.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub(crate) repeat: u32,
    /// The lock-step schedule of the seed's tables (every device finishes a grid index
    /// before any starts the next). The only schedule `simulate` runs.
    #[arg(long)]
    pub(crate) lockstep: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SimFormat::Table)]
    pub(crate) format: SimFormat,
}

pub(crate) fn run(args: &SimulateArgs) -> Result<i32, ModelError> {
    if !args.lockstep {
        eprintln!("semcheck: error: simulate needs --lockstep (the only schedule it runs)");
        return Ok(EXIT_USAGE);
    }
    let program = find(&args.protocol)?.program(args.devices as usize, args.mutant.as_deref(), args.repeat)?;
    let sim = match lockstep(&program) {
        Ok(sim) => sim,
        Err(e) => {
            eprintln!("semcheck: {e}");
            return Ok(EXIT_VIOLATION);
        }
    };
    let titles: Vec<String> = sim
        .checkpoints
        .iter()
        .map(|c| if c.name == "initial" { c.name.clone() } else { format!("after {}", c.name) })
        .collect();
    let sections: Vec<TableSection<'_>> =
        sim.checkpoints.iter().zip(&titles).map(|(c, t)| TableSection { title: t, state: &c.state }).collect();
    match args.format {
        SimFormat::Table => print!("{}", table(&program, &sim.values, &sections)),
        SimFormat::Text => {
            for (i, e) in sim.events.iter().enumerate() {
                println!("{:>4}. {e}", i + 1);
            }
            println!();
            print!("{}", table(&program, &sim.values, &sections));
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
                                semcheck::checker::counterexample::render::slot_cells(&program, Some(d))
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
            let v = json!({"protocol": args.protocol, "mutant": args.mutant, "devices": args.devices,
                "repeat": args.repeat, "schedule": "lockstep", "checkpoints": checkpoints});
            println!("{}", serde_json::to_string_pretty(&v).expect("JSON of plain data"));
        }
    }
    Ok(EXIT_PROVED)
}
