//! Which hardware assumptions a bug needs.
//!
//! A violation found under the default options may rest on a behaviour the user's hardware
//! never shows: a later DMA between two devices landing before an earlier one, or (under
//! `--dma-landing cells`) a copy landing partly. [`requirements`] re-checks the kernel
//! under the stronger choice of each such option (`--dma-order pair-fifo`, `--dma-landing
//! whole`), one at a time and then all together, and says which ones the bug needs: an
//! assumption is *required* when the kernel is proved once that option is strengthened. A
//! re-check that stops on a budget decides nothing and is reported as such.
//!
//! Strengthening an option only removes behaviours (every pair-fifo execution is an `any`
//! execution, every whole landing is a cell-by-cell landing with nothing in between), so a
//! bug that survives every strengthening breaks under every choice of the options.
//!
//! The mirror for a proof: [`proof_basis`] re-checks a kernel proved under a stronger choice
//! (`--dma-landing whole`, the default, or `--dma-order pair-fifo`) with the weaker one,
//! when it can matter in the kernel (a copy of several cells; two DMAs of one queue), and
//! says when the proof holds only because the option rules a behaviour out.
//!
//! ```
//! use semcheck::assumptions::{requirements, Assumption};
//! use semcheck::{Config, Verdict};
//!
//! let case = semcheck::catalogue_case("all_gather", Some("shared-recv-sem"), 3).unwrap();
//! let program = semcheck::program(&case).unwrap();
//! let Verdict::Violation(cex) = semcheck::explore(&program, &Config::default()).verdict else { panic!() };
//! let needs = requirements(&program, &cex, &Config::default());
//! assert_eq!(needs.requires, vec![Assumption::DmaReorder]);
//! ```

use semcheck_checker::counterexample::{run_events, Namer, TracedRun};
use semcheck_checker::{explore_with, Config, Control, Counterexample, EngineRun, Outcome, Stats, Stop, Verdict};
use semcheck_model::program::Op;
use semcheck_model::{DmaKey, DmaLanding, DmaOrder, Event, Program, Semantics, StepOutcome};
use serde::Serialize;
use serde_json::{json, Value};

/// A behaviour a bug can rest on: the weaker choice of one option.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Assumption {
    /// A later DMA between one pair of devices (or a later local copy of one device) lands
    /// before an earlier one: `--dma-order any`.
    DmaReorder,
    /// A copy of several cells lands partly, so a wait for fewer bytes passes with only some
    /// of its cells written: `--dma-landing cells`.
    PartialLanding,
}

impl Assumption {
    /// Every assumption, in report order.
    pub const ALL: [Assumption; 2] = [Assumption::DmaReorder, Assumption::PartialLanding];

    /// The stable name in reports and JSON: `dma-reorder`, `partial-landing`.
    pub fn name(self) -> &'static str {
        match self {
            Assumption::DmaReorder => "dma-reorder",
            Assumption::PartialLanding => "partial-landing",
        }
    }

    /// The option that rules it out, as typed: `--dma-order pair-fifo`.
    pub fn flag(self) -> &'static str {
        match self {
            Assumption::DmaReorder => "--dma-order pair-fifo",
            Assumption::PartialLanding => "--dma-landing whole",
        }
    }

    /// The option that allows it, as typed: `--dma-order any`.
    pub fn weak_flag(self) -> &'static str {
        match self {
            Assumption::DmaReorder => "--dma-order any",
            Assumption::PartialLanding => "--dma-landing cells",
        }
    }

    /// `semantics` with the behaviour allowed.
    pub fn allowed_in(self, mut semantics: Semantics) -> Semantics {
        match self {
            Assumption::DmaReorder => semantics.dma_order = DmaOrder::Any,
            Assumption::PartialLanding => semantics.dma_landing = DmaLanding::Cells,
        }
        semantics
    }

    /// Whether allowing the behaviour can change anything in `program`: two DMAs of one
    /// queue (one issuer to one target, or one device's local copies) for a reordering, a
    /// copy of several cells for a partial landing.
    pub fn can_matter(self, program: &Program) -> bool {
        let dmas = |d: usize| {
            program.devices[d].ops.iter().enumerate().filter_map(move |(pc, op)| match op {
                Op::LocalDma { src, .. } | Op::RemoteDma { src, .. } => Some((pc as u32, src.len)),
                _ => None,
            })
        };
        (0..program.num_devices()).any(|d| match self {
            Assumption::DmaReorder => {
                let issuer = semcheck_model::DeviceId(d as u16);
                let queues: Vec<_> = dmas(d).map(|(pc, _)| program.dma_queue(DmaKey { issuer, pc })).collect();
                queues.iter().enumerate().any(|(i, q)| queues[..i].contains(q))
            }
            Assumption::PartialLanding => dmas(d).any(|(_, cells)| cells > 1),
        })
    }

    /// Whether `semantics` allows the behaviour.
    pub fn allowed_by(self, semantics: Semantics) -> bool {
        match self {
            Assumption::DmaReorder => semantics.dma_order == DmaOrder::Any,
            Assumption::PartialLanding => semantics.dma_landing == DmaLanding::Cells,
        }
    }

    /// `semantics` with the behaviour ruled out.
    pub fn ruled_out(self, mut semantics: Semantics) -> Semantics {
        match self {
            Assumption::DmaReorder => semantics.dma_order = DmaOrder::PairFifo,
            Assumption::PartialLanding => semantics.dma_landing = DmaLanding::Whole,
        }
        semantics
    }
}

