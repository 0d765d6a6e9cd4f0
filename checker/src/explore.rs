//! The exhaustive explicit-state explorer.

use std::time::Instant;

use semcheck_model::reduction::PorScratch;
use semcheck_model::{Event, Program, StepOutcome, ValueTable, Violation};
use tracing::{debug, info, info_span, trace};

use crate::config::{Config, Reduction, Strategy};
use crate::counterexample::Namer;
use crate::outcome::{Counterexample, EngineRun, Outcome, Stats, StopReason, Verdict};
use crate::store::{Store, NO_PARENT};

/// How often (in expanded states) the time and memory budgets are checked.
const CHECK_EVERY: u64 = 64;
/// How often (in expanded states) progress is logged.
const LOG_EVERY: u64 = 1 << 20;

/// Explores every reachable state of `program` under `config`.
pub fn explore(program: &Program, config: &Config) -> Outcome {
    let _span = info_span!("explore", kernel = %program.kernel, devices = program.num_devices()).entered();
    let start = Instant::now();
    let mut run = Run {
        program,
        config,
        store: Store::new(&program.initial_state()),
        values: program.values.clone(),
        stats: Stats::default(),
        start,
        por: PorScratch::default(),
        chosen: Vec::new(),
        namer: tracing::enabled!(tracing::Level::TRACE).then(|| Namer::new(program)),
    };
    let verdict = run.search();
    run.stats.states = run.store.len() as u64;
    run.stats.seconds = start.elapsed().as_secs_f64();
    run.stats.memory_bytes = run.stats.memory_bytes.max(run.store.memory_bytes());
    info!(
        kernel = %program.kernel,
        verdict = verdict.name(),
        states = run.stats.states,
        transitions = run.stats.transitions,
        seconds = run.stats.seconds,
        "exploration finished"
    );
    Outcome { verdict, stats: run.stats, run: EngineRun::Explore(*config) }
}

struct Run<'a> {
    program: &'a Program,
    config: &'a Config,
    store: Store,
    values: ValueTable,
    stats: Stats,
    start: Instant,
    por: PorScratch,
    chosen: Vec<Event>,
    /// Names events for `trace`-level logging; built only when that level is on.
    namer: Option<Namer<'a>>,
}

enum Expanded {
    Ok,
    Stop(Verdict),
}

