//! Counterexamples people can read, replay and look at.
//!
//! * [`names`]: stable names of events (an event is named by its operation, a DMA event by
//!   the operation that started the DMA), never pcs or indices;
//! * [`format`]: the versioned, line-oriented trace file (see [`TraceFile`]);
//! * [`run`]: executing a schedule and recording every state;
//! * [`replay`](mod@replay): re-executing a trace file against the current model, checking every
//!   event is enabled and the same rule breaks;
//! * [`minimize`](mod@minimize): dropping events that play no part in the violation;
//! * [`lockstep`](mod@lockstep): the lock-step schedule of the seed's traversal tables;
//! * [`render`]: text, table, mermaid, dot and JSON views.
//!
//! ```
//! use semcheck_checker::counterexample::{counterexample, replay, TraceFile};
//! use semcheck_checker::{explore, Config, Verdict};
//!
//! let program = semcheck_protocols::find("psum").unwrap().program(2, Some("no-capacity"), 1).unwrap();
//! let Verdict::Violation(cex) = explore(&program, &Config::default()).verdict else { panic!() };
//! let found = counterexample(&program, &cex, true).unwrap();
//! assert!(found.run.events.len() <= found.before);
//! let file = found.trace_file(&program, "psum", Some("no-capacity"), "explore strategy=bfs");
//! let parsed = TraceFile::parse(&file.to_text()).unwrap();
//! let replayed = replay(&program, &parsed).unwrap();
//! assert_eq!(replayed.run.ending.violation().unwrap().rule, cex.violation.rule);
//! ```

pub mod error;
pub mod format;
pub mod lockstep;
pub mod minimize;
pub mod names;
pub mod render;
pub mod replay;
pub mod run;

pub use error::{TraceError, TraceErrorKind};
pub use format::{Header, TraceFile, FORMAT_VERSION};
pub use lockstep::{lockstep, Checkpoint, Lockstep, LockstepError};
pub use minimize::{minimize, Minimized};
pub use names::Namer;
pub use render::{render, Format};
pub use replay::{replay, Replayed};
pub use run::{run_events, run_names, Ending, NotEnabled, TracedRun};

use semcheck_model::Program;

use crate::config::{Config, Reduction, Strategy};
use crate::report::Counterexample;

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
    format!("explore strategy={strategy} reduction={reduction}")
}

/// A counterexample of the explorer, named, executed and (optionally) minimised.
#[derive(Clone, Debug)]
pub struct Found {
    /// The run to show and store.
    pub run: TracedRun,
    /// Its length before minimising (equal to the run's length when not minimised).
    pub before: usize,
}

impl Found {
    /// The trace file of this run.
    pub fn trace_file(&self, program: &Program, protocol: &str, mutant: Option<&str>, engine: &str) -> TraceFile {
        let violation = self.run.ending.violation().expect("a counterexample breaks a rule");
        TraceFile::new(
            Header {
                protocol: protocol.to_string(),
                mutant: mutant.map(str::to_string),
                devices: program.num_devices() as u16,
                repeat: program.repeat,
                engine: Some(engine.to_string()),
                seed: None,
                minimized: Some(format!("{} -> {} events", self.before, self.run.events.len())),
            },
            self.run.names.clone(),
            violation.rule,
            Some(violation.message.clone()),
        )
    }
}

/// Names and executes the explorer's counterexample, then minimises it if asked.
/// Fails only if the explorer's schedule does not replay, which would be a checker bug.
pub fn counterexample(program: &Program, cex: &Counterexample, shorten: bool) -> Result<Found, NotEnabled> {
    let namer = Namer::new(program);
    let events: Vec<_> = cex.trace.iter().map(|t| t.event).collect();
    let run = run_events(&namer, &events)?;
    let before = run.events.len();
    if shorten {
        let m = minimize(&namer, run);
        Ok(Found { run: m.run, before: m.before })
    } else {
        Ok(Found { run, before })
    }
}
