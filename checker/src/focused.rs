//! A focused search for a real counterexample on a big ring: the whole ring's program,
//! with every device outside a chosen set held before its first operation.
//!
//! Holding a device back is a scheduling choice (the scheduler may simply never run it),
//! so every execution of the focused system is a prefix of an execution of the real ring,
//! and every rule it breaks is broken on the real ring, by the same schedule (deadlocks
//! aside: a focused system blocks whenever a device waits for a held one, so terminal
//! states are not reported). This is how a window violation at a size too large for
//! exact exploration is confirmed with a concrete counterexample, or left unconfirmed.
//!
//! The search is breadth-first with the model's partial-order reduction, run on a copy
//! of the program in which each held device's first operation is a wait that can never
//! pass (the held devices' lifecycle, semaphores and cells are exactly those of a device
//! that has not started).

use std::time::Instant;

use semcheck_model::program::{Op, SemSlot};
use semcheck_model::reduction::{Dependencies, PorScratch};
use semcheck_model::{DeviceId, Event, Program, Rule, StepOutcome};

use crate::config::Budget;
use crate::outcome::{Counterexample, Stats};
use crate::store::{Store, NO_PARENT};

/// What a focused search found.
#[derive(Clone, Debug, PartialEq)]
pub struct Focused {
    /// A real counterexample (a schedule of the unmodified program), if one was found.
    pub counterexample: Option<Counterexample>,
    /// Whether every state of the focused system was explored (else a budget stopped it).
    pub complete: bool,
    /// Counters.
    pub stats: Stats,
}

/// The program with every device outside `active` held before its first operation.
pub fn hold_back(program: &Program, active: &[DeviceId]) -> Program {
    let mut held = program.clone();
    let spd = program.sems_per_device;
    for d in program.mesh.devices() {
        if active.contains(&d) || spd == 0 {
            continue;
        }
        let sem = SemSlot((d.index() * spd) as u32);
        held.devices[d.index()].ops[0] = Op::Wait { sem, amount: u32::MAX };
    }
    held.dependencies = Dependencies::build(&held);
    held
}

/// Searches the executions in which only the devices of `active` move for a violation
/// of any rule but deadlock, within `budget`.
pub fn focused_search(program: &Program, active: &[DeviceId], budget: &Budget) -> Focused {
    let start = Instant::now();
    let held = hold_back(program, active);
    let initial = held.initial_state();
    let mut store = Store::new(&initial);
    store.insert(&initial, NO_PARENT, 0);
    let mut values = held.values.clone();
    let mut stats = Stats::default();
    let (mut state, mut next, mut enabled, mut chosen) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut por = PorScratch::default();
    let mut cursor = 0u32;
    let mut found = None;
    let mut complete = true;
    'search: while (cursor as usize) < store.len() {
        let over = budget.max_states.is_some_and(|m| store.len() as u64 >= m)
            || budget.max_seconds.is_some_and(|m| start.elapsed().as_secs_f64() >= m)
            || budget.max_memory_bytes.is_some_and(|m| store.memory_bytes() >= m);
        if over {
            complete = false;
            break;
        }
        store.get(cursor, &mut state);
        enabled.clear();
        held.enabled(&state, &mut enabled);
        if !enabled.is_empty() {
            held.persistent_set(&state, &enabled, &mut por, &mut chosen);
            std::mem::swap(&mut enabled, &mut chosen);
        }
        for &event in &enabled {
            stats.transitions += 1;
            match held.step(&state, event, &mut values, &mut next) {
                StepOutcome::Next => {
                    store.insert(&next, cursor, event.encode());
                }
                StepOutcome::Violation(v) if v.rule != Rule::Deadlock => {
                    let mut schedule = vec![event];
                    let mut cur = cursor;
                    loop {
                        let (parent, e) = store.parent(cur);
                        if parent == NO_PARENT {
                            break;
                        }
                        schedule.push(Event::decode(e));
                        cur = parent;
                    }
                    schedule.reverse();
                    found = Some(Counterexample { violation: v, schedule, engine_schedule: None });
                    break 'search;
                }
                StepOutcome::Violation(_) => {}
            }
        }
        cursor += 1;
    }
    stats.states = store.len() as u64;
    stats.seconds = start.elapsed().as_secs_f64();
    stats.memory_bytes = store.memory_bytes();
    Focused { counterexample: found, complete, stats }
}
