//! The one corpus of cases every engine runs: (protocol, mutant, N, expected), with an
//! explicit, visible skip list per engine (the `regex-test` shape), one runner ([`run`])
//! that runs a case on any engine within that engine's [`Budget`], and one judge
//! ([`judge`]) of whether an engine's outcome matches the case's expectation, used by every
//! engine's test and by `semcheck engines`.
//!
//! The expectation of a case is the explorer's verdict where the explorer can decide it
//! (the `semcheck check all` table), written down here so that every engine is held to
//! the same answer: `Clean` (no rule broken) or `Broken` (one of the listed rules).

use semcheck_checker::runtime::shuttle_engine::{self, Campaign, SchedulerKind};
use semcheck_checker::runtime::{stress, LoomBound};
use semcheck_checker::{explore, Budget as ExploreBudget, Config, Outcome, StopReason, Verdict};
use semcheck_model::Rule;
use semcheck_model::{Case, Source};
use semcheck_protocols::{catalogue, MeshKind, Protocol};

/// An engine over the kernel IR, as the corpus runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Engine {
    /// The exhaustive explicit-state explorer.
    Explore,
    /// The threaded runtime under shuttle's random scheduler.
    ShuttleRandom,
    /// The threaded runtime under shuttle's PCT scheduler (bug depth 3).
    ShuttlePct,
    /// The threaded runtime under loom (the `loom` feature, N = 2).
    Loom,
    /// The threaded runtime on OS threads with real data.
    Stress,
}

impl Engine {
    /// Every engine.
    pub const ALL: [Engine; 5] =
        [Engine::Explore, Engine::ShuttleRandom, Engine::ShuttlePct, Engine::Loom, Engine::Stress];

    /// `explore`, `shuttle random`, `shuttle pct(3)`, `loom`, `stress`.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Explore => "explore",
            Engine::ShuttleRandom => "shuttle random",
            Engine::ShuttlePct => "shuttle pct(3)",
            Engine::Loom => "loom",
            Engine::Stress => "stress",
        }
    }
}

/// What a case must do on every engine that runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// No rule broken (for a sampled engine: none found).
    Clean,
    /// One of these rules broken.
    Broken(&'static [Rule]),
}

/// One entry of the corpus: a case, what it must do, and which engines skip it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The case (always a catalogue case).
    pub case: Case,
    /// The expected outcome.
    pub expect: Expect,
    /// Engines that do not run this case, each with the reason.
    pub skip: Vec<(Engine, &'static str)>,
}

impl Entry {
    /// `psum/no-capacity N=4`.
    pub fn name(&self) -> String {
        self.case.to_string()
    }

    /// The protocol's name.
    pub fn protocol(&self) -> &str {
        self.case.source.protocol().expect("corpus cases are catalogue cases")
    }

    /// The mutant's name, if any.
    pub fn mutant(&self) -> Option<&str> {
        self.case.source.mutant()
    }

    /// Why `engine` skips this case, if it does.
    pub fn skipped_by(&self, engine: Engine) -> Option<&'static str> {
        self.skip.iter().find(|(e, _)| *e == engine).map(|(_, why)| *why)
    }
}

/// Cases the explorer cannot finish within the CI budget (see the `check all` table).
const LOOM_N2_ONLY: &str = "loom runs N = 2 only (5-thread limit: main, 2 devices, 2 DMA engines)";
/// Cases the explorer cannot finish within the tests' budget.
const SPLIT_N8_TOO_BIG: &str =
    "a program of several kernels at N = 8 is millions of states (split_ppermute: 5.1 M, about 100 s in a debug build), past the tests' 60 s budget; `semcheck check split_ppermute --devices 8` decides it";
const SHUTTLE_RANDOM_MISSES: &str =
    "shuttle's random scheduler does not find the five-device chain within 10,000 iterations at N = 8 (PCT finds it at once; measured)";