/// One re-check: the kernel under assumptions with some behaviours ruled out.
#[derive(Clone, Debug)]
pub struct Recheck {
    /// The behaviours ruled out.
    pub without: Vec<Assumption>,
    /// The assumptions it ran under.
    pub semantics: Semantics,
    /// What the explorer found, or the counterexample itself when it runs under these
    /// assumptions too ([`Recheck::replayed`]).
    pub outcome: Outcome,
    /// Set when no exploration was needed: the counterexample's own schedule, run under
    /// the stronger assumptions, breaks a rule there too (it never uses what they rule
    /// out), so the bug does not need them.
    pub replayed: bool,
}

/// Where the counterexample uses an assumption.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witness {
    /// The assumption.
    pub assumption: Assumption,
    /// The 1-based index of the event of the schedule that uses it.
    pub event: usize,
    /// What happens there, in words: `a later DMA d0->d1 lands before an earlier one: ...`.
    pub detail: String,
}

/// What a violation needs.
#[derive(Clone, Debug)]
pub struct Requirements {
    /// The assumptions the violation was found under.
    pub semantics: Semantics,
    /// The behaviours the bug needs: ruling out any one of them alone proves the kernel.
    pub requires: Vec<Assumption>,
    /// Set when no single behaviour is required but ruling them all out proves the kernel:
    /// the bug needs at least one of these.
    pub requires_one_of: Vec<Assumption>,
    /// Behaviours whose re-check stopped on a budget: whether the bug needs them is unknown.
    pub undecided: Vec<Assumption>,
    /// Every re-check, in order.
    pub rechecks: Vec<Recheck>,
    /// Where the counterexample uses each behaviour it allows, if it does.
    pub witnesses: Vec<Witness>,
}

/// The longest a single re-check may run, in seconds, whatever the check's own budget: a
/// violation the check found in a fraction of a second can sit much deeper under the
/// stronger options (psum --mutant no-capacity at N = 10: 718 states under the defaults,
/// 429,100 with pair-fifo), and the answer to "what does this bug need" must not hold up
/// the bug. A re-check that reaches it is reported as undecided.
pub const RECHECK_MAX_SECONDS: f64 = 20.0;

/// The most memory a single re-check may take, whatever the check's own budget: a copy of
/// many cells under `--dma-landing cells` can fill gigabytes in those 20 s (a kernel that
/// indexes single elements: a re-check stopped by time at 8 GiB), for an answer that only
/// qualifies the check's own.
pub const RECHECK_MAX_MEMORY_BYTES: u64 = 2 << 30;

/// `config` with its time and memory budgets capped at [`RECHECK_MAX_SECONDS`] and
/// [`RECHECK_MAX_MEMORY_BYTES`].
fn recheck_config(config: &Config) -> Config {
    let mut config = *config;
    let cap = config.budget.max_seconds.map_or(RECHECK_MAX_SECONDS, |s| s.min(RECHECK_MAX_SECONDS));
    config.budget.max_seconds = Some(cap);
    let cap = config.budget.max_memory_bytes.map_or(RECHECK_MAX_MEMORY_BYTES, |m| m.min(RECHECK_MAX_MEMORY_BYTES));
    config.budget.max_memory_bytes = Some(cap);
    config
}

