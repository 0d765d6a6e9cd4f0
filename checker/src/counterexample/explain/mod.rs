//! Why a counterexample breaks its rule, in the few events without which it would not:
//! a backward slice of the run over its [`causes`](mod@super::causes), from the event that
//! breaks the rule.
//!
//! **Seeds.** The breaking event, and what the violation names: for a race the access
//! (`read` or `write`) and the start of the DMA still in flight (`dma-in-flight`); for a
//! DMA or a signal outside the kernel the start of that DMA and, when the target has
//! already left, its `exit`; for a leak the increments no wait consumed (`left-over`) or
//! the DMA still outstanding; for a deadlock each stuck device (`blocked`, not an event of
//! the schedule: its wait never happens).
//!
//! **Following causes back.** From a device's step, the *gate*: the last wait before it on
//! its device that synchronised with another device (a local DMA's own completion does not
//! count, unless it was the wrong one), or a re-entry into the kernel; from a wait, the
//! events whose increments it consumed (`satisfied-by`, the wrong one marked: a later DMA's
//! bytes consumed while an earlier DMA on the same semaphore was still in flight, a signal
//! of another invocation); from a DMA's completion, its start (`dma-start`). Each gate is
//! one hop back; the slice follows two (one if that would make more than
//! [`MAX_POINTS`] points).
//!
//! **Summarised.** Barriers and handshakes that only order the rest (the entry barrier, a
//! wait satisfied by the signals of other devices in the same invocation) are not followed:
//! one `summary` line says who passed them ("every device passed its waits on barrier,
//! second (events 1-14)"). A gate of the breaking event itself is always shown.

mod seeds;
mod slice;
mod summary;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use semcheck_model::ir::Loc;
use semcheck_model::{DeviceId, Program};

use super::run::TracedRun;
use slice::Slicer;

/// The most points an explanation aims for: with more, the slice follows one hop fewer.
pub const MAX_POINTS: usize = 12;

/// How many gates back the slice follows at most.
const MAX_HOPS: usize = 2;

/// What a point of an explanation does in the story.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// The racing access reads the cell.
    Read,
    /// The racing access writes the cell.
    Write,
    /// The start of the DMA still in flight when the rule breaks.
    DmaInFlight,
    /// The event that breaks a rule other than a race.
    Breaks,
    /// A wait that let a device through.
    Wait,
    /// An event whose increment a wait of the explanation consumed.
    SatisfiedBy,
    /// The start of a DMA whose completion is part of the explanation.
    DmaStart,
    /// A device leaving the kernel.
    Exit,
    /// A device entering the kernel again (a later invocation).
    Reenter,
    /// An increment no wait consumed (what leaves a semaphore non-zero).
    LeftOver,
    /// A device stuck at the end of a deadlock (not an event: its wait never happens).
    Blocked,
    /// Barriers and handshakes that only order the rest, in one line.
    Summary,
}

impl Role {
    /// The role's name in JSON and in the text report.
    pub fn name(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Write => "write",
            Role::DmaInFlight => "dma-in-flight",
            Role::Breaks => "breaks",
            Role::Wait => "wait",
            Role::SatisfiedBy => "satisfied-by",
            Role::DmaStart => "dma-start",
            Role::Exit => "exit",
            Role::Reenter => "re-enter",
            Role::LeftOver => "left-over",
            Role::Blocked => "blocked",
            Role::Summary => "summary",
        }
    }
}

/// One point of an explanation: an event of the run, a stuck device, or the summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    /// The event's 0-based index in the run (for the summary, the last event it covers); `None` for
    /// a device stuck at the end of a deadlock.
    pub index: Option<usize>,
    /// The device it happens on (`None` for the summary).
    pub device: Option<DeviceId>,
    /// What it does in the story.
    pub role: Role,
    /// The event's name (for a stuck device, its operation; for the summary, the line).
    pub text: String,
    /// Why it matters, in words (`satisfies the wait of event 30: the wrong one ...`).
    pub note: Option<String>,
    /// Whether it is the wrong increment: a later DMA's bytes, or a signal of another
    /// invocation, consumed by a wait meant for another.
    pub wrong: bool,
    /// The kernel source line it comes from.
    pub loc: Option<Loc>,
}

/// The causal core of a counterexample.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Explanation {
    /// The points: the summary first (if any), then the events in schedule order, then
    /// the stuck devices of a deadlock.
    pub points: Vec<Point>,
    /// How many gates back the slice followed.
    pub hops: usize,
}

impl Explanation {
    /// The explanation as lines of text for a person: one line per event (`17. d0 (0)
    /// start ...`), its role and note on the next; the summary and stuck devices marked
    /// `-`.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for p in &self.points {
            let number = match (p.role, p.index) {
                (Role::Summary, _) | (_, None) => "    -".to_string(),
                (_, Some(i)) => format!("{:>4}.", i + 1),
            };
            out.push(format!("{number} {}", p.text));
            if p.role != Role::Summary {
                let role =
                    if p.wrong { format!("{}, the wrong one", p.role.name()) } else { p.role.name().to_string() };
                match &p.note {
                    Some(note) => out.push(format!("        [{role}] {note}")),
                    None => out.push(format!("        [{role}]")),
                }
            }
        }
        out
    }

    /// The 0-based indices of the run's events the explanation shows (the summary's
    /// included).
    pub fn indices(&self) -> BTreeSet<usize> {
        self.points.iter().filter(|p| p.role != Role::Summary).filter_map(|p| p.index).collect()
    }
}

/// The explanation of `run`'s violation (empty for a run that breaks no rule).
pub fn explain(program: &Program, run: &TracedRun) -> Explanation {
    let Some(violation) = run.ending.violation() else { return Explanation::default() };
    let slicer = Slicer::new(program, run, violation);
    let mut best = slicer.slice(MAX_HOPS);
    for hops in (1..MAX_HOPS).rev() {
        if best.points.len() <= MAX_POINTS {
            break;
        }
        best = slicer.slice(hops);
    }
    best
}