impl Run<'_> {
    fn search(&mut self) -> Verdict {
        let initial = self.program.initial_state();
        self.store.insert(&initial, NO_PARENT, 0);
        let mut state = Vec::new();
        let mut next = Vec::new();
        let mut enabled = Vec::new();
        let mut children = Vec::new();
        match self.config.strategy {
            Strategy::Bfs => {
                let mut cursor = 0u32;
                let mut level_end = 1u32;
                let mut depth = 0u64;
                while (cursor as usize) < self.store.len() {
                    if cursor == level_end {
                        depth += 1;
                        level_end = self.store.len() as u32;
                        debug!(depth, states = self.store.len(), "bfs level");
                    }
                    self.stats.max_depth = depth;
                    if let Some(v) = self.over_budget(cursor as u64) {
                        return v;
                    }
                    self.store.get(cursor, &mut state);
                    if let Expanded::Stop(v) = self.expand(cursor, &state, &mut next, &mut enabled, &mut children) {
                        return v;
                    }
                    cursor += 1;
                }
            }
            Strategy::Dfs => {
                let mut stack: Vec<(u32, u64)> = vec![(0, 0)];
                let mut expanded = 0u64;
                while let Some((id, depth)) = stack.pop() {
                    self.stats.max_depth = self.stats.max_depth.max(depth);
                    if let Some(v) = self.over_budget(expanded) {
                        return v;
                    }
                    expanded += 1;
                    self.store.get(id, &mut state);
                    if let Expanded::Stop(v) = self.expand(id, &state, &mut next, &mut enabled, &mut children) {
                        return v;
                    }
                    stack.extend(children.iter().rev().map(|&c| (c, depth + 1)));
                }
            }
        }
        if self.stats.finished_states == 0 {
            // Cannot happen for a finite acyclic graph without deadlocks; kept as a guard so
            // an explorer that explores nothing can never report `proved`.
            return Verdict::Violation(Counterexample {
                violation: Violation::new(semcheck_model::Rule::Deadlock, Vec::new(), "no execution finishes"),
                schedule: Vec::new(),
                engine_schedule: None,
            });
        }
        Verdict::Proved
    }

    fn over_budget(&mut self, expanded: u64) -> Option<Verdict> {
        let b = &self.config.budget;
        let states = self.store.len() as u64;
        let state_limit = b.max_states.is_some_and(|m| states >= m);
        if expanded % CHECK_EVERY != 0 && !state_limit {
            return None;
        }
        let secs = self.start.elapsed().as_secs_f64();
        let mem = self.store.memory_bytes();
        self.stats.memory_bytes = self.stats.memory_bytes.max(mem);
        if expanded > 0 && expanded % LOG_EVERY == 0 {
            info!(states, expanded, transitions = self.stats.transitions, seconds = secs, "exploring");
        }
        let reason = if state_limit {
            StopReason::States
        } else if b.max_seconds.is_some_and(|m| secs >= m) {
            StopReason::Time
        } else if b.max_memory_bytes.is_some_and(|m| mem >= m) {
            StopReason::Memory
        } else {
            return None;
        };
        let limit = match reason {
            StopReason::States => format!("state budget of {}", b.max_states.unwrap_or(0)),
            StopReason::Time => format!("time budget of {} s", b.max_seconds.unwrap_or(0.0)),
            _ => format!("memory budget of {} MiB", b.max_memory_bytes.unwrap_or(0) >> 20),
        };
        Some(Verdict::Incomplete {
            reason,
            detail: format!(
                "stopped by the {limit}: {states} states stored, {expanded} expanded, {} unexpanded, {} transitions, depth {}, {secs:.1} s, {} MiB; nothing was proved",
                states.saturating_sub(expanded),
                self.stats.transitions,
                self.stats.max_depth,
                mem >> 20
            ),
        })
    }

    fn expand(
        &mut self,
        id: u32,
        state: &[u32],
        next: &mut Vec<u32>,
        enabled: &mut Vec<Event>,
        children: &mut Vec<u32>,
    ) -> Expanded {
        let program = self.program;
        children.clear();
        enabled.clear();
        program.enabled(state, enabled);
        if enabled.is_empty() {
            if program.is_final(state) {
                self.stats.finished_states += 1;
                return Expanded::Ok;
            }
            let violation = program.deadlock(state);
            return Expanded::Stop(self.counterexample(id, None, violation));
        }
        if self.config.reduction == Reduction::PartialOrder {
            program.persistent_set(state, enabled, &mut self.por, &mut self.chosen);
            std::mem::swap(enabled, &mut self.chosen);
        }
        for &event in enabled.iter() {
            self.stats.transitions += 1;
            if let Some(namer) = &self.namer {
                trace!(event = %namer.event(state, event), "step");
            }
            match program.step(state, event, &mut self.values, next) {
                StepOutcome::Next => {
                    if let Some(child) = self.store.insert(next, id, program.encode_event(event)) {
                        children.push(child);
                    }
                }
                StepOutcome::Violation(v) => return Expanded::Stop(self.counterexample(id, Some(event), v)),
            }
        }
        Expanded::Ok
    }

    /// The schedule from the initial state to `id`, then `last`.
    fn counterexample(&mut self, id: u32, last: Option<Event>, violation: Violation) -> Verdict {
        let mut events = Vec::new();
        let mut cur = id;
        loop {
            let (parent, event) = self.store.parent(cur);
            if parent == NO_PARENT {
                break;
            }
            events.push(self.program.decode_event(event));
            cur = parent;
        }
        events.reverse();
        events.extend(last);
        Verdict::Violation(Counterexample { violation, schedule: events, engine_schedule: None })
    }
}
