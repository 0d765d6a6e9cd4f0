//! `semcheck engines`: every corpus case on every engine the binary has, run and judged by
//! the one corpus runner ([`semcheck::corpus`]), and where they agree (loom needs
//! the `loom` feature at build time: its column comes from `tests/loom.rs`).

use super::watch::{watch, Style};
use clap::Args;
use semcheck::corpus::{cases, cell, judge, run as run_case, Budget, Engine, Expect, Judgement};
use semcheck::{ErrorKind, ModelError};

use super::{emitln, EXIT_INCOMPLETE, EXIT_PROVED, EXIT_VIOLATION};

/// Arguments of `semcheck engines`.
#[derive(Args, Debug)]
pub(crate) struct EnginesArgs {
    /// Mesh sizes to run (comma-separated; the corpus has 2, 4 and 8).
    #[arg(long, value_delimiter = ',', default_values_t = [2usize, 4])]
    pub(crate) devices: Vec<usize>,
    /// Shuttle iterations per scheduler and case (the budget a mutant must be caught in).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub(crate) iterations: u64,
    /// Explorer seconds per case.
    #[arg(long, default_value_t = 20.0, value_parser = super::args::positive_seconds)]
    pub(crate) max_seconds: f64,
}

/// The engines of the table, in its column order.
const COLUMNS: [Engine; 3] = [Engine::Explore, Engine::ShuttleRandom, Engine::ShuttlePct];

pub(crate) fn run(args: &EnginesArgs) -> Result<i32, ModelError> {
    if let Some(n) = args.devices.iter().find(|n| ![2, 4, 8].contains(n)) {
        return Err(ModelError::new(ErrorKind::UnknownName, format!("the corpus has N = 2, 4 and 8, not {n}")));
    }
    let it = args.iterations as usize;
    let budget = Budget { explore_seconds: args.max_seconds, shuttle_iterations: Some(it), ..Budget::default() };
    let names = COLUMNS.map(Engine::name);
    emitln!("{:<41} {:<8} {:<22} {:<22} {:<22} agree", "case", "expect", names[0], names[1], names[2]);
    let mut worst = Judgement::Agree;
    let mut notes = Vec::new();
    watch().case("engines", Style::Text);
    watch().working("running the agreement table");
    watch().so_far("the rows printed before are complete");
    for entry in cases().into_iter().filter(|c| args.devices.contains(&c.case.devices)) {
        let mut cells = Vec::new();
        let mut judgement = Judgement::Agree;
        for engine in COLUMNS {
            if entry.skipped_by(engine).is_some() {
                cells.push("skipped".to_string());
                continue;
            }
            let outcome = run_case(engine, &entry, &budget).map_err(|e| {
                ModelError::new(ErrorKind::BadDeclaration, format!("{} on {}: {e}", engine.name(), entry.name()))
            })?;
            judgement = judgement.max(judge(&entry, &outcome));
            cells.push(cell(&outcome));
        }
        let word = match judgement {
            Judgement::Agree => "yes",
            Judgement::Missed => "missed",
            Judgement::Disagree => "NO",
        };
        if judgement != Judgement::Agree {
            notes.push(format!("{}: {word}", entry.name()));
        }
        worst = worst.max(judgement);
        let expect = if matches!(entry.expect, Expect::Broken(_)) { "broken" } else { "clean" };
        emitln!("{:<41} {:<8} {:<22} {:<22} {:<22} {word}", entry.name(), expect, cells[0], cells[1], cells[2]);
    }
    emitln!("(loom: N = 2 only, run by `cargo test --release --features loom --test loom`; see docs/engines.md)");
    emitln!(
        "(missed: an engine did not find the bug within {it} iterations, or the explorer ran out of its {} s; \
         that is not a contradiction)",
        args.max_seconds
    );
    Ok(match worst {
        Judgement::Agree => {
            emitln!("every engine agrees on every case run");
            EXIT_PROVED
        }
        Judgement::Missed => {
            emitln!("no contradiction; missed: {}", notes.join(", "));
            EXIT_INCOMPLETE
        }
        Judgement::Disagree => {
            emitln!("engines disagree: {}", notes.join(", "));
            EXIT_VIOLATION
        }
    })
}