/// Re-checks `program` (in which `cex` breaks a rule) with each behaviour its assumptions
/// allow ruled out, one at a time, then all together when there are several and none alone
/// decides, each with the explorer `config` (the same budget as the check that found `cex`,
/// at most [`RECHECK_MAX_SECONDS`]).
pub fn requirements(program: &Program, cex: &Counterexample, config: &Config) -> Requirements {
    requirements_unless(program, cex, config, None)
}

/// [`requirements`], each re-check's exploration also stopped by `stop` (the check's
/// own budget or Ctrl-C, which must not turn the violation found into nothing): a
/// re-check it stops is undecided, like one that reaches its cap.
pub fn requirements_unless(
    program: &Program,
    cex: &Counterexample,
    config: &Config,
    stop: Option<&Stop>,
) -> Requirements {
    let config = &recheck_config(config);
    let control = Control { stop, ..Control::default() };
    let semantics = program.semantics;
    let allowed: Vec<Assumption> = Assumption::ALL.into_iter().filter(|a| a.allowed_by(semantics)).collect();
    let recheck = |without: Vec<Assumption>| {
        let strong = without.iter().fold(semantics, |s, a| a.ruled_out(s));
        // Ruling a behaviour out never asks for cell landings, the only choice that can fail.
        let program = program.clone().with_semantics(strong).expect("stronger assumptions compile");
        match replayed(&program, cex, config) {
            Some(outcome) => Recheck { without, semantics: strong, outcome, replayed: true },
            None => Recheck {
                without,
                semantics: strong,
                outcome: explore_with(&program, config, control),
                replayed: false,
            },
        }
    };
    let mut needs = Requirements {
        semantics,
        requires: Vec::new(),
        requires_one_of: Vec::new(),
        undecided: Vec::new(),
        rechecks: Vec::new(),
        witnesses: witnesses(program, cex),
    };
    for &a in &allowed {
        let r = recheck(vec![a]);
        match r.outcome.verdict {
            Verdict::Proved => needs.requires.push(a),
            Verdict::Incomplete { .. } => needs.undecided.push(a),
            Verdict::Violation(_) => {}
        }
        needs.rechecks.push(r);
    }
    if allowed.len() > 1 && needs.requires.is_empty() {
        let r = recheck(allowed.clone());
        match r.outcome.verdict {
            Verdict::Proved if needs.undecided.is_empty() => needs.requires_one_of = allowed,
            Verdict::Proved | Verdict::Violation(_) => {}
            Verdict::Incomplete { .. } => needs.undecided = allowed,
        }
        needs.rechecks.push(r);
    }
    needs
}

