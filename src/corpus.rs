//! The one corpus of cases every engine runs: (protocol, mutant, N, expected), with an
//! explicit, visible skip list per engine (the `regex-test` shape).
//!
//! The expectation of a case is the explorer's verdict where the explorer can decide it
//! (the `semcheck check all` table), written down here so that every engine is held to
//! the same answer: `Clean` (no rule broken) or `Broken` (one of the listed rules).

use semcheck_model::Rule;
use semcheck_model::{Case, Source};
use semcheck_protocols::{catalogue, MeshKind, Protocol};

/// An engine over the kernel IR.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Engine {
    /// The exhaustive explicit-state explorer.
    Explore,
    /// The threaded runtime under shuttle's random and PCT schedulers.
    Shuttle,
    /// The threaded runtime under loom (`--cfg loom`, N = 2).
    Loom,
}

impl Engine {
    /// `explore`, `shuttle`, `loom`.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Explore => "explore",
            Engine::Shuttle => "shuttle",
            Engine::Loom => "loom",
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
const EXPLORE_TOO_BIG: &str = "the explorer's state space is beyond the CI budget at this N";
const LOOM_N2_ONLY: &str = "loom runs N = 2 only (5-thread limit: main, 2 devices, 2 DMA engines)";
const SHUTTLE_RANDOM_MISSES: &str =
    "shuttle's random scheduler does not find the five-device chain within 10,000 iterations at N = 8 (PCT finds it at once; measured)";

/// Whether the explorer finishes this case within a few seconds: everything up to N = 8
/// except psum_scatter at N = 8 (tens of millions of states; `check all` stops it at its
/// 30 s budget), where only the `no-barrier` violation is found early.
fn explorer_finishes(protocol: &str, mutant: Option<&str>, n: usize) -> bool {
    protocol != "psum_scatter" || n < 8 || mutant == Some("no-barrier")
}

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
                if !explorer_finishes(p.name, mutant, n) {
                    skip.push((Engine::Explore, EXPLORE_TOO_BIG));
                }
                if n != 2 {
                    skip.push((Engine::Loom, LOOM_N2_ONLY));
                }
                if p.name == "guarded_shift" && mutant.is_some() && n == 8 {
                    skip.push((Engine::Shuttle, SHUTTLE_RANDOM_MISSES));
                }
                let case = Case::new(Source::catalogue(p.name, mutant), n).repeat(Protocol::default_repeat(m));
                out.push(Entry { case, expect, skip });
            }
        }
    }
    out
}
