//! One report of a check, whichever engine ran: the text a person reads and the JSON a
//! script reads (the same keys for every engine, with a top-level `verdict`).

use semcheck::checker::counterexample::{notes, run_events, Namer, TracedRun};
use semcheck::checker::{EngineRun, Outcome, Reduction, Strategy, Verdict};
use semcheck::{Case, Program, Source};
use serde_json::{json, Value};

/// A checked case: what was checked, the program it compiled to, and the outcome.
pub(crate) struct Checked {
    pub(crate) case: Case,
    pub(crate) program: Program,
    pub(crate) outcome: Outcome,
}

/// How event names read, printed under every schedule a person reads.
pub(crate) const LEGEND: &str = "\
(dN: device N; (i) or (i,j): the grid index; #k: the k-th invocation (with --repeat);
 [k of n]: the k-th of n identical operations in one grid step; `sem a -> b`: the
 semaphore's value before and after, DMA semaphores counting bytes)";

impl Checked {
    /// The counterexample's schedule executed on the model (events named once, here), or
    /// why it does not replay.
    fn run(&self) -> Option<Result<TracedRun, String>> {
        let Verdict::Violation(c) = &self.outcome.verdict else { return None };
        if c.schedule.is_empty() {
            return None;
        }
        let namer = Namer::new(&self.program);
        Some(
            run_events(&namer, &c.schedule)
                .map_err(|e| format!("(the schedule does not replay at event {}: {})", e.index + 1, e.wanted)),
        )
    }

    /// The names of the counterexample's events.
    pub(crate) fn schedule_names(&self) -> Vec<String> {
        match self.run() {
            Some(Ok(run)) => run.names,
            Some(Err(e)) => vec![e],
            None => Vec::new(),
        }
    }

    /// The JSON object of the case.
    pub(crate) fn json(&self) -> Value {
        let s = &self.outcome.stats;
        let violation = match &self.outcome.verdict {
            Verdict::Violation(c) => json!({
                "rule": c.violation.rule.name(),
                "message": c.violation.message,
                "devices": c.violation.devices.iter().map(|d| d.0).collect::<Vec<_>>(),
                "trace": self.schedule_names(),
                "engine_schedule": c.engine_schedule,
            }),
            _ => Value::Null,
        };
        let incomplete = match &self.outcome.verdict {
            Verdict::Incomplete { reason, detail } => json!({"reason": reason, "detail": detail}),
            _ => Value::Null,
        };
        let (file, kernel) = match &self.case.source {
            Source::Python { path, kernel } => (Some(path.display().to_string()), kernel.clone()),
            _ => (None, None),
        };
        json!({
            "source": self.case.source,
            "protocol": self.case.source.protocol(),
            "mutant": self.case.source.mutant(),
            "file": file,
            "kernel": kernel.unwrap_or_else(|| self.program.kernel.clone()),
            "devices": self.case.devices,
            "repeat": self.case.repeat,
            "semantics": self.case.semantics,
            "verdict": self.outcome.verdict.name(),
            "violation": violation,
            "incomplete": incomplete,
            "states": s.states,
            "transitions": s.transitions,
            "max_depth": s.max_depth,
            "executions": s.executions,
            "seconds": s.seconds,
            "memory_bytes": s.memory_bytes,
            "engine": self.outcome.run,
        })
    }

    /// The case as text for a person.
    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        let s = &self.outcome.stats;
        let how = match &self.outcome.run {
            EngineRun::Explore(config) => format!(
                "the explorer ({}, {}): {} states, {} transitions, depth {}, {:.2} s, {:.1} MiB",
                match config.strategy {
                    Strategy::Bfs => "breadth-first",
                    Strategy::Dfs => "depth-first",
                },
                match config.reduction {
                    Reduction::PartialOrder => "partial-order reduction",
                    Reduction::None => "no reduction",
                },
                s.states,
                s.transitions,
                s.max_depth,
                s.seconds,
                s.memory_bytes as f64 / (1 << 20) as f64,
            ),
            other => format!("{}: {} executions, {:.2} s", describe_engine(other), s.executions, s.seconds),
        };
        let head = self.case.to_string();
        match &self.outcome.verdict {
            Verdict::Proved => {
                out.push_str(&format!("{head}: PROVED\n  every reachable state explored, no rule broken; {how}\n"));
            }
            Verdict::Incomplete { detail, .. } => {
                out.push_str(&format!("{head}: INCOMPLETE\n  {detail}\n  {how}\n"));
            }
            Verdict::Violation(c) => {
                out.push_str(&format!("{head}: VIOLATION ({})\n  {}\n", c.violation.rule, c.violation.message));
                match self.run() {
                    Some(Ok(run)) => {
                        let (notes, about) = notes(&self.program, &run);
                        if let Some(about) = about {
                            out.push_str(&format!("  ({about})\n"));
                        }
                        out.push_str(&format!("  schedule ({} events):\n", run.names.len()));
                        for (i, name) in run.names.iter().enumerate() {
                            match &notes[i] {
                                Some(note) => out.push_str(&format!("  {:>4}. {name}   [{note}]\n", i + 1)),
                                None => out.push_str(&format!("  {:>4}. {name}\n", i + 1)),
                            }
                        }
                        for line in LEGEND.lines() {
                            out.push_str(&format!("  {line}\n"));
                        }
                    }
                    Some(Err(e)) => out.push_str(&format!("  {e}\n")),
                    None => {}
                }
                if let Some(e) = &c.engine_schedule {
                    out.push_str(&format!("  engine schedule: {e}\n"));
                }
                out.push_str(&format!("  found by {how}\n"));
            }
        }
        out
    }
}

/// An engine's configuration in words.
pub(crate) fn describe_engine(run: &EngineRun) -> String {
    match run {
        EngineRun::Explore(_) => "the explorer".to_string(),
        EngineRun::Shuttle { scheduler, iterations, seed } => {
            format!("shuttle's {scheduler} scheduler (seed {seed}, at most {iterations} iterations)")
        }
        EngineRun::Loom { preemption_bound: Some(b) } => format!("loom (preemption bound {b})"),
        EngineRun::Loom { preemption_bound: None } => "loom (no preemption bound)".to_string(),
        EngineRun::Stress { runs, seed } => format!("stress on OS threads ({runs} runs from seed {seed})"),
    }
}