/// The violation of `cex`'s rule that `cex`'s own schedule reaches in `program` (the
/// kernel under stronger assumptions), if it runs there: then the re-check's answer is
/// known without exploring (the bug stays). A landing the stronger assumptions do not
/// enable yet (`--dma-order pair-fifo`: an earlier DMA of its queue is still in flight) is
/// preceded by the landings of the issuer's other DMAs that are enabled, soonest in the
/// schedule first (then those it never reaches), until it is enabled: whatever this run
/// reaches, it is a run of `program`. `None` when it cannot be run that way or does not break the same rule (the
/// re-check then explores).
fn replayed(program: &Program, cex: &Counterexample, config: &Config) -> Option<Outcome> {
    let mut rest: std::collections::VecDeque<Event> = cex.schedule.iter().copied().collect();
    let mut state = program.initial_state();
    let mut values = program.values.clone();
    let (mut next, mut enabled, mut schedule) = (Vec::new(), Vec::new(), Vec::new());
    let mut moved = 0;
    while let Some(&want) = rest.front() {
        enabled.clear();
        program.enabled(&state, &mut enabled);
        let event = if enabled.contains(&want) {
            rest.pop_front()
        } else {
            let Some(issuer) = want.dma().map(|k| k.issuer) else {
                tracing::debug!(event = %want, at = schedule.len(), "re-check by the schedule: a device step not enabled");
                return None;
            };
            let ahead =
                |e: &Event| e.is_landing() && e.dma().is_some_and(|k| k.issuer == issuer) && enabled.contains(e);
            match rest.iter().position(ahead) {
                Some(soonest) => rest.remove(soonest),
                // A landing the schedule never reaches (the DMA is still in flight at its end).
                None => enabled.iter().copied().find(|e| ahead(e) && !rest.contains(e)),
            }
        };
        let Some(event) = event else {
            tracing::debug!(event = %want, at = schedule.len(), "re-check by the schedule: nothing moves it forward");
            return None;
        };
        moved += usize::from(Some(&event) != cex.schedule.get(schedule.len()));
        if moved > cex.schedule.len() {
            return None;
        }
        schedule.push(event);
        match program.step(&state, event, &mut values, &mut next) {
            StepOutcome::Next => std::mem::swap(&mut state, &mut next),
            StepOutcome::Violation(violation) if violation.rule == cex.violation.rule => {
                let cex = Counterexample { violation, schedule, engine_schedule: None };
                return Some(Outcome {
                    verdict: Verdict::Violation(cex),
                    stats: Stats::default(),
                    run: EngineRun::Explore(*config),
                });
            }
            StepOutcome::Violation(v) => {
                tracing::debug!(rule = %v.rule, at = schedule.len(), "re-check by the schedule: another rule broken");
                return None;
            }
        }
    }
    enabled.clear();
    program.enabled(&state, &mut enabled);
    let stuck = enabled.is_empty() && !program.is_final(&state);
    let violation = program.deadlock(&state);
    if !stuck || violation.rule != cex.violation.rule {
        tracing::debug!(at = schedule.len(), "re-check by the schedule: it ends without breaking the rule");
    }
    (stuck && violation.rule == cex.violation.rule).then(|| Outcome {
        verdict: Verdict::Violation(Counterexample { violation, schedule, engine_schedule: None }),
        stats: Stats::default(),
        run: EngineRun::Explore(*config),
    })
}

/// Where the schedule of `cex` uses each behaviour `program`'s assumptions allow: the first
/// landing that overtakes an earlier DMA of its queue, the first device step taken while a
/// copy has landed only partly. Event numbers count the engine's schedule.
pub fn witnesses(program: &Program, cex: &Counterexample) -> Vec<Witness> {
    let namer = Namer::new(program);
    run_events(&namer, &cex.schedule).map(|run| witnesses_in(program, &run)).unwrap_or_default()
}

/// [`witnesses`] in a run already executed: numbered as that run's events (the schedule a
/// report shows, minimised and rotated, not the engine's).
pub fn witnesses_in(program: &Program, run: &TracedRun) -> Vec<Witness> {
    let namer = Namer::new(program);
    let mut out = Vec::with_capacity(2);
    let reorder = run.events.iter().enumerate().find_map(|(i, &e)| {
        let key = e.dma().filter(|_| e.is_landing())?;
        let earlier = program.overtaken(&run.states[i], key)?;
        let queue = match program.dma_op(key) {
            Op::RemoteDma { target, .. } => format!("DMA {}->{target}", key.issuer),
            _ => format!("local copy of {}", key.issuer),
        };
        Some(Witness {
            assumption: Assumption::DmaReorder,
            event: i + 1,
            detail: format!(
                "a later {queue} lands before an earlier one: event {} `{}` overtakes `{}`",
                i + 1,
                run.names[i],
                namer.op(earlier.issuer, earlier.pc)
            ),
        })
    });
    let partial = run.events.iter().enumerate().find_map(|(i, &e)| {
        let Event::Step(d) = e else { return None };
        let state = &run.states[i];
        let rec = program.dmas(state).find(|r| {
            program.lands_by_cell(r) && (0..r.payload).any(|j| r.cell_landed(state, j)) && r.landing_pending()
        })?;
        let landed = (0..rec.payload).filter(|&j| rec.cell_landed(state, j)).count();
        Some(Witness {
            assumption: Assumption::PartialLanding,
            event: i + 1,
            detail: format!(
                "a copy lands partly: event {} `{}` runs while `{}` has landed {landed} of its {} cells",
                i + 1,
                namer.op(d, program.pc(state, d)),
                namer.op(rec.key.issuer, rec.key.pc),
                rec.payload
            ),
        })
    });
    out.extend(reorder);
    out.extend(partial);
    out
}

