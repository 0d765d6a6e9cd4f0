//! Counterexamples people can read, replay and look at.
//!
//! * [`causes`](mod@causes): why each event could happen when it did (which signal or DMA a
//!   wait consumed, which event started a DMA);
//! * [`names`]: stable names of events (an event is named by its operation, a DMA event by
//!   the operation that started the DMA), never pcs or indices;
//! * [`format`](mod@format): the versioned, line-oriented trace file (see [`TraceFile`]);
//! * [`run`]: executing a schedule and recording every state;
//! * [`replay`](mod@replay): re-executing a trace file against the current model, checking every
//!   event is enabled and the same rule breaks, and [`why_not`](mod@why_not): why an event
//!   of a trace is not possible any more;
//! * [`minimize`](mod@minimize): dropping events that play no part in the violation, and
//!   [`regroup`](mod@regroup): fewer context switches;
//! * [`canonical`](mod@canonical): the rotation of a counterexample every command shows;
//! * [`explain`](mod@explain): the few events without which the violation does not happen;
//! * [`lockstep`](mod@lockstep): the lock-step schedule of the seed's traversal tables;
//! * [`render`](mod@render): text, table, mermaid, dot and JSON views.
//!
//! ```
//! use semcheck_checker::counterexample::{counterexample, replay, TraceFile};
//! use semcheck_checker::{explore, Config, Verdict};
//! use semcheck_model::dsl::trace;
//! use semcheck_model::ir::MemorySpace;
//! use semcheck_model::{compile, Case, Mesh, Source, Spec};
//!
//! let kernel = trace("early_read", |k| {
//!     let x = k.input("x", MemorySpace::Vmem, &[]);
//!     let y = k.scratch("y", MemorySpace::Vmem, &[]);
//!     let o = k.output("o", MemorySpace::Vmem, &[]);
//!     let (send, recv) = (k.dma_semaphore("send"), k.dma_semaphore("recv"));
//!     let dma = k.make_async_remote_copy(&x, &y, &send, &recv, (k.axis_index("x") + 1) % 2);
//!     dma.start();
//!     dma.wait_send();
//!     o.assign(&y);
//!     dma.wait_recv();
//! })
//! .unwrap();
//! let spec = Spec::plain(vec![]);
//! let program = compile(&kernel, &Mesh::ring(2).unwrap(), &spec, 1).unwrap();
//! let Verdict::Violation(cex) = explore(&program, &Config::default()).verdict else { panic!() };
//! let found = counterexample(&program, &cex, true).unwrap();
//! assert!(found.run.events.len() <= found.before);
//! let case = Case::new(Source::Dsl { name: "early_read".into() }, 2);
//! let file = found.trace_file(&case, "explore strategy=bfs");
//! let parsed = TraceFile::parse(&file.to_text()).unwrap();
//! let replayed = replay(&program, &parsed).unwrap();
//! assert_eq!(replayed.run.ending.violation().unwrap().rule, cex.violation.rule);
//! ```

pub mod canonical;
pub mod causes;
pub mod error;
pub mod explain;
pub mod format;
pub mod lockstep;
pub mod minimize;
pub mod names;
pub mod regroup;
pub mod render;
pub mod replay;
pub mod run;
pub mod why_not;

pub use canonical::canonical;
pub use causes::{causes, notes, Cause, Causes, Why};
pub use error::{TraceError, TraceErrorKind};
pub use explain::{explain, Explanation, Point, Role};
pub use format::{Header, TraceFile, FORMAT_VERSION};
pub use lockstep::{lockstep, lockstep_unnamed, Checkpoint, Lockstep, LockstepError};
pub use minimize::{minimize, MinimizeStats, Minimized};
pub use names::Namer;
pub use render::{render, Format};
pub use replay::{replay, Replayed};
pub use run::{run_events, run_names, Ending, NotEnabled, TracedRun};

use semcheck_model::{Case, Program};

use crate::config::{Config, Reduction, Strategy};
use crate::outcome::Counterexample;

/// The `engine` line of a trace found by the explorer with `config`, e.g.
/// `explore strategy=bfs reduction=partial-order`.
pub fn engine_name(config: &Config) -> String {
    let strategy = match config.strategy {
        Strategy::Bfs => "bfs",
        Strategy::Dfs => "dfs",
    };
    let reduction = match config.reduction {
        Reduction::None => "none",
        Reduction::PartialOrder => "partial-order",
    };
    let symmetry = match config.symmetry {
        crate::config::Symmetry::Off => "",
        crate::config::Symmetry::Auto => " symmetry=auto",
    };
    format!("explore strategy={strategy} reduction={reduction}{symmetry}")
}

/// A counterexample of the explorer, named, executed and (optionally) minimised.
#[derive(Clone, Debug)]
pub struct Found {
    /// The run to show and store.
    pub run: TracedRun,
    /// Its length before minimising (equal to the run's length when not minimised).
    pub before: usize,
    /// Whether the minimiser ran.
    pub minimized: bool,
    /// What the minimiser did (`None` when it did not run).
    pub stats: Option<MinimizeStats>,
}

impl Found {
    /// A run shown as the engine found it, not minimised.
    pub fn unminimized(run: TracedRun) -> Found {
        Found { before: run.events.len(), run, minimized: false, stats: None }
    }

    /// `44 events -> 27 after minimising: 2 devices dropped, 9 context switches -> 4`, or
    /// `None` when the minimiser did not run.
    pub fn minimized_sentence(&self) -> Option<String> {
        self.stats.map(|s| s.sentence())
    }

    /// The trace file of this run of `case`, found by `engine`.
    pub fn trace_file(&self, case: &Case, engine: &str) -> TraceFile {
        let violation = self.run.ending.violation().expect("a counterexample breaks a rule");
        TraceFile::new(
            Header {
                engine: Some(engine.to_string()),
                minimized: self.stats.map(|s| s.header_note()),
                ..Header::new(case.clone())
            },
            self.run.names.clone(),
            violation.rule,
            Some(violation.message.clone()),
        )
    }
}

/// Names and executes the explorer's counterexample, then, if asked, minimises it and
/// rotates it to its canonical devices (the story every command tells of this case).
/// Fails only if the explorer's schedule does not replay, which would be a checker bug.
pub fn counterexample(program: &Program, cex: &Counterexample, shorten: bool) -> Result<Found, NotEnabled> {
    let namer = Namer::new(program);
    let run = run_events(&namer, &cex.schedule)?;
    if shorten {
        let m = minimize(&namer, run);
        let run = canonical(&namer, m.run);
        Ok(Found { run, before: m.before, minimized: true, stats: Some(m.stats) })
    } else {
        Ok(Found::unminimized(run))
    }
}
