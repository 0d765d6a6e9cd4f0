//! What every engine returns: one [`Outcome`] with one [`Verdict`] schema, whichever engine
//! ran (the exhaustive explorer, shuttle, loom or stress).

use serde::Serialize;

use semcheck_model::{Event, Rule, Violation};

use crate::config::Config;

/// A schedule that breaks a rule, as raw model events: naming them in the kernel's words
/// happens once, downstream ([`crate::counterexample`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Counterexample {
    /// The broken rule and its explanation.
    pub violation: Violation,
    /// The model events from the initial state; the last one breaks the rule (for a
    /// deadlock, the schedule that reaches the stuck state). Empty when the engine could
    /// not record model events (loom, stress): see `engine_schedule`.
    pub schedule: Vec<Event>,
    /// What replays the run on the engine that found it, when that is not the model
    /// schedule alone (shuttle's scheduling decisions; a stress run's input seed).
    pub engine_schedule: Option<String>,
}

/// Why an engine stopped without deciding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// The state budget was reached.
    States,
    /// The time budget was reached.
    Time,
    /// The memory budget was reached.
    Memory,
    /// The user interrupted it (Ctrl-C).
    Interrupted,
    /// A sampling engine ran its iterations and found nothing: it never proves.
    Sampled,
    /// A bounded search (loom's preemption bound) found nothing within its bound.
    Bounded,
}

impl StopReason {
    /// Whether a budget (states, time or memory) stopped it: a search done another way
    /// (depth-first) may still decide within the same budget.
    pub fn is_budget(self) -> bool {
        matches!(self, StopReason::States | StopReason::Time | StopReason::Memory)
    }
}

/// The outcome of a check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    /// Every reachable state was explored and no rule is broken.
    Proved,
    /// A rule is broken; here is the schedule.
    Violation(Counterexample),
    /// The engine stopped before deciding; nothing was proved.
    Incomplete {
        /// Why.
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

    /// The violation, if a rule is broken.
    pub fn violation(&self) -> Option<&Violation> {
        match self {
            Verdict::Violation(c) => Some(&c.violation),
            _ => None,
        }
    }

    /// The process exit code of the verdict: 0 proved, 1 violation, 3 incomplete.
    pub fn exit_code(&self) -> i32 {
        match self {
            Verdict::Proved => 0,
            Verdict::Violation(_) => 1,
            Verdict::Incomplete { .. } => 3,
        }
    }
}

/// Counters of a check (the ones an engine does not keep stay 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    /// Distinct states stored (explorer).
    pub states: u64,
    /// Events applied (explorer).
    pub transitions: u64,
    /// Longest schedule explored (explorer).
    pub max_depth: u64,
    /// Terminal states where every device finished (explorer).
    pub finished_states: u64,
    /// Executions run (shuttle, loom, stress).
    pub executions: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Peak bytes of the engine's own tables.
    pub memory_bytes: u64,
    /// The number of rotations states were stored modulo (explorer): N when rotation
    /// symmetry stored one state per orbit of an N-device ring (then `states` counts
    /// orbits), 1 when every state was stored as it is.
    pub symmetry: u64,
    /// Threads that explored (explorer).
    pub threads: u64,
}

/// Which engine ran, and how it was configured.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "engine", rename_all = "kebab-case")]
pub enum EngineRun {
    /// The exhaustive explorer.
    Explore(Config),
    /// The threaded runtime under shuttle's scheduler.
    Shuttle {
        /// `random` or `pct(depth=3)`.
        scheduler: String,
        /// Most iterations.
        iterations: u64,
        /// The scheduler's seed.
        seed: u64,
    },
    /// The threaded runtime under loom.
    Loom {
        /// Loom's preemption bound, if any.
        preemption_bound: Option<usize>,
    },
    /// The threaded runtime on OS threads with real data.
    Stress {
        /// Runs.
        runs: u64,
        /// Seed of the first run's inputs.
        seed: u64,
        /// What the runs broke, counted.
        tally: StressTally,
    },
}

/// What the runs of a stress campaign broke, counted (a stress run goes on after a race,
/// so that it can also say whether the numbers came out wrong).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StressTally {
    /// Runs whose outputs differed from the reference (`wrong-result`).
    pub mismatched: u64,
    /// Runs in which the race rule saw a conflicting access (noted; the run went on).
    pub raced: u64,
    /// Runs that broke each rule, in [`Rule::ALL`] order (`wrong-result` included; a race
    /// that was only noted is counted in `raced`, not here).
    pub by_rule: Vec<(Rule, u64)>,
}

impl EngineRun {
    /// `explore`, `shuttle`, `loom` or `stress`.
    pub fn name(&self) -> &'static str {
        match self {
            EngineRun::Explore(_) => "explore",
            EngineRun::Shuttle { .. } => "shuttle",
            EngineRun::Loom { .. } => "loom",
            EngineRun::Stress { .. } => "stress",
        }
    }
}

/// The outcome of one check by one engine.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outcome {
    /// The verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// The counters.
    pub stats: Stats,
    /// The engine and its configuration.
    pub run: EngineRun,
}