/// A re-check's verdict in a few words: `proved at N = 3 (532 states)`, `violation (race) at
/// N = 3`, `incomplete at N = 3, nothing proved: ...`.
fn verdict_words(outcome: &Outcome, devices: usize) -> String {
    match &outcome.verdict {
        Verdict::Proved => format!("proved at N = {devices} ({} states)", outcome.stats.states),
        Verdict::Violation(c) => format!("violation ({}) at N = {devices}", c.violation.rule),
        Verdict::Incomplete { detail, .. } => format!("incomplete at N = {devices}: {detail}"),
    }
}

impl Requirements {
    /// The same requirements with the witnesses located in `run` (the schedule shown).
    pub fn located_in(&self, program: &Program, run: &TracedRun) -> Requirements {
        Requirements { witnesses: witnesses_in(program, run), ..self.clone() }
    }

    /// The names of the required behaviours (`["dma-reorder"]`), empty when the bug breaks
    /// under every choice of the options that were re-checked.
    pub fn names(&self) -> Vec<&'static str> {
        self.requires.iter().map(|a| a.name()).collect()
    }

    /// The report for a person, one line each, for a mesh of `devices`.
    pub fn lines(&self, devices: usize) -> Vec<String> {
        let mut out = Vec::new();
        let names = |list: &[Assumption]| list.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ");
        let witness = |a: Assumption| self.witnesses.iter().find(|w| w.assumption == a).map(|w| w.detail.clone());
        if self.rechecks.is_empty() {
            out.push(format!(
                "requires: nothing that an option rules out ({} already is the strongest choice of every option)",
                self.semantics
            ));
            return out;
        }
        if !self.requires.is_empty() {
            for &a in &self.requires {
                let why = witness(a).unwrap_or_else(|| "the counterexample does not show where".to_string());
                out.push(format!("requires {}: {why}", a.name()));
            }
        } else if !self.requires_one_of.is_empty() {
            out.push(format!("requires one of: {}", names(&self.requires_one_of)));
        } else if self.undecided.is_empty() {
            out.push("requires: nothing; it breaks under every choice of the options".to_string());
        } else {
            out.push(format!("requires: unknown for {} (a re-check did not finish)", names(&self.undecided)));
        }
        for r in &self.rechecks {
            let flags: Vec<&str> = r.without.iter().map(|a| a.flag()).collect();
            let how = if r.replayed {
                " (the counterexample runs under it, landings in queue order; nothing explored)"
            } else {
                ""
            };
            out.push(format!("  with {}: {}{how}", flags.join(" "), verdict_words(&r.outcome, devices)));
        }
        out
    }

    /// The JSON object of the analysis.
    pub fn json(&self) -> Value {
        let rechecks: Vec<Value> = self
            .rechecks
            .iter()
            .map(|r| {
                let mut v = outcome_json(r.semantics, &r.outcome);
                v["without"] = json!(r.without);
                v["replayed"] = json!(r.replayed);
                v
            })
            .collect();
        let witnesses: Vec<Value> = self
            .witnesses
            .iter()
            .map(|w| json!({"assumption": w.assumption, "event": w.event, "detail": w.detail}))
            .collect();
        json!({
            "checked_under": self.semantics,
            "requires": self.requires,
            "requires_one_of": self.requires_one_of,
            "undecided": self.undecided,
            "rechecks": rechecks,
            "witnesses": witnesses,
        })
    }
}

/// What a proof rests on: the behaviours the check's options ruled out that could matter in
/// the kernel, each allowed in turn.
#[derive(Clone, Debug)]
pub struct ProofBasis {
    /// The assumptions the kernel was proved under.
    pub semantics: Semantics,
    /// Behaviours the proof needs ruled out: with any one of them allowed, a rule breaks.
    pub relies_on: Vec<Assumption>,
    /// Behaviours whose re-check stopped on a budget.
    pub undecided: Vec<Assumption>,
    /// Every re-check, in order.
    pub rechecks: Vec<ProofRecheck>,
}

/// One re-check of a proof: the kernel with one more behaviour allowed.
#[derive(Clone, Debug)]
pub struct ProofRecheck {
    /// The behaviour allowed.
    pub allowed: Assumption,
    /// The assumptions it ran under.
    pub semantics: Semantics,
    /// What the explorer found.
    pub outcome: Outcome,
}

