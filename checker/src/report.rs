//! What an exploration returns: a verdict and statistics.

use serde::Serialize;

use semcheck_model::{Event, Violation};

use crate::config::Config;

/// One event of a counterexample, with its description in the kernel's names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceStep {
    /// The event.
    pub event: Event,
    /// What happened, e.g. `d1 (0) signal capacity_sem +1 -> d0`.
    pub description: String,
}

/// A schedule that breaks a rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Counterexample {
    /// The broken rule and its explanation.
    pub violation: Violation,
    /// The events from the initial state; the last one breaks the rule (for a deadlock,
    /// the schedule that reaches the stuck state).
    pub trace: Vec<TraceStep>,
}

/// Why an exploration stopped before it was complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// The state budget was reached.
    States,
    /// The time budget was reached.
    Time,
    /// The memory budget was reached.
    Memory,
}

/// The outcome of an exploration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    /// Every reachable state was explored and no rule is broken.
    Proved,
    /// A rule is broken; here is the schedule.
    Violation(Counterexample),
    /// A budget stopped the exploration; nothing was proved.
    Incomplete {
        /// Which budget.
        reason: StopReason,
        /// How far it got, in words.
        detail: String,
    },
}

impl Verdict {
    /// `proved`, `violation` or `incomplete`.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Proved => "proved",
            Verdict::Violation(_) => "violation",
            Verdict::Incomplete { .. } => "incomplete",
        }
    }
}

/// Counters of an exploration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    /// Distinct states stored.
    pub states: u64,
    /// Events applied.
    pub transitions: u64,
    /// Longest schedule explored.
    pub max_depth: u64,
    /// Terminal states where every device finished.
    pub finished_states: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Peak bytes of the explorer's tables.
    pub memory_bytes: u64,
}

/// The report of one exploration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// The verdict.
    pub verdict: Verdict,
    /// The statistics.
    pub stats: Stats,
    /// The configuration it ran with.
    pub config: Config,
}
