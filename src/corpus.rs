//! The one corpus of cases every engine runs: (protocol, mutant, N, expected), with an
//! explicit, visible skip list per engine (the `regex-test` shape).
//!
//! The expectation of a case is the explorer's verdict where the explorer can decide it
//! (the `semcheck check all` table), written down here so that every engine is held to
//! the same answer: `Clean` (no rule broken) or `Broken` (one of the listed rules).

use semcheck_model::Rule;
use semcheck_protocols::{catalogue, MeshKind};

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

/// One case of the corpus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// The protocol.
    pub protocol: &'static str,
    /// The mutant, if any.
    pub mutant: Option<&'static str>,
    /// Number of devices.
    pub devices: usize,
    /// Back-to-back invocations.
    pub repeat: u32,
    /// The expected outcome.
    pub expect: Expect,
    /// Engines that do not run this case, each with the reason.
    pub skip: Vec<(Engine, &'static str)>,
}

impl Case {
    /// `psum/no-capacity N=4`.
    pub fn name(&self) -> String {
        format!("{}/{} N={}", self.protocol, self.mutant.unwrap_or("-"), self.devices)
    }

    /// Why `engine` skips this case, if it does.
    pub fn skipped_by(&self, engine: Engine) -> Option<&'static str> {
        self.skip.iter().find(|(e, _)| *e == engine).map(|(_, why)| *why)
    }
}

/// Cases the explorer cannot finish within the CI budget (see the `check all` table).
const EXPLORE_TOO_BIG: &str = "the explorer's state space is beyond the CI budget at this N";
const LOOM_N2_ONLY: &str = "loom runs N = 2 only (5-thread limit: main, 2 devices, 2 DMA engines)";

/// Whether the explorer finishes this case within a few seconds: everything up to N = 8
/// except psum_scatter at N = 8 (tens of millions of states; `check all` stops it at its
/// 30 s budget), where only the `no-barrier` violation is found early.
fn explorer_finishes(protocol: &str, mutant: Option<&str>, n: usize) -> bool {
    protocol != "psum_scatter" || n < 8 || mutant == Some("no-barrier")
}

/// Every case: each protocol and each mutant at N = 2, 4 and 8 (N = 2 for the
/// TensorCore protocols).
pub fn cases() -> Vec<Case> {
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
                    None => Expect::Clean,
                    Some(m) if m.expected.is_empty() => Expect::Clean,
                    // One recv_sem for every step is harmless on a 2-ring: there is one step.
                    Some(m) if m.name == "shared-recv-sem" && n < 3 => Expect::Clean,
                    Some(m) => Expect::Broken(m.expected),
                };
                let mutant = m.map(|m| m.name);
                let mut skip = Vec::new();
                if !explorer_finishes(p.name, mutant, n) {
                    skip.push((Engine::Explore, EXPLORE_TOO_BIG));
                }
                if n != 2 {
                    skip.push((Engine::Loom, LOOM_N2_ONLY));
                }
                out.push(Case {
                    protocol: p.name,
                    mutant,
                    devices: n,
                    repeat: m.map_or(1, |m| m.repeat),
                    expect,
                    skip,
                });
            }
        }
    }
    out
}
