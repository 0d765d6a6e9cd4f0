//! How an exploration runs: strategy, reductions, threads and budget.

use serde::Serialize;

use crate::outcome::StopReason;

/// The order states are explored in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Breadth-first: the counterexample returned is a shortest one (of the explored graph).
    #[default]
    Bfs,
    /// Depth-first: less memory for the frontier, counterexamples may be long.
    Dfs,
}

/// Which state-space reduction applies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reduction {
    /// Every enabled event of every state is explored.
    None,
    /// Partial-order reduction: events independent of everything else are explored alone
    /// (see `semcheck_model::reduction`). Verdicts are the same; counterexamples are
    /// shortest among the schedules of the reduced graph.
    #[default]
    PartialOrder,
}

/// Whether states that are rotations of each other are stored once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Symmetry {
    /// Every state is stored as it is.
    #[default]
    Off,
    /// When the compiled per-device programs are rotations of each other
    /// (`semcheck_model::ring`), one state per orbit of the ring's rotations
    /// (`semcheck_model::symmetry`); otherwise as `Off`. Verdicts are the same, state
    /// counts are orbit counts, counterexamples are concrete schedules of the program.
    Auto,
}

/// How many threads explore.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Threads {
    /// One per core the machine offers; levels of a breadth-first search too small to
    /// gain from it are expanded by one thread.
    #[default]
    Auto,
    /// This many (at least one), sharing every level of two states or more.
    Exactly(u16),
}

impl Threads {
    /// The number of threads this stands for on this machine.
    pub fn count(self) -> usize {
        match self {
            Threads::Auto => std::thread::available_parallelism().map_or(1, |n| n.get()),
            Threads::Exactly(n) => n.max(1) as usize,
        }
    }
}

/// Limits that stop an exploration early, with verdict `incomplete`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Budget {
    /// Most distinct states to store.
    pub max_states: Option<u64>,
    /// Most seconds of exploration.
    pub max_seconds: Option<f64>,
    /// Most bytes for the explorer's tables.
    pub max_memory_bytes: Option<u64>,
}

impl Budget {
    /// The first of the state, time and memory limits that the given counts reach.
    pub fn exceeded(&self, states: u64, seconds: f64, memory_bytes: u64) -> Option<StopReason> {
        if self.max_states.is_some_and(|m| states >= m) {
            Some(StopReason::States)
        } else if self.max_seconds.is_some_and(|m| seconds >= m) {
            Some(StopReason::Time)
        } else if self.max_memory_bytes.is_some_and(|m| memory_bytes >= m) {
            Some(StopReason::Memory)
        } else {
            None
        }
    }

    /// The limit behind `reason` in words (`the state budget of 100`, `the time budget of
    /// 10 s`, `the memory budget of 200 MiB`, `an interrupt (Ctrl-C, SIGTERM or SIGHUP)`, `the sampling
    /// engine's iterations`, `the search bound`).
    pub fn limit(&self, reason: StopReason) -> String {
        match reason {
            StopReason::States => format!("the state budget of {}", self.max_states.unwrap_or(0)),
            StopReason::Time => format!("the time budget of {} s", self.max_seconds.unwrap_or(0.0)),
            StopReason::Memory => format!("the memory budget of {} MiB", self.max_memory_bytes.unwrap_or(0) >> 20),
            StopReason::Interrupted => "an interrupt (Ctrl-C, SIGTERM or SIGHUP)".to_string(),
            StopReason::Sampled => "the sampling engine's iterations".to_string(),
            StopReason::Bounded => "the search bound".to_string(),
        }
    }
}

/// The configuration of an exploration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Config {
    /// Exploration order.
    pub strategy: Strategy,
    /// Partial-order reduction.
    pub reduction: Reduction,
    /// Symmetry reduction.
    pub symmetry: Symmetry,
    /// Threads. Breadth-first exploration gives the same verdict, state count and
    /// counterexample whatever the number; depth-first exploration runs on one thread.
    pub threads: Threads,
    /// Budget.
    pub budget: Budget,
}
