//! Counterexamples people can read, replay and look at.
//!
//! * [`names`]: stable names of events (an event is named by its operation, a DMA event by
//!   the operation that started the DMA), never pcs or indices;
//! * [`format`](mod@format): the versioned, line-oriented trace file (see [`TraceFile`]);
//! * [`run`]: executing a schedule and recording every state;
//! * [`replay`](mod@replay): re-executing a trace file against the current model, checking every
//!   event is enabled and the same rule breaks;
//! * [`minimize`](mod@minimize): dropping events that play no part in the violation;
//! * [`lockstep`](mod@lockstep): the lock-step schedule of the seed's traversal tables;
//! * [`render`](mod@render): text, table, mermaid, dot and JSON views.
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
    /// Whether the minimiser ran.
    pub minimized: bool,
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
                minimized: self.minimized.then(|| format!("{} -> {} events", self.before, self.run.events.len())),
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
        Ok(Found { run: m.run, before: m.before, minimized: true })
    } else {
        Ok(Found { run, before, minimized: false })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{explore, Config, Strategy, Verdict};

    fn found(protocol: &str, mutant: &str, n: usize, strategy: Strategy) -> (Program, Found) {
        let p = semcheck_protocols::find(protocol).unwrap();
        let program = p.program(n, Some(mutant), p.mutant(mutant).unwrap().repeat).unwrap();
        let config = Config { strategy, ..Config::default() };
        let Verdict::Violation(cex) = explore(&program, &config).verdict else {
            panic!("{protocol} {mutant}: no violation")
        };
        let f = counterexample(&program, &cex, true).unwrap();
        assert_eq!(f.run.ending.violation().unwrap().rule, cex.violation.rule);
        (program, f)
    }

    #[test]
    fn the_minimiser_shortens_a_depth_first_counterexample_and_keeps_the_rule() {
        let (_, dfs) = found("psum", "no-capacity", 3, Strategy::Dfs);
        let (_, bfs) = found("psum", "no-capacity", 3, Strategy::Bfs);
        assert!(dfs.run.events.len() < dfs.before, "{} -> {}", dfs.before, dfs.run.events.len());
        assert!(bfs.run.events.len() <= bfs.before);
    }

    #[test]
    fn a_minimised_run_is_one_minimal() {
        let (program, f) = found("all_gather", "shared-recv-sem", 3, Strategy::Bfs);
        let namer = Namer::new(&program);
        let rule = f.run.ending.violation().unwrap().rule;
        for i in 0..f.run.names.len() {
            let mut shorter = f.run.names.clone();
            shorter.remove(i);
            let still = run_names(&namer, &shorter).ok().and_then(|r| r.ending.violation().map(|v| v.rule));
            assert_ne!(still, Some(rule), "event {} could still be dropped", i + 1);
        }
    }

    #[test]
    fn names_are_unique_among_enabled_events() {
        let program = semcheck_protocols::find("psum_scatter").unwrap().program(2, None, 1).unwrap();
        let namer = Namer::new(&program);
        let sim = lockstep(&program).unwrap();
        assert!(!sim.events.is_empty());
        let mut state = program.initial_state();
        let mut values = program.values.clone();
        let (mut enabled, mut next) = (Vec::new(), Vec::new());
        for _ in 0..200 {
            enabled.clear();
            program.enabled(&state, &mut enabled);
            let Some(&first) = enabled.last() else { break };
            let mut names: Vec<String> = enabled.iter().map(|&e| namer.event(&state, e)).collect();
            names.sort();
            let n = names.len();
            names.dedup();
            assert_eq!(names.len(), n, "two enabled events share a name");
            assert!(matches!(program.step(&state, first, &mut values, &mut next), semcheck_model::StepOutcome::Next));
            std::mem::swap(&mut state, &mut next);
        }
    }

    #[test]
    fn the_lockstep_run_of_a_mutant_that_needs_run_ahead_is_clean() {
        // Lock step never runs ahead, so the no-capacity mutant behaves like psum there.
        let program = semcheck_protocols::find("psum").unwrap().program(4, Some("no-capacity"), 1).unwrap();
        let sim = lockstep(&program).unwrap();
        let correct = semcheck_protocols::find("psum").unwrap().program(4, None, 1).unwrap();
        let sim2 = lockstep(&correct).unwrap();
        let names: Vec<_> = sim.checkpoints.iter().map(|c| c.name.clone()).collect();
        assert_eq!(names, sim2.checkpoints.iter().map(|c| c.name.clone()).collect::<Vec<_>>());
        assert_eq!(names, ["initial", "prologue", "(0)", "(1)", "(2)", "(3)"]);
    }

    #[test]
    fn every_rendering_of_a_counterexample_mentions_the_rule() {
        let (program, f) = found("psum", "no-capacity", 2, Strategy::Bfs);
        let file = f.trace_file(&program, "psum", Some("no-capacity"), &engine_name(&Config::default()));
        for format in [Format::Text, Format::Table, Format::Mermaid, Format::Dot, Format::Json] {
            let out = render(format, &program, &file.header, &f.run);
            assert!(out.contains("race"), "{format:?}");
        }
        let mermaid = render(Format::Mermaid, &program, &file.header, &f.run);
        assert!(mermaid.starts_with("sequenceDiagram\n"));
        assert!(!mermaid.lines().skip(1).any(|l| l.contains(';')), "`;` ends a Mermaid statement");
        let dot = render(Format::Dot, &program, &file.header, &f.run);
        assert!(dot.starts_with("digraph {") && dot.contains("fillcolor"));
        let json: serde_json::Value =
            serde_json::from_str(&render(Format::Json, &program, &file.header, &f.run)).unwrap();
        assert_eq!(json["events"].as_array().unwrap().len(), f.run.events.len());
    }
}
