//! The shuttle engine: randomized schedules of the threaded runtime ([`super::sim`]).
//!
//! Every device, and every DMA completion event (`DmaMode::PerEvent`), is a shuttle
//! thread; the scheduler (random or PCT) picks which runs next at every lock, wait and
//! signal, so the order in which DMAs complete is the scheduler's own choice. A sampled
//! engine never proves anything: a campaign that finds nothing is `incomplete`
//! ([`StopReason::Sampled`], or [`StopReason::Time`] when its time budget ran out).
//!
//! A violation's [`Counterexample`] carries two schedules:
//!
//! * `schedule`: the model [`Event`]s in the order they took effect in the run (the
//!   runtime logs each within the step that applies it; see [`super::checks::Sink::log`]),
//!   which replays on the model ([`super::schedule::on_model`]) and is what a trace file stores;
//! * `engine_schedule`: shuttle's own decisions ([`RecordedSchedule::to_text`]), which
//!   [`replay`] runs again under shuttle.
//!
//! A violation stops the execution without a panic: the runtime records it
//! ([`super::OnViolation::Stop`]) and the scheduler wrapper ends the execution at the next
//! scheduling point, so shuttle prints nothing. (Shuttle's own deadlock detection stays as
//! a backstop; the runtime finds deadlocks first.)

mod schedule;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use semcheck_model::{Case, Event, Program, Violation};
use serde::Serialize;
use shuttle::scheduler::{PctScheduler, RandomScheduler, Scheduler};
use shuttle::{Config as ShuttleConfig, Runner, UngracefulShutdownConfig};

pub use schedule::{Diverged, RecordedSchedule};
use schedule::{Recorder, Replayer};

use super::checks::{from_tool_panic, panic_message, Sink};
use super::schedule::on_model;
use super::{sim, RunConfig};
use crate::counterexample::{Found, Header, TraceFile};
use crate::outcome::{Counterexample, EngineRun, Outcome, Stats, StopReason, Verdict};

/// Which shuttle scheduler drives a campaign.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchedulerKind {
    /// Uniformly random choice at every scheduling point.
    Random,
    /// Probabilistic concurrency testing with this bug depth (preemptions).
    Pct {
        /// The bug depth.
        depth: usize,
    },
}

impl SchedulerKind {
    /// `random` or `pct(depth=3)`.
    pub fn name(&self) -> String {
        match self {
            SchedulerKind::Random => "random".to_string(),
            SchedulerKind::Pct { depth } => format!("pct(depth={depth})"),
        }
    }
}

/// The configuration of a shuttle campaign.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Campaign {
    /// The scheduler.
    pub scheduler: SchedulerKind,
    /// Most iterations (executions) to run.
    pub iterations: usize,
    /// The scheduler's seed.
    pub seed: u64,
    /// Start no iteration after this many seconds (shuttle's `max_time`).
    pub max_seconds: Option<f64>,
}

impl Campaign {
    /// A campaign of `iterations` iterations of `scheduler` from `seed`, with no time budget.
    pub fn new(scheduler: SchedulerKind, iterations: usize, seed: u64) -> Campaign {
        Campaign { scheduler, iterations, seed, max_seconds: None }
    }
}

/// What one call of shuttle's runner found.
struct Driven {
    /// Executions started.
    iterations: usize,
    /// The first violation, with the model events and shuttle's decisions of its execution.
    found: Option<(Violation, Vec<Event>, RecordedSchedule)>,
}

fn shuttle_config(max_seconds: Option<f64>) -> ShuttleConfig {
    let mut c = ShuttleConfig::new();
    c.failure_persistence = shuttle::FailurePersistence::None;
    c.silence_warnings = true;
    c.max_time = max_seconds.map(Duration::from_secs_f64);
    let mut u = UngracefulShutdownConfig::default();
    u.immediately_return_on_panic = true;
    c.ungraceful_shutdown_config = u;
    c
}

/// Runs `program` under `scheduler` until the first execution that breaks a rule (or the
/// scheduler's or the time budget's end); `Err` for a panic that is not a rule of the model
/// (a bug of semcheck).
fn drive<S: Scheduler + 'static>(program: &Program, scheduler: S, max_seconds: Option<f64>) -> Result<Driven, String> {
    let sink = Arc::new(Sink::recording());
    let current = Arc::new(Mutex::new(RecordedSchedule::default()));
    let runner = Runner::new(Recorder::new(scheduler, sink.clone(), current.clone()), shuttle_config(max_seconds));
    let program = Arc::new(program.clone());
    let count = Arc::new(AtomicUsize::new(0));
    let (s, c) = (sink.clone(), count.clone());
    let run = RunConfig::shuttle();
    let outcome = catch_unwind(AssertUnwindSafe(move || {
        runner.run(move || {
            c.fetch_add(1, Ordering::SeqCst);
            s.reset();
            sim::run_into(&program, &run, &s);
        })
    }));
    let iterations = count.load(Ordering::SeqCst);
    let violation = match outcome {
        Ok(_) => sink.take(),
        Err(payload) => {
            let msg = panic_message(payload.as_ref());
            Some(sink.take().or_else(|| from_tool_panic("shuttle", &msg)).ok_or(msg)?)
        }
    };
    let schedule = current.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(Driven { iterations, found: violation.map(|v| (v, sink.events(), schedule)) })
}

