//! The lock-step schedule of seed 000's traversal tables (§2.5, §3.5, §4.6).
//!
//! The seed shows the correct kernels as if every device ran the same grid index at the
//! same time: no device starts grid index `g + 1` before every device has finished `g`, and
//! the tables show every slot after each grid index. This module runs that schedule on the
//! model and takes a snapshot at each of those points:
//!
//! * `initial`: before any device has entered;
//! * `prologue`: when the first grid index of an invocation starts with operations the next
//!   grid index does not have (psum's `pl.when(step == 0)` block: barrier, zeroing, first
//!   copy), after every device has run them;
//! * one snapshot per grid index, named like the operations (`(2)`, `(1,0)`, `#1 (0)`).
//!
//! Within a phase, in-flight DMAs complete as soon as they can (first in the model's
//! canonical order); otherwise the devices take turns, one operation each, round robin
//! (a device that is blocked or done with the phase is skipped), so that every device
//! enters before any runs ahead in its body. Every event is a real model event, so a rule broken on the way is
//! reported, and a phase in which some device cannot finish is an error.

use std::mem::discriminant;

use semcheck_model::program::Op;
use semcheck_model::{DeviceId, Event, Program, StepOutcome, ValueTable, Violation};
use tracing::{debug, trace};

use super::names::Namer;

/// A snapshot of the lock-step run.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    /// `initial`, `prologue` or the grid index, e.g. `(2)`.
    pub name: String,
    /// The global state at that point.
    pub state: Vec<u32>,
}

/// The lock-step run of a program.
#[derive(Clone, Debug)]
pub struct Lockstep {
    /// The snapshots, in order.
    pub checkpoints: Vec<Checkpoint>,
    /// The values interned, to print cells.
    pub values: ValueTable,
    /// Every event of the run, by name.
    pub events: Vec<String>,
}

/// Why the lock-step run failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockstepError {
    /// An event broke a rule (the protocol is not correct, or not in lock step).
    Violation {
        /// The event.
        event: String,
        /// The rule broken.
        violation: Violation,
    },
    /// Some device could not finish a phase.
    Stuck {
        /// The phase.
        phase: String,
        /// The devices that could not finish it, with their next operation.
        blocked: Vec<String>,
    },
}

impl std::fmt::Display for LockstepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockstepError::Violation { event, violation } => {
                write!(f, "the lock-step run breaks a rule at `{event}`: {violation}")
            }
            LockstepError::Stuck { phase, blocked } => {
                write!(f, "the lock-step run is stuck in phase {phase}: {}", blocked.join("; "))
            }
        }
    }
}

impl std::error::Error for LockstepError {}

/// The phase of every op of every device, and the names of the phases.
fn phases(program: &Program) -> (Vec<Vec<usize>>, Vec<String>) {
    let mut names: Vec<String> = Vec::new();
    let mut all = Vec::new();
    for (d, dp) in program.devices.iter().enumerate() {
        // Group the ops by (invocation, grid index); Enter and the entry barrier join the
        // group that follows them, Exit the one before.
        // In a program of several kernels, each kernel's body is a group of its own even
        // without a grid.
        let n = dp.ops.len();
        let several = program.has_several_kernels();
        let mut key: Vec<Option<(u32, &[usize])>> = dp
            .info
            .iter()
            .map(|i| (!i.grid.is_empty() || (several && i.stmt.is_some())).then_some((i.invocation, i.grid.as_slice())))
            .collect();
        for pc in 0..n {
            if key[pc].is_none() && !matches!(dp.ops[pc], Op::Exit) {
                key[pc] = (pc + 1..n).find_map(|q| key[q]);
            }
        }
        for pc in 0..n {
            if key[pc].is_none() {
                key[pc] = (0..pc).rev().find_map(|q| key[q]);
            }
        }
        let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
        for pc in 0..n {
            if pc == 0 || key[pc] != key[pc - 1] {
                let name = match key[pc] {
                    Some((inv, grid)) => {
                        let g: Vec<String> = grid.iter().map(|i| i.to_string()).collect();
                        let run = if program.repeat > 1 { format!("#{} ", program.run_of(inv)) } else { String::new() };
                        match several {
                            true if grid.is_empty() => {
                                format!("{run}{}", program.kernels[program.kernel_of(inv) as usize])
                            }
                            true => {
                                format!("{run}{} ({})", program.kernels[program.kernel_of(inv) as usize], g.join(","))
                            }
                            false => format!("{run}({})", g.join(",")),
                        }
                    }
                    None => "body".to_string(),
                };
                groups.push((name, Vec::new()));
            }
            groups.last_mut().expect("a group").1.push(pc);
        }
        // Split off the prologue of each invocation's first grid index: the ops before the
        // longest suffix whose kinds equal the next grid index's ops (Exit aside).
        let mut split: Vec<(String, Vec<usize>)> = Vec::new();
        for (i, (name, pcs)) in groups.iter().enumerate() {
            let first_of_invocation = pcs.iter().any(|&pc| matches!(dp.ops[pc], Op::Enter));
            let next = groups.get(i + 1).filter(|(_, n)| !n.iter().any(|&pc| matches!(dp.ops[pc], Op::Enter)));
            let body = |v: &[usize]| -> Vec<usize> {
                v.iter().copied().filter(|&pc| !matches!(dp.ops[pc], Op::Exit)).collect()
            };
            let prologue_len = match next {
                Some((_, next_pcs)) if first_of_invocation => {
                    let (mine, theirs) = (body(pcs), body(next_pcs));
                    let kinds_match = mine.len() > theirs.len()
                        && mine[mine.len() - theirs.len()..]
                            .iter()
                            .zip(&theirs)
                            .all(|(&a, &b)| discriminant(&dp.ops[a]) == discriminant(&dp.ops[b]));
                    if kinds_match {
                        mine.len() - theirs.len()
                    } else {
                        0
                    }
                }
                _ => 0,
            };
            let prologue_has_grid = pcs[..prologue_len].iter().any(|&pc| !dp.info[pc].grid.is_empty());
            if prologue_len > 0 && prologue_has_grid {
                let inv = dp.info[pcs[0]].invocation;
                let inv = if program.repeat > 1 { format!("#{} ", program.run_of(inv)) } else { String::new() };
                split.push((format!("{inv}prologue"), pcs[..prologue_len].to_vec()));
                split.push((name.clone(), pcs[prologue_len..].to_vec()));
            } else {
                split.push((name.clone(), pcs.clone()));
            }
        }
        let mut of = vec![0usize; n];
        for (i, (_, pcs)) in split.iter().enumerate() {
            for &pc in pcs {
                of[pc] = i;
            }
        }
        if d == 0 {
            names = split.into_iter().map(|(n, _)| n).collect();
        }
        all.push(of);
    }
    (all, names)
}

