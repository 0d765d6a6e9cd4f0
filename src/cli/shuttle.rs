//! `semcheck check … --engine shuttle`: randomized schedules of the threaded runtime, and
//! the replay of a shuttle trace file under shuttle (`--replay FILE`).

use super::usage;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use semcheck::checker::counterexample::TraceFile;
use semcheck::checker::runtime::shuttle_engine::{self, Campaign, RecordedSchedule, SchedulerKind};
use semcheck::checker::{Outcome, Verdict};
use semcheck::{Case, ErrorKind, ModelError, Program, Source};

use super::args::CheckArgs;

/// The engines of `semcheck check`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum EngineArg {
    /// The exhaustive explorer (can prove).
    Explore,
    /// The threaded runtime under shuttle's scheduler (samples; never proves).
    Shuttle,
}

/// Shuttle's schedulers on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum SchedulerArg {
    /// Uniformly random scheduling.
    Random,
    /// Probabilistic concurrency testing (bug depth `--pct-depth`).
    Pct,
}

/// The engine options of `semcheck check`.
#[derive(Args, Debug)]
pub(crate) struct EngineArgs {
    /// The engine.
    #[arg(long, value_enum, default_value_t = EngineArg::Explore)]
    pub(crate) engine: EngineArg,
    /// Shuttle: iterations (executions) to run [default: 1000].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub(crate) iterations: Option<u64>,
    /// Shuttle: the scheduler's seed [default: 0].
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Shuttle: the scheduler [default: random].
    #[arg(long, value_enum)]
    pub(crate) scheduler: Option<SchedulerArg>,
    /// Shuttle: PCT's bug depth [default: 3].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub(crate) pct_depth: Option<u64>,
    /// Shuttle: directory where a violation is saved as a trace file (nothing is written
    /// without it).
    #[arg(long)]
    pub(crate) schedule_dir: Option<PathBuf>,
    /// Shuttle: re-run the shuttle schedule of this trace file instead of searching.
    #[arg(long)]
    pub(crate) replay: Option<PathBuf>,
}

/// `applies` or `apply`, for a list of flags.
fn applies(flags: &[&str]) -> &'static str {
    if flags.len() == 1 {
        "applies"
    } else {
        "apply"
    }
}

/// Refuses options that do not apply to the chosen engine (never silently ignored).
pub(crate) fn validate(args: &CheckArgs) -> Result<(), ModelError> {
    let e = &args.engine;
    match e.engine {
        EngineArg::Explore => {
            let mut given = Vec::new();
            for (set, flag) in [
                (e.iterations.is_some(), "--iterations"),
                (e.seed.is_some(), "--seed"),
                (e.scheduler.is_some(), "--scheduler"),
                (e.pct_depth.is_some(), "--pct-depth"),
                (e.schedule_dir.is_some(), "--schedule-dir"),
                (e.replay.is_some(), "--replay"),
            ] {
                if set {
                    given.push(flag);
                }
            }
            if !given.is_empty() {
                return Err(usage(format!("{} {} to --engine shuttle only", given.join(", "), applies(&given))));
            }
        }
        EngineArg::Shuttle => {
            let given = args.explore.explorer_only();
            if !given.is_empty() {
                return Err(usage(format!(
                    "{} {} to the explorer, not to --engine shuttle",
                    given.join(", "),
                    applies(&given)
                )));
            }
            if args.case.target == "all" {
                return Err(usage("`check all` runs the explorer; `semcheck engines` runs every engine"));
            }
            if e.replay.is_some() {
                let searching = [
                    (e.iterations.is_some(), "--iterations"),
                    (e.seed.is_some(), "--seed"),
                    (e.scheduler.is_some(), "--scheduler"),
                    (e.pct_depth.is_some(), "--pct-depth"),
                    (args.explore.budget.max_seconds.is_some(), "--max-seconds"),
                ];
                let given: Vec<&str> = searching.iter().filter(|(set, _)| *set).map(|(_, flag)| *flag).collect();
                if !given.is_empty() {
                    let verb = if given.len() == 1 { "configures" } else { "configure" };
                    return Err(usage(format!("{} {verb} a search; --replay runs one schedule", given.join(", "))));
                }
            }
        }
    }
    Ok(())
}

