//! How an exploration runs: strategy, reduction and budget.

use serde::Serialize;

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

/// The configuration of an exploration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Config {
    /// Exploration order.
    pub strategy: Strategy,
    /// Reduction.
    pub reduction: Reduction,
    /// Budget.
    pub budget: Budget,
}