/// Every entry: each protocol and each mutant at N = 2, 4 and 8 (N = 2 for the
/// TensorCore protocols).
pub fn cases() -> Vec<Entry> {
    let mut out = Vec::new();
    for p in catalogue() {
        let sizes: &[usize] = match p.mesh_kind {
            MeshKind::Ring => &[2, 4, 8],
            MeshKind::TensorCores => &[2],
        };
        let variants = std::iter::once(None).chain(p.mutants.iter().map(Some));
        for m in variants {
            for &n in sizes {
                let expect = match m {
                    Some(m) if !m.expected.is_empty() && m.manifests_from.is_some_and(|from| n >= from) => {
                        Expect::Broken(m.expected)
                    }
                    _ => Expect::Clean,
                };
                let mutant = m.map(|m| m.name);
                let mut skip = Vec::new();
                if n != 2 {
                    skip.push((Engine::Loom, LOOM_N2_ONLY));
                }
                if p.name == "split_ppermute" && n == 8 {
                    skip.push((Engine::Explore, SPLIT_N8_TOO_BIG));
                }
                if p.name == "guarded_shift" && mutant.is_some() && n == 8 {
                    skip.push((Engine::ShuttleRandom, SHUTTLE_RANDOM_MISSES));
                }
                let case = Case::new(Source::catalogue(p.name, mutant), n).repeat(Protocol::default_repeat(m));
                out.push(Entry { case, expect, skip });
            }
        }
    }
    out
}

/// How much each engine may spend on one case.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    /// The explorer's time budget, in seconds.
    pub explore_seconds: f64,
    /// Shuttle iterations per case; `None`: the default of [`Budget::shuttle_iterations`].
    pub shuttle_iterations: Option<usize>,
    /// Stress runs per case.
    pub stress_runs: u64,
    /// The wall-clock cap of a loom case that has no partial bound of its own, in seconds.
    pub loom_cap_seconds: u64,
}

impl Default for Budget {
    /// The budgets of the tests: the explorer 60 s, shuttle the per-N default, stress 20
    /// runs, loom 120 s.
    fn default() -> Budget {
        Budget { explore_seconds: 60.0, shuttle_iterations: None, stress_runs: 20, loom_cap_seconds: 120 }
    }
}

impl Budget {
    /// The iterations within which shuttle must catch every mutant. Measured first
    /// failures of the random scheduler: at most iteration 81 at N = 4 and 58 at N = 8
    /// (`all_gather/shared-recv-sem`, where one DMA must stay in flight across a whole
    /// step); PCT finds every mutant in its first iterations. A clean case costs seconds
    /// per thousand iterations at N = 8, so the budgets leave a wide margin and no more:
    /// random 10,000 / 3,000 / 1,000 at N = 2 / 4 / 8, PCT 1,000 / 1,000 / 300.
    pub fn shuttle_iterations(&self, engine: Engine, n: usize) -> usize {
        self.shuttle_iterations.unwrap_or(match (engine, n) {
            (Engine::ShuttlePct, 2 | 4) => 1_000,
            (Engine::ShuttlePct, _) => 300,
            (_, 2) => 10_000,
            (_, 4) => 3_000,
            _ => 1_000,
        })
    }
}

/// The loom bound of a corpus case, measured on 2 shared cores (docs/engines.md, "Loom"): no case
/// finishes without a preemption bound (ppermute alone runs past 2 million executions in
/// 120 s), so each runs with a bound measured to finish (larger ones were not all
/// measured; tc_exchange at bound 2 did not finish in 60 s), and psum and psum_scatter,
/// which do not finish even at bound 1 (psum: 6 million executions in 500 s), run
/// partially at bound 1 for 20 s. Mutants stop at their first violation (all found within
/// 1 s) and run at bound 1.
pub fn loom_bound(entry: &Entry) -> LoomBound {
    match (entry.protocol(), entry.mutant()) {
        ("ppermute", None) | ("producer_consumer", None) => LoomBound::Preemptions(2),
        ("all_gather", _) | ("tc_exchange", None) => LoomBound::Preemptions(1),
        ("psum", None | Some("single-barrier")) | ("psum_scatter", None | Some("no-capacity")) => {
            LoomBound::Partial { preemptions: 1, seconds: 20 }
        }
        _ => LoomBound::Preemptions(1),
    }
}