/// Re-checks a kernel `program` was proved under with each behaviour its options rule out
/// allowed, one at a time, when that behaviour can matter in the kernel
/// ([`Assumption::can_matter`]): a proof under `--dma-landing whole` of a kernel with copies
/// of several cells is re-checked under `cells`, one under `--dma-order pair-fifo` under
/// `any`. Each re-check uses the explorer `config` (the proof's budget, at most
/// [`RECHECK_MAX_SECONDS`]).
pub fn proof_basis(program: &Program, config: &Config) -> ProofBasis {
    proof_basis_unless(program, config, None)
}

/// [`proof_basis`], each re-check's exploration also stopped by `stop` (the check's own
/// budget or Ctrl-C): a re-check it stops is undecided.
pub fn proof_basis_unless(program: &Program, config: &Config, stop: Option<&Stop>) -> ProofBasis {
    let config = &recheck_config(config);
    let control = Control { stop, ..Control::default() };
    let semantics = program.semantics;
    let mut basis = ProofBasis { semantics, relies_on: Vec::new(), undecided: Vec::new(), rechecks: Vec::new() };
    for a in Assumption::ALL {
        if a.allowed_by(semantics) || !a.can_matter(program) {
            continue;
        }
        let weak = a.allowed_in(semantics);
        let Ok(weaker) = program.clone().with_semantics(weak) else { continue };
        let outcome = explore_with(&weaker, config, control);
        match outcome.verdict {
            Verdict::Violation(_) => basis.relies_on.push(a),
            Verdict::Incomplete { .. } => basis.undecided.push(a),
            Verdict::Proved => {}
        }
        basis.rechecks.push(ProofRecheck { allowed: a, semantics: weak, outcome });
    }
    basis
}

impl ProofBasis {
    /// The names of the behaviours the proof needs ruled out (`["partial-landing"]`).
    pub fn names(&self) -> Vec<&'static str> {
        self.relies_on.iter().map(|a| a.name()).collect()
    }

    /// The report for a person, one line each, for a mesh of `devices`; empty when nothing
    /// was re-checked.
    pub fn lines(&self, devices: usize) -> Vec<String> {
        self.rechecks
            .iter()
            .map(|r| {
                let a = r.allowed;
                let words = verdict_words(&r.outcome, devices);
                match r.outcome.verdict {
                    Verdict::Violation(_) => format!(
                        "proved only because {} rules out {}: with {}: {words}",
                        a.flag(),
                        a.name(),
                        a.weak_flag()
                    ),
                    Verdict::Proved => format!("does not rely on {}: with {}: {words}", a.flag(), a.weak_flag()),
                    Verdict::Incomplete { .. } => {
                        format!("unknown whether the proof relies on {}: with {}: {words}", a.flag(), a.weak_flag())
                    }
                }
            })
            .collect()
    }

    /// The JSON object of the analysis.
    pub fn json(&self) -> Value {
        let rechecks: Vec<Value> = self
            .rechecks
            .iter()
            .map(|r| {
                let mut v = outcome_json(r.semantics, &r.outcome);
                v["allowed"] = json!(r.allowed);
                v
            })
            .collect();
        json!({
            "checked_under": self.semantics,
            "relies_on": self.relies_on,
            "undecided": self.undecided,
            "rechecks": rechecks,
        })
    }
}

/// The JSON of one re-check's assumptions and outcome.
fn outcome_json(semantics: Semantics, outcome: &Outcome) -> Value {
    json!({
        "semantics": semantics,
        "verdict": outcome.verdict.name(),
        "rule": outcome.verdict.violation().map(|v| v.rule.name()),
        "incomplete": match &outcome.verdict {
            Verdict::Incomplete { reason, detail } => json!({"reason": reason, "detail": detail}),
            _ => Value::Null,
        },
        "states": outcome.stats.states,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recheck_never_takes_more_than_its_own_caps_nor_than_the_check() {
        let mut config = Config::default();
        config.budget.max_seconds = None;
        config.budget.max_memory_bytes = Some(8 << 30);
        let r = recheck_config(&config);
        assert_eq!((r.budget.max_seconds, r.budget.max_memory_bytes), (Some(20.0), Some(2 << 30)));
        config.budget.max_seconds = Some(3.0);
        config.budget.max_memory_bytes = Some(1 << 30);
        let r = recheck_config(&config);
        assert_eq!((r.budget.max_seconds, r.budget.max_memory_bytes), (Some(3.0), Some(1 << 30)));
    }
}
