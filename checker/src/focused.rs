//! A focused search for a real counterexample on a big ring: the whole ring's program,
//! with every interleaving of a chosen set of *active* devices and one fixed schedule for
//! the others (the *environment*).
//!
//! The environment is scheduled one of two ways ([`Environment`]):
//!
//! * **held**: no environment device ever starts (the scheduler may simply never run
//!   it): the active devices run as if their neighbours were slow;
//! * **lazy**: an environment event (a step of an environment device, an event of a DMA
//!   it issued) is taken only when no active event is enabled, and then only the first
//!   one: the environment keeps up just enough for the active devices to go on;
//! * **eager**: whenever an environment event is enabled, the first one is taken, alone:
//!   the environment runs as far ahead of the active devices as it can.
//!
//! Either way every execution of the focused search is an execution of the real ring,
//! so every rule it breaks is broken on the real ring, by the same schedule (deadlocks
//! aside: a held environment blocks whoever waits for it, so terminal states are not
//! reported). This is how a window violation at a size too large for exact exploration
//! is confirmed with a concrete counterexample, or left unconfirmed: the search is not
//! complete, and finding nothing proves nothing.
//!
//! [`follow_window`] is cheaper still: it replays the window's own violating execution
//! on the real ring, moving the environment only when the next window event needs it.
//!
//! The search is breadth-first with the model's partial-order reduction on the active
//! events; a held device runs on a copy of the program whose first operation is a wait
//! that can never pass (its lifecycle, semaphores and cells are exactly those of a
//! device that has not started).

use std::time::Instant;

use semcheck_model::program::{Op, SemSlot};
use semcheck_model::reduction::{Dependencies, PorScratch};
use semcheck_model::window::{Window, WindowEvent};
use semcheck_model::{DeviceId, Event, Program, Rule, StepOutcome};
use serde::Serialize;

use crate::config::Budget;
use crate::outcome::{Counterexample, Stats};
use crate::sequential_store::{Store, NO_PARENT};

/// How the devices outside the active set are scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Environment {
    /// They never start.
    Held,
    /// They move only when no active device can: then the first enabled environment
    /// event is taken, alone.
    Lazy,
    /// They run as far ahead as they can: an enabled environment event is always taken
    /// first, alone.
    Eager,
}

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