/// Runs a shuttle campaign (or replays `--replay`) on one case.
pub(crate) fn run(args: &CheckArgs, case: &Case, program: &Program) -> Result<Outcome, ModelError> {
    let e = &args.engine;
    if let Some(path) = &e.replay {
        return replay(path, case, program, super::replay::read_cap(args.explore.budget.memory_bytes()));
    }
    let scheduler = match e.scheduler.unwrap_or(SchedulerArg::Random) {
        SchedulerArg::Random => SchedulerKind::Random,
        SchedulerArg::Pct => SchedulerKind::Pct { depth: e.pct_depth.unwrap_or(3) as usize },
    };
    let campaign = Campaign {
        scheduler,
        iterations: e.iterations.unwrap_or(1000) as usize,
        seed: e.seed.unwrap_or(0),
        max_seconds: args.explore.budget.max_seconds,
    };
    let outcome = shuttle_engine::check(program, campaign).map_err(usage)?;
    if let Verdict::Violation(_) = &outcome.verdict {
        match &e.schedule_dir {
            Some(dir) => {
                let path = save(dir, case, program, &outcome)?;
                let p = path.display();
                eprintln!(
                    "semcheck: saved to {p}: `semcheck replay {p}` replays it on the model, \
                     `semcheck check ... --engine shuttle --replay {p}` under shuttle"
                );
            }
            None => eprintln!("semcheck: --schedule-dir DIR saves the counterexample as a trace file"),
        }
    }
    Ok(outcome)
}

/// The file name of a case's shuttle trace: `psum--no-capacity--n4.trace`.
pub(crate) fn file_name(case: &Case) -> String {
    let kernel = match &case.source {
        Source::Catalogue { protocol, mutant } => match mutant {
            Some(m) => format!("{protocol}--{m}"),
            None => protocol.clone(),
        },
        Source::Python { path, kernel, .. } => {
            let stem = path.file_stem().map_or("kernel".into(), |s| s.to_string_lossy().into_owned());
            kernel.as_ref().map_or(stem.clone(), |k| format!("{stem}--{k}"))
        }
        Source::Dsl { name } => name.clone(),
    };
    format!("{kernel}--n{}.trace", case.devices)
}

fn save(dir: &Path, case: &Case, program: &Program, outcome: &Outcome) -> Result<PathBuf, ModelError> {
    let file = shuttle_engine::trace_file(program, case, outcome).map_err(|e| {
        ModelError::new(
            ErrorKind::BadDeclaration,
            format!("internal error: the shuttle schedule does not replay on the model, so it is not saved: {e}"),
        )
    })?;
    std::fs::create_dir_all(dir).map_err(|e| usage(format!("cannot create {}: {e}", dir.display())))?;
    let path = dir.join(file_name(case));
    std::fs::write(&path, file.to_text()).map_err(|e| usage(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

/// Re-runs the shuttle schedule of a trace file; every problem with the file is one line
/// naming the line at fault.
fn replay(path: &Path, case: &Case, program: &Program, cap: u64) -> Result<Outcome, ModelError> {
    let name = path.display();
    // A regular file only (a FIFO could block forever: --replay takes no time budget),
    // read with the cap `semcheck replay` uses under the same memory budget.
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return Err(usage(format!("{name} is not a regular file")));
    }
    let bytes = super::replay::read_bounded(path, cap).map_err(|e| usage(format!("cannot read {name}: {e}")))?;
    let file = TraceFile::parse_bytes(&bytes).map_err(|e| usage(format!("{name}: {e}")))?;
    if file.header.case != *case {
        return Err(usage(format!("{name} was recorded for {}, not for {case}", file.header.case)));
    }
    let text = String::from_utf8_lossy(&bytes);
    let line = text.lines().position(|l| l.starts_with("engine-schedule")).map_or(0, |i| i + 1);
    let at = |msg: String| usage(format!("{name}: line {line}: {msg}"));
    let schedule = file.header.engine_schedule.as_deref().ok_or_else(|| {
        usage(format!("{name} has no `engine-schedule` line to run under shuttle; `semcheck replay {name}` replays it on the model"))
    })?;
    let schedule = RecordedSchedule::parse(schedule).map_err(at)?;
    let outcome = shuttle_engine::replay(program, &schedule).map_err(|e| at(e.to_string()))?;
    let (want, rule_line) = file.rule;
    match outcome.verdict.violation() {
        Some(v) if v.rule != want => {
            Err(usage(format!("{name}: line {rule_line}: the shuttle schedule breaks `{}`, not `{want}`: {v}", v.rule)))
        }
        _ => Ok(outcome),
    }
}