/// Runs `program` in lock step and snapshots it after every phase.
pub fn lockstep(program: &Program) -> Result<Lockstep, LockstepError> {
    run(program, true)
}

/// [`lockstep`] without the names of its events ([`Lockstep::events`] is empty): what a
/// caller needs that reads only the snapshots (the reference values of a kernel's
/// outputs), without naming every event of a run that grows with the square of the mesh.
/// An error is the one [`lockstep`] reports, named.
pub fn lockstep_unnamed(program: &Program) -> Result<Lockstep, LockstepError> {
    run(program, false).or_else(|_| run(program, true))
}

fn run(program: &Program, named: bool) -> Result<Lockstep, LockstepError> {
    let namer = Namer::new(program);
    let (phase_of, names) = phases(program);
    let mut values = program.values.clone();
    let mut state = program.initial_state();
    let mut enabled = Vec::new();
    let mut events = Vec::new();
    let mut checkpoints = vec![Checkpoint { name: "initial".into(), state: state.clone() }];
    let in_phase = |state: &[u32], d: DeviceId, phase: usize| {
        let pc = program.pc(state, d) as usize;
        pc < program.devices[d.index()].len() && phase_of[d.index()][pc] <= phase
    };
    let mut turn = 0;
    for (phase, name) in names.iter().enumerate() {
        debug!(phase = %name, "lock-step phase");
        loop {
            enabled.clear();
            program.dmas_enabled(&state, &mut enabled);
            let n = program.num_devices();
            let step = || {
                (0..n)
                    .map(|k| DeviceId(((turn + k) % n) as u16))
                    .find(|&d| in_phase(&state, d, phase) && program.device_enabled(&state, d))
                    .map(Event::Step)
            };
            let Some(event) = enabled.first().copied().or_else(step) else { break };
            let label = if named { namer.event(&state, event) } else { String::new() };
            trace!(event = %label, "lock-step event");
            match program.advance(&mut state, event, &mut values) {
                StepOutcome::Next => {}
                StepOutcome::Violation(violation) => return Err(LockstepError::Violation { event: label, violation }),
            }
            if let Event::Step(d) = event {
                turn = d.index() + 1;
            }
            if named {
                events.push(label);
            }
        }
        let blocked: Vec<String> = program
            .mesh
            .devices()
            .filter(|&d| in_phase(&state, d, phase))
            .map(|d| format!("{} cannot run", namer.op(d, program.pc(&state, d))))
            .collect();
        if !blocked.is_empty() {
            return Err(LockstepError::Stuck { phase: name.clone(), blocked });
        }
        checkpoints.push(Checkpoint { name: name.clone(), state: state.clone() });
    }
    Ok(Lockstep { checkpoints, values, events })
}