/// Runs `entry` on `engine` within `budget`. `Err` is an engine that cannot run here
/// (loom without the `loom` feature) or a panic that is not a rule of the model.
pub fn run(engine: Engine, entry: &Entry, budget: &Budget) -> Result<Outcome, String> {
    let program = crate::program(&entry.case).map_err(|e| e.to_string())?;
    let n = entry.case.devices;
    match engine {
        Engine::Explore => {
            let budget = ExploreBudget { max_seconds: Some(budget.explore_seconds), ..ExploreBudget::default() };
            Ok(explore(&program, &Config { budget, ..Config::default() }))
        }
        Engine::ShuttleRandom | Engine::ShuttlePct => {
            let scheduler = match engine {
                Engine::ShuttlePct => SchedulerKind::Pct { depth: 3 },
                _ => SchedulerKind::Random,
            };
            shuttle_engine::check(&program, Campaign::new(scheduler, budget.shuttle_iterations(engine, n), 0))
        }
        Engine::Stress => Ok(stress::stress(&program, budget.stress_runs, 1)),
        Engine::Loom => loom(&program, entry, budget),
    }
}

#[cfg(feature = "loom")]
fn loom(program: &crate::Program, entry: &Entry, budget: &Budget) -> Result<Outcome, String> {
    use semcheck_checker::runtime::{loom_driver, RunConfig};
    use std::time::Duration;
    let bound = loom_driver::bound_from_env().unwrap_or_else(|| loom_bound(entry));
    loom_driver::check(program, bound, RunConfig::loom(), Duration::from_secs(budget.loom_cap_seconds))
}

#[cfg(not(feature = "loom"))]
fn loom(_: &crate::Program, _: &Entry, _: &Budget) -> Result<Outcome, String> {
    Err("loom runs only in a build with the `loom` feature (`cargo test --release --features loom --test loom`; see tests/loom.rs)".to_string())
}

/// How an engine's outcome compares with a case's expectation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Judgement {
    /// The expected answer: a violation of an expected rule; or, on a clean case, proved,
    /// or nothing found by a sampled or bounded engine.
    Agree,
    /// No contradiction, but not the answer either: a broken case where the engine found
    /// nothing within its budget, or an engine stopped undecided by a time, state or memory
    /// budget.
    Missed,
    /// A contradiction: a rule broken in a clean case, another rule than expected, or a
    /// broken case proved.
    Disagree,
}

/// Judges `outcome` against `entry`'s expectation (the one judge of every engine).
pub fn judge(entry: &Entry, outcome: &Outcome) -> Judgement {
    match (&outcome.verdict, entry.expect) {
        (Verdict::Violation(c), Expect::Broken(rules)) if rules.contains(&c.violation.rule) => Judgement::Agree,
        (Verdict::Violation(_), _) => Judgement::Disagree,
        (Verdict::Proved, Expect::Clean) => Judgement::Agree,
        (Verdict::Proved, Expect::Broken(_)) => Judgement::Disagree,
        (Verdict::Incomplete { reason: StopReason::Sampled | StopReason::Bounded, .. }, Expect::Clean) => {
            Judgement::Agree
        }
        (Verdict::Incomplete { .. }, _) => Judgement::Missed,
    }
}

/// An outcome in a few words, for tables: `proved (38 st)`, `race @3`, `clean x10000`,
/// `incomplete (time)`.
pub fn cell(outcome: &Outcome) -> String {
    let s = &outcome.stats;
    match &outcome.verdict {
        Verdict::Proved => format!("proved ({} st)", s.states),
        Verdict::Violation(c) if s.executions > 0 => format!("{} @{}", c.violation.rule, s.executions),
        Verdict::Violation(c) => c.violation.rule.to_string(),
        Verdict::Incomplete { reason: StopReason::Sampled | StopReason::Bounded, .. } => {
            format!("clean x{}", s.executions)
        }
        Verdict::Incomplete { reason, .. } => format!("incomplete ({reason:?})").to_lowercase(),
    }
}
