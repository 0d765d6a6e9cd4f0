//! Exhaustive breadth-first exploration of a ring window
//! ([`semcheck_model::window::Window`]): every reachable window state, optionally with the
//! window's own stubborn-set reduction.

use std::time::Instant;

use semcheck_model::window::{Window, WindowEvent, WindowScratch};
use semcheck_model::Violation;
use serde::Serialize;
use tracing::{debug, info};

use crate::config::{Budget, Reduction};
use crate::outcome::{Stats, StopReason};
use crate::sequential_store::{Store, NO_PARENT};

/// How often (in expanded states) the budgets are checked.
const CHECK_EVERY: u64 = 256;

/// What exploring a window decided.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum WindowVerdict {
    /// No reachable window state breaks a local rule at the center.
    Proved,
    /// A window execution breaks a local rule at the center. It may be spurious: the
    /// environment tokens over-approximate the devices outside the window.
    Violation {
        /// The rule broken at the center.
        violation: Violation,
        /// The window events from the initial state, the last one breaking the rule.
        #[serde(skip)]
        schedule: Vec<WindowEvent>,
        /// The same events in the kernel's words.
        names: Vec<String>,
    },
    /// A budget stopped the exploration: nothing is proved.
    Incomplete {
        /// Which budget.
        reason: StopReason,
        /// How far it got.
        detail: String,
    },
}

/// The verdict and counters of one window exploration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WindowOutcome {
    /// The verdict.
    #[serde(flatten)]
    pub verdict: WindowVerdict,
    /// States, transitions, depth, seconds, memory.
    pub stats: Stats,
}

/// Explores every reachable state of `window` breadth-first, within `budget`; with
/// [`Reduction::PartialOrder`], only the events of a stubborn set in each state.
pub fn explore_window(window: &Window<'_>, reduction: Reduction, budget: &Budget) -> WindowOutcome {
    let start = Instant::now();
    let initial = window.initial_state();
    let mut store = Store::new(&initial);
    store.insert(&initial, NO_PARENT, 0);
    let mut stats = Stats::default();
    let (mut state, mut next, mut enabled, mut chosen) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut scratch = WindowScratch::default();
    let (mut cursor, mut level_end, mut depth) = (0u32, 1u32, 0u64);
    let verdict = 'search: loop {
        if cursor as usize >= store.len() {
            break WindowVerdict::Proved;
        }
        if cursor == level_end {
            depth += 1;
            level_end = store.len() as u32;
            debug!(depth, states = store.len(), "window bfs level");
        }
        if cursor as u64 % CHECK_EVERY == 0 {
            if let Some(v) = over_budget(budget, &store, start, cursor as u64, &stats) {
                break v;
            }
        }
        store.get(cursor, &mut state);
        enabled.clear();
        window.enabled(&state, &mut enabled);
        if reduction == Reduction::PartialOrder {
            window.stubborn_set(&state, &enabled, &mut scratch, &mut chosen);
            std::mem::swap(&mut enabled, &mut chosen);
        }
        for &event in &enabled {
            stats.transitions += 1;
            if let Some(violation) = window.step(&state, event, &mut next) {
                let schedule = schedule(&store, cursor, event);
                let names = names(window, &schedule);
                break 'search WindowVerdict::Violation { violation, schedule, names };
            }
            store.insert(&next, cursor, event.encode());
        }
        cursor += 1;
    };
    stats.states = store.len() as u64;
    stats.max_depth = depth;
    stats.seconds = start.elapsed().as_secs_f64();
    stats.memory_bytes = store.memory_bytes();
    info!(
        kernel = %window.program().kernel,
        center = %window.center(),
        radius = window.radius(),
        states = stats.states,
        seconds = stats.seconds,
        "window explored"
    );
    WindowOutcome { verdict, stats }
}

fn over_budget(budget: &Budget, store: &Store, start: Instant, expanded: u64, stats: &Stats) -> Option<WindowVerdict> {
    let (states, secs) = (store.len() as u64, start.elapsed().as_secs_f64());
    let reason = budget.exceeded(states, secs, store.memory_bytes())?;
    Some(WindowVerdict::Incomplete {
        reason,
        detail: format!(
            "window exploration stopped by {}: {states} states stored, {expanded} expanded, {} transitions, {secs:.1} s; nothing was proved",
            budget.limit(reason),
            stats.transitions
        ),
    })
}

/// The events from the initial state to state `id`, then `last`.
fn schedule(store: &Store, id: u32, last: WindowEvent) -> Vec<WindowEvent> {
    store.path_to(id).into_iter().map(WindowEvent::decode).chain([last]).collect()
}

/// Names a window schedule by replaying it.
pub fn names(window: &Window<'_>, schedule: &[WindowEvent]) -> Vec<String> {
    let mut state = window.initial_state();
    let mut next = Vec::new();
    let mut out = Vec::with_capacity(schedule.len());
    for &e in schedule {
        out.push(window.describe(&state, e));
        window.step(&state, e, &mut next);
        std::mem::swap(&mut state, &mut next);
    }
    out
}