/// Searches the executions in which the devices of `active` interleave freely and the
/// others follow `environment`, for a violation of any rule but deadlock, within
/// `budget`.
pub fn focused_search(program: &Program, active: &[DeviceId], environment: Environment, budget: &Budget) -> Focused {
    let start = Instant::now();
    let held;
    let program = match environment {
        Environment::Held => {
            held = hold_back(program, active);
            &held
        }
        Environment::Lazy | Environment::Eager => program,
    };
    let mut is_active = vec![false; program.num_devices()];
    for d in active {
        is_active[d.index()] = true;
    }
    let in_environment = |e: &Event| match e.dma() {
        None => matches!(*e, Event::Step(d) if !is_active[d.index()]),
        Some(k) => !is_active[k.issuer.index()],
    };
    let initial = program.initial_state();
    let mut store = Store::new(&initial);
    store.insert(&initial, NO_PARENT, 0);
    let mut values = program.values.clone();
    let mut stats = Stats::default();
    let (mut state, mut next, mut enabled, mut chosen) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut por = PorScratch::default();
    let mut cursor = 0u32;
    let mut found = None;
    let mut complete = true;
    'search: while (cursor as usize) < store.len() {
        if budget.exceeded(store.len() as u64, start.elapsed().as_secs_f64(), store.memory_bytes()).is_some() {
            complete = false;
            break;
        }
        store.get(cursor, &mut state);
        enabled.clear();
        program.enabled(&state, &mut enabled);
        let first_env = enabled.iter().copied().find(|e| in_environment(e));
        let env_only = enabled.iter().all(&in_environment);
        if let Some(e) = first_env.filter(|_| environment == Environment::Eager || env_only) {
            enabled.clear();
            enabled.push(e);
        } else if environment == Environment::Lazy && first_env.is_some() {
            // The reduction's sets are computed over every unit; restricted to the active
            // events one may come out empty, and then all of them are kept.
            enabled.retain(|e| !in_environment(e));
            program.persistent_set(&state, &enabled, &mut por, &mut chosen);
            if !chosen.is_empty() {
                std::mem::swap(&mut enabled, &mut chosen);
            }
        } else if !enabled.is_empty() {
            program.persistent_set(&state, &enabled, &mut por, &mut chosen);
            std::mem::swap(&mut enabled, &mut chosen);
        }
        for &event in &enabled {
            stats.transitions += 1;
            match program.step(&state, event, &mut values, &mut next) {
                StepOutcome::Next => {
                    store.insert(&next, cursor, program.encode_event(event));
                }
                StepOutcome::Violation(v) if v.rule != Rule::Deadlock => {
                    let schedule =
                        store.path_to(cursor).into_iter().map(|e| program.decode_event(e)).chain([event]).collect();
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

/// Follows a window execution on the real ring: the tracked devices' events in the
/// window's order, and, whenever the next one is not enabled yet, the environment (the
/// devices outside the window, and the landings of copies into them) one event at a
/// time until it is, nearest to the window first (ring distance of the device, or of the
/// DMA's issuer, from the center; ties in id order), so that far devices move only when
/// the near ones are blocked on them. Tokens are skipped: the environment's own increments
/// stand for them. A window violation whose timing the real environment can produce is
/// found this way in one run, whatever the ring's size; when the environment cannot
/// supply an increment in time the run stops, and nothing is concluded.
pub fn follow_window(window: &Window<'_>, schedule: &[WindowEvent]) -> Focused {
    let start = Instant::now();
    let program = window.program();
    let in_environment = |e: &Event| match e.dma() {
        None => matches!(*e, Event::Step(d) if !window.is_tracked(d)),
        Some(k) => {
            let into_untracked = e.is_landing()
                && matches!(program.dma_op(k), Op::RemoteDma { target, .. } if !window.is_tracked(target));
            !window.is_tracked(k.issuer) || into_untracked
        }
    };
    let n = program.num_devices();
    let center = window.center().index();
    let distance = |d: DeviceId| {
        let k = (d.index() + n - center) % n;
        k.min(n - k)
    };
    let nearness = |e: &Event| distance(e.issuer());
    let mut values = program.values.clone();
    let mut state = program.initial_state();
    let (mut enabled, mut events) = (Vec::new(), Vec::new());
    let mut stats = Stats::default();
    let mut found = None;
    'follow: for &w in schedule {
        let e = match w {
            WindowEvent::Token(_) => continue,
            WindowEvent::Step(d) => Event::Step(d),
            WindowEvent::Sent(k) => Event::Sent(k),
            WindowEvent::Received(k) => Event::Received(k),
            WindowEvent::Done(k) => Event::Done(k),
        };
        loop {
            let chosen = if program.is_enabled(&state, e) {
                e
            } else {
                enabled.clear();
                program.enabled(&state, &mut enabled);
                match enabled.iter().copied().filter(|x| in_environment(x)).min_by_key(nearness) {
                    Some(x) => x,
                    None => break 'follow,
                }
            };
            events.push(chosen);
            stats.transitions += 1;
            match program.advance(&mut state, chosen, &mut values) {
                StepOutcome::Next => {}
                StepOutcome::Violation(v) => {
                    found = Some(Counterexample { violation: v, schedule: events, engine_schedule: None });
                    break 'follow;
                }
            }
            if chosen == e {
                break;
            }
        }
    }
    stats.states = stats.transitions + 1;
    stats.seconds = start.elapsed().as_secs_f64();
    Focused { counterexample: found, complete: false, stats }
}