fn counterexample(violation: Violation, events: Vec<Event>, schedule: &RecordedSchedule) -> Verdict {
    Verdict::Violation(Counterexample { violation, schedule: events, engine_schedule: Some(schedule.to_text()) })
}

/// Runs a shuttle campaign on `program`. `Err` is a panic that is not a rule of the model.
pub fn check(program: &Program, campaign: Campaign) -> Result<Outcome, String> {
    let start = Instant::now();
    let (seed, it, secs) = (campaign.seed, campaign.iterations, campaign.max_seconds);
    let driven = match campaign.scheduler {
        SchedulerKind::Random => drive(program, RandomScheduler::new_from_seed(seed, it), secs)?,
        SchedulerKind::Pct { depth } => drive(program, PctScheduler::new_from_seed(seed, depth, it), secs)?,
    };
    let name = campaign.scheduler.name();
    let verdict = match driven.found {
        Some((violation, events, schedule)) => counterexample(violation, events, &schedule),
        None if driven.iterations < it => Verdict::Incomplete {
            reason: StopReason::Time,
            detail: format!(
                "no rule broken in {} iterations of shuttle's {name} scheduler (seed {seed}) before the time budget \
                 of {} s ran out; sampled schedules prove nothing",
                driven.iterations,
                secs.unwrap_or(0.0)
            ),
        },
        None => Verdict::Incomplete {
            reason: StopReason::Sampled,
            detail: format!(
                "no rule broken in {it} iterations of shuttle's {name} scheduler (seed {seed}); sampled schedules \
                 prove nothing"
            ),
        },
    };
    let stats =
        Stats { executions: driven.iterations as u64, seconds: start.elapsed().as_secs_f64(), ..Stats::default() };
    Ok(Outcome { verdict, stats, run: EngineRun::Shuttle { scheduler: name, iterations: it as u64, seed } })
}

/// Why a recorded schedule did not replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplayError {
    /// A step of the schedule was not possible: the program or the runtime changed.
    Diverged(Diverged),
    /// The schedule ran to its end and no rule broke.
    NoViolation,
    /// A panic that is not a rule of the model.
    Panic(String),
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayError::Diverged(d) => write!(f, "the shuttle schedule diverges at step {}: {}", d.step, d.message),
            ReplayError::NoViolation => f.write_str("the shuttle schedule replays to its end but breaks no rule"),
            ReplayError::Panic(m) => write!(f, "the replay panicked: {m}"),
        }
    }
}

/// Replays a recorded schedule under shuttle: the violation it reaches, with the model
/// events of the replayed execution.
pub fn replay(program: &Program, schedule: &RecordedSchedule) -> Result<Outcome, ReplayError> {
    let start = Instant::now();
    let diverged = Arc::new(Mutex::new(None));
    let driven = drive(program, Replayer::new(schedule, diverged.clone()), None).map_err(ReplayError::Panic)?;
    let verdict = match driven.found {
        // Shuttle's replay scheduler reseeds its data source: report the schedule's own seed.
        Some((violation, events, replayed)) => {
            counterexample(violation, events, &RecordedSchedule { seed: schedule.seed, ..replayed })
        }
        None => {
            let d = diverged.lock().unwrap_or_else(|e| e.into_inner()).take();
            return Err(d.map_or(ReplayError::NoViolation, ReplayError::Diverged));
        }
    };
    let stats = Stats { executions: 1, seconds: start.elapsed().as_secs_f64(), ..Stats::default() };
    Ok(Outcome { verdict, stats, run: EngineRun::Shuttle { scheduler: "replay".into(), iterations: 1, seed: 0 } })
}

/// The `engine` line of a trace found by shuttle, e.g. `shuttle scheduler=pct(depth=3)
/// seed=0 iteration=2`.
pub fn engine_name(outcome: &Outcome) -> String {
    match &outcome.run {
        EngineRun::Shuttle { scheduler, seed, .. } => {
            format!("shuttle scheduler={scheduler} seed={seed} iteration={}", outcome.stats.executions)
        }
        other => other.name().to_string(),
    }
}

/// The trace file of a shuttle violation of `case`: the model events by name (checked to
/// replay on the model, see [`on_model`]), the engine line, the campaign's seed and
/// shuttle's decisions as the `engine-schedule`.
pub fn trace_file(program: &Program, case: &Case, outcome: &Outcome) -> Result<TraceFile, String> {
    let Verdict::Violation(cex) = &outcome.verdict else {
        return Err("no violation to save".to_string());
    };
    let run = on_model(program, cex)?;
    let mut file = Found::unminimized(run).trace_file(case, &engine_name(outcome));
    file.header = Header {
        seed: match outcome.run {
            EngineRun::Shuttle { seed, .. } => Some(seed),
            _ => None,
        },
        engine_schedule: cex.engine_schedule.clone(),
        ..file.header
    };
    Ok(file)
}
