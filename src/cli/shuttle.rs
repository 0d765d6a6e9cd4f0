//! `semcheck check … --engine shuttle`: randomized schedules of the threaded runtime.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use semcheck::checker::runtime::shuttle_engine::{
    check, replay, Campaign, ScheduleFile, SchedulerKind, ShuttleReport, ShuttleVerdict,
};
use semcheck::checker::{Counterexample, EngineRun, Outcome, Stats, StopReason, Verdict};
use semcheck::{Case, ErrorKind, ModelError, Program};

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
    /// Shuttle: directory where a failing schedule is saved (nothing is written without it).
    #[arg(long)]
    pub(crate) schedule_dir: Option<PathBuf>,
    /// Shuttle: replay this schedule file instead of searching.
    #[arg(long)]
    pub(crate) replay: Option<PathBuf>,
}

fn usage(msg: impl Into<String>) -> ModelError {
    ModelError::new(ErrorKind::UnknownName, msg)
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
            let mut given = args.explore.explorer_only();
            if args.explore.max_seconds.is_some() {
                given.push("--max-seconds");
            }
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
            if !args.case.semantics.semantics().is_default() {
                return Err(usage(
                    "the shuttle engine does not model --dma-order / --dma-landing other than the defaults yet; use the explorer",
                ));
            }
        }
    }
    Ok(())
}

/// Runs a shuttle campaign (or replays `--replay`) on one case.
pub(crate) fn run(args: &CheckArgs, case: &Case, program: &Program) -> Result<Outcome, ModelError> {
    let e = &args.engine;
    quiet_panics();
    if let Some(path) = &e.replay {
        let f = ScheduleFile::read(path).map_err(usage)?;
        let same = case.source.protocol() == Some(f.protocol.as_str())
            && case.source.mutant() == f.mutant.as_deref()
            && f.devices == case.devices
            && f.repeat == case.repeat;
        if !same {
            return Err(usage(format!(
                "{} was recorded for {} {} N={} repeat {}, not for {case}",
                path.display(),
                f.protocol,
                f.mutant.as_deref().unwrap_or("-"),
                f.devices,
                f.repeat
            )));
        }
        let start = std::time::Instant::now();
        let v = replay(program, &f.schedule).map_err(usage)?;
        let stats = Stats { executions: 1, seconds: start.elapsed().as_secs_f64(), ..Stats::default() };
        let verdict = match v {
            Some(violation) => Verdict::Violation(Counterexample {
                violation,
                schedule: Vec::new(),
                engine_schedule: Some(format!("{}", path.display())),
            }),
            None => Verdict::Incomplete {
                reason: StopReason::Sampled,
                detail: format!("the schedule {} no longer breaks a rule", path.display()),
            },
        };
        let run = EngineRun::Shuttle { scheduler: "replay".into(), iterations: 1, seed: f.schedule.seed };
        return Ok(Outcome { verdict, stats, run });
    }
    let scheduler = match e.scheduler.unwrap_or(SchedulerArg::Random) {
        SchedulerArg::Random => SchedulerKind::Random,
        SchedulerArg::Pct => SchedulerKind::Pct { depth: e.pct_depth.unwrap_or(3) as usize },
    };
    let campaign = Campaign { scheduler, iterations: e.iterations.unwrap_or(1000) as usize, seed: e.seed.unwrap_or(0) };
    let start = std::time::Instant::now();
    let report = check(program, campaign).map_err(usage)?;
    let run =
        EngineRun::Shuttle { scheduler: scheduler.name(), iterations: campaign.iterations as u64, seed: campaign.seed };
    let mut stats = Stats { seconds: start.elapsed().as_secs_f64(), ..Stats::default() };
    let verdict = match &report.verdict {
        ShuttleVerdict::Violation { violation, iteration, schedule } => {
            stats.executions = *iteration as u64;
            let saved = match &e.schedule_dir {
                Some(dir) => Some(save(dir, case, &report)?),
                None => None,
            };
            let replay = match &saved {
                Some(path) => format!("saved to {}; replay with --replay {}", path.display(), path.display()),
                None => format!(
                    "iteration {iteration}, seed {}, {} scheduling steps (--schedule-dir DIR saves it for --replay)",
                    schedule.seed,
                    schedule.steps.len()
                ),
            };
            Verdict::Violation(Counterexample {
                violation: violation.clone(),
                schedule: Vec::new(),
                engine_schedule: Some(replay),
            })
        }
        ShuttleVerdict::Incomplete { iterations } => {
            stats.executions = *iterations as u64;
            Verdict::Incomplete {
                reason: StopReason::Sampled,
                detail: format!(
                    "no rule broken in {iterations} iterations of shuttle's {} scheduler (seed {}); sampled schedules prove nothing",
                    scheduler.name(),
                    campaign.seed
                ),
            }
        }
    };
    Ok(Outcome { verdict, stats, run })
}

fn save(dir: &Path, case: &Case, report: &ShuttleReport) -> Result<PathBuf, ModelError> {
    let ShuttleVerdict::Violation { violation, iteration, schedule } = &report.verdict else {
        unreachable!("saving a violation")
    };
    let protocol = case.source.protocol().ok_or_else(|| usage("shuttle schedules are saved for catalogue cases"))?;
    std::fs::create_dir_all(dir).map_err(|e| usage(format!("cannot create {}: {e}", dir.display())))?;
    let name = format!("{protocol}-{}-n{}.schedule", case.source.mutant().unwrap_or("correct"), case.devices);
    let path = dir.join(name);
    let f = ScheduleFile {
        protocol: protocol.to_string(),
        mutant: case.source.mutant().map(str::to_string),
        devices: case.devices,
        repeat: case.repeat,
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
