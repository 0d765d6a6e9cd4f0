//! The loom engine (the `loom` feature): the threaded runtime ([`super::os`] on loom's threads)
//! explored by loom's model checker, within a [`LoomBound`].
//!
//! Loom never proves anything here: with a preemption bound it explores only part of the
//! interleavings, and even without one its DMA engines (`DmaMode::ByKind`) complete two
//! remote copies in start order, which the model does not require. A run that finds
//! nothing is `incomplete`: [`StopReason::Bounded`], or [`StopReason::Time`] when its time
//! cap (or a partial bound's seconds) stopped it. Loom runs one thread at a time, so a
//! violation's counterexample carries the model events of the failing execution, as
//! shuttle's does.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use semcheck_model::Program;

use super::checks::{from_tool_panic, panic_message, Sink};
use super::{os, LoomBound, RunConfig};
use crate::outcome::{Counterexample, EngineRun, Outcome, Stats, StopReason, Verdict};

/// The bound `LOOM_MAX_PREEMPTIONS` asks for, if set (loom reads it too; semcheck uses it
/// to measure other bounds than a case's own).
pub fn bound_from_env() -> Option<LoomBound> {
    let k = std::env::var("LOOM_MAX_PREEMPTIONS").ok()?;
    k.parse().ok().map(LoomBound::Preemptions)
}

/// Explores `program` with loom within `bound` (a partial bound stops after its seconds,
/// any other after `cap`). `Err` is a panic that is not a rule of the model.
pub fn check(program: &Program, bound: LoomBound, config: RunConfig, cap: Duration) -> Result<Outcome, String> {
    let program = Arc::new(program.clone());
    let sink = Arc::new(Sink::recording());
    let count = Arc::new(AtomicUsize::new(0));
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = bound.preemptions();
    let cap = match bound {
        LoomBound::Partial { seconds, .. } => Duration::from_secs(seconds),
        _ => cap,
    };
    builder.max_duration = Some(cap);
    builder.max_branches = 100_000;
    let (s, c) = (sink.clone(), count.clone());
    let start = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| {
        builder.check(move || {
            c.fetch_add(1, Ordering::SeqCst);
            s.reset();
            os::run_into(&program, &config, &s);
        })
    }));
    let seconds = start.elapsed().as_secs_f64();
    let executions = count.load(Ordering::SeqCst) as u64;
    let verdict = match result {
        Err(payload) => {
            let msg = panic_message(payload.as_ref());
            let violation = sink.take().or_else(|| from_tool_panic("loom", &msg)).ok_or(msg)?;
            Verdict::Violation(Counterexample { violation, schedule: sink.events(), engine_schedule: None })
        }
        Ok(()) if seconds >= cap.as_secs_f64() => Verdict::Incomplete {
            reason: StopReason::Time,
            detail: format!(
                "no violation in {executions} executions before loom stopped after {} s, {}; nothing is proved",
                cap.as_secs(),
                bound.label()
            ),
        },
        Ok(()) => Verdict::Incomplete {
            reason: StopReason::Bounded,
            detail: format!(
                "no violation in {executions} executions, {}; loom's DMA engines complete remote copies in start \
                 order, so nothing is proved",
                bound.label()
            ),
        },
    };
    let stats = Stats { executions, seconds, ..Stats::default() };
    Ok(Outcome { verdict, stats, run: EngineRun::Loom { preemption_bound: bound.preemptions() } })
}
