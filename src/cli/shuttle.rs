//! `semcheck check … --engine shuttle`: randomized schedules of the threaded runtime.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use semcheck::checker::runtime::shuttle_engine::{
    check, replay, Campaign, ScheduleFile, SchedulerKind, ShuttleReport, ShuttleVerdict,
};
use semcheck::model::ErrorKind;
use semcheck::protocols::find;
use semcheck::ModelError;
use serde_json::json;

use super::args::CheckArgs;
use super::{EXIT_INCOMPLETE, EXIT_PROVED, EXIT_VIOLATION};

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
    /// Shuttle: directory where a failing schedule is saved [default: counterexamples/shuttle].
    #[arg(long)]
    pub(crate) schedule_dir: Option<PathBuf>,
    /// Shuttle: replay this schedule file instead of searching.
    #[arg(long)]
    pub(crate) replay: Option<PathBuf>,
}

fn usage(msg: impl Into<String>) -> ModelError {
    ModelError::new(ErrorKind::UnknownName, msg)
}

/// `Some(result)` when the arguments ask for shuttle (or misuse its options).
pub(crate) fn dispatch(args: &CheckArgs) -> Option<Result<i32, ModelError>> {
    let e = &args.engine;
    if e.engine == EngineArg::Explore {
        let shuttle_only = e.iterations.is_some()
            || e.seed.is_some()
            || e.scheduler.is_some()
            || e.pct_depth.is_some()
            || e.schedule_dir.is_some()
            || e.replay.is_some();
        return shuttle_only.then(|| {
            Err(usage(
                "--iterations, --seed, --scheduler, --pct-depth, --schedule-dir and --replay apply to --engine shuttle only",
            ))
        });
    }
    Some(run(args))
}

fn run(args: &CheckArgs) -> Result<i32, ModelError> {
    if args.case.protocol == "all" {
        return Err(usage("`check all` runs the explorer; use `semcheck engines` for every engine"));
    }
    let e = &args.engine;
    let p = find(&args.case.protocol)?;
    let repeat = p.repeat_for(args.case.mutant.as_deref(), args.case.repeat)?;
    let devices = args.case.devices as usize;
    let program = p.program(devices, args.case.mutant.as_deref(), repeat)?;
    quiet_panics();
    if let Some(path) = &e.replay {
        let f = ScheduleFile::read(path).map_err(usage)?;
        if f.protocol != args.case.protocol
            || f.mutant != args.case.mutant
            || f.devices != devices
            || f.repeat != repeat
        {
            return Err(usage(format!(
                "{} was recorded for {} {} N={} repeat {}, not for these arguments",
                path.display(),
                f.protocol,
                f.mutant.as_deref().unwrap_or("-"),
                f.devices,
                f.repeat
            )));
        }
        let v = replay(&program, &f.schedule).map_err(usage)?;
        return Ok(match v {
            Some(v) => {
                println!("replayed {}: VIOLATION ({})\n  {}", path.display(), v.rule, v.message);
                if v.rule == f.rule {
                    EXIT_VIOLATION
                } else {
                    println!("  but the file records rule {}", f.rule);
                    EXIT_INCOMPLETE
                }
            }
            None => {
                println!("replayed {}: the schedule no longer breaks a rule", path.display());
                EXIT_PROVED
            }
        });
    }
    let scheduler = match e.scheduler.unwrap_or(SchedulerArg::Random) {
        SchedulerArg::Random => SchedulerKind::Random,
        SchedulerArg::Pct => SchedulerKind::Pct { depth: e.pct_depth.unwrap_or(3) as usize },
    };
    let campaign = Campaign { scheduler, iterations: e.iterations.unwrap_or(1000) as usize, seed: e.seed.unwrap_or(0) };
    let report = check(&program, campaign).map_err(usage)?;
    let head = format!(
        "{}{}, {} devices, repeat {}",
        args.case.protocol,
        args.case.mutant.as_deref().map_or(String::new(), |m| format!(" --mutant {m}")),
        devices,
        repeat
    );
    let file = match &report.verdict {
        ShuttleVerdict::Violation { .. } => Some(save(args, devices, repeat, &report)?),
        _ => None,
    };
    if args.json {
        let out = json!({
            "protocol": args.case.protocol, "mutant": args.case.mutant, "devices": devices, "repeat": repeat,
            "engine": "shuttle", "scheduler": scheduler.name(), "seed": campaign.seed,
            "report": report, "schedule_file": file.as_ref().map(|f| f.display().to_string()),
        });
        println!("{}", serde_json::to_string_pretty(&out).expect("JSON of plain data"));
    }
    Ok(match &report.verdict {
        ShuttleVerdict::Violation { violation, iteration, schedule } => {
            if !args.json {
                println!("{head}: VIOLATION ({})\n  {}", violation.rule, violation.message);
                println!(
                    "  found by shuttle's {} scheduler (seed {}) at iteration {iteration} of at most {}; {} scheduling steps",
                    scheduler.name(),
                    campaign.seed,
                    campaign.iterations,
                    schedule.steps.len()
                );
                let path = file.as_ref().expect("saved").display().to_string();
                println!("  schedule saved to {path}");
                println!(
                    "  replay: semcheck check {}{} --devices {devices} --repeat {repeat} --engine shuttle --replay {path}",
                    args.case.protocol,
                    args.case.mutant.as_deref().map_or(String::new(), |m| format!(" --mutant {m}"))
                );
            }
            EXIT_VIOLATION
        }
        ShuttleVerdict::Incomplete { iterations } => {
            if !args.json {
                println!("{head}: INCOMPLETE");
                println!(
                    "  no rule broken in {iterations} iterations of shuttle's {} scheduler (seed {}); sampled schedules prove nothing",
                    scheduler.name(),
                    campaign.seed
                );
            }
            EXIT_INCOMPLETE
        }
    })
}

fn save(args: &CheckArgs, devices: usize, repeat: u32, report: &ShuttleReport) -> Result<PathBuf, ModelError> {
    let ShuttleVerdict::Violation { violation, iteration, schedule } = &report.verdict else {
        unreachable!("saving a violation")
    };
    let dir = args.engine.schedule_dir.clone().unwrap_or_else(|| Path::new("counterexamples/shuttle").to_path_buf());
    std::fs::create_dir_all(&dir).map_err(|e| usage(format!("cannot create {}: {e}", dir.display())))?;
    let name =
        format!("{}-{}-n{devices}.schedule", args.case.protocol, args.case.mutant.as_deref().unwrap_or("correct"));
    let path = dir.join(name);
    let f = ScheduleFile {
        protocol: args.case.protocol.clone(),
        mutant: args.case.mutant.clone(),
        devices,
        repeat,
        rule: violation.rule,
        found_by: format!(
            "{} scheduler, seed {}, iteration {iteration}",
            report.campaign.scheduler.name(),
            report.campaign.seed
        ),
        message: violation.message.clone(),
        schedule: schedule.clone(),
    };
    std::fs::write(&path, f.to_text(&path.display().to_string()))
        .map_err(|e| usage(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

/// Silences the panic messages with which violations stop shuttle's executions (the
/// verdict reports them).
pub(crate) fn quiet_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = semcheck::checker::runtime::checks::panic_message(info.payload());
        if !msg.starts_with(semcheck::checker::runtime::checks::VIOLATION_PANIC) && !msg.starts_with("deadlock") {
            previous(info);
        }
    }));
}
