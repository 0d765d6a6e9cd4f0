//! `semcheck engines`: every corpus case on every engine the binary has, and where they
//! agree (loom needs `--cfg loom` at build time: its column comes from `tests/loom.rs`).

use clap::Args;
use semcheck::checker::runtime::shuttle_engine::{check, Campaign, SchedulerKind, ShuttleVerdict};
use semcheck::checker::{explore, Budget, Config, Verdict};
use semcheck::corpus::{cases, Engine, Entry, Expect};
use semcheck::{ErrorKind, ModelError, Program};

use super::{emitln, EXIT_INCOMPLETE, EXIT_PROVED, EXIT_VIOLATION};

/// Arguments of `semcheck engines`.
#[derive(Args, Debug)]
pub(crate) struct EnginesArgs {
    /// Mesh sizes to run (comma-separated; the corpus has 2, 4 and 8).
    #[arg(long, value_delimiter = ',', default_values_t = [2usize, 4])]
    pub(crate) devices: Vec<usize>,
    /// Shuttle iterations per scheduler and case (the budget a mutant must be caught in).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub(crate) iterations: u64,
    /// Explorer seconds per case.
    #[arg(long, default_value_t = 20.0, value_parser = super::args::positive_seconds)]
    pub(crate) max_seconds: f64,
}

/// What one engine said about a case.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Said {
    /// A rule broken.
    Broken,
    /// Proved (explorer) or nothing found (sampled).
    Clean,
    /// The engine did not decide (budget).
    Undecided,
}

fn explorer_cell(program: &Program, secs: f64) -> (String, Said) {
    let config = Config { budget: Budget { max_seconds: Some(secs), ..Budget::default() }, ..Config::default() };
    let r = explore(program, &config);
    match r.verdict {
        Verdict::Proved => (format!("proved ({} st)", r.stats.states), Said::Clean),
        Verdict::Violation(c) => (format!("{}", c.violation.rule), Said::Broken),
        Verdict::Incomplete { .. } => ("incomplete".into(), Said::Undecided),
    }
}

fn shuttle_cell(program: &Program, s: SchedulerKind, it: usize) -> (String, Said) {
    match check(program, Campaign { scheduler: s, iterations: it, seed: 0 }) {
        Ok(r) => match r.verdict {
            ShuttleVerdict::Violation { violation, iteration, .. } => {
                (format!("{} @{iteration}", violation.rule), Said::Broken)
            }
            ShuttleVerdict::Incomplete { iterations } => (format!("clean x{iterations}"), Said::Clean),
        },
        Err(e) => (format!("error: {e}"), Said::Broken),
    }
}

/// How the engines' answers on one case compare.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Agreement {
    /// Every engine gave the expected answer.
    Agree,
    /// A sampled engine did not find a bug within its budget (not a contradiction).
    Missed,
    /// An engine reported a bug in a clean case, or the explorer contradicts the corpus.
    Disagree,
}

fn compare(entry: &Entry, explorer: Said, sampled: [Said; 2]) -> Agreement {
    let broken = matches!(entry.expect, Expect::Broken(_));
    if !broken && (explorer == Said::Broken || sampled.contains(&Said::Broken)) {
        return Agreement::Disagree;
    }
    if explorer != Said::Undecided && (explorer == Said::Broken) != broken {
        return Agreement::Disagree;
    }
    if broken && sampled.contains(&Said::Clean) {
        return Agreement::Missed;
    }
    Agreement::Agree
}

pub(crate) fn run(args: &EnginesArgs) -> Result<i32, ModelError> {
    if let Some(n) = args.devices.iter().find(|n| ![2, 4, 8].contains(n)) {
        return Err(ModelError::new(ErrorKind::UnknownName, format!("the corpus has N = 2, 4 and 8, not {n}")));
    }
    super::shuttle::quiet_panics();
    let it = args.iterations as usize;
    emitln!("{:<34} {:<8} {:<22} {:<22} {:<22} agree", "case", "expect", "explore", "shuttle random", "shuttle pct(3)");
    let mut worst = Agreement::Agree;
    let mut notes = Vec::new();
    for entry in cases().into_iter().filter(|c| args.devices.contains(&c.case.devices)) {
        let program = semcheck::program(&entry.case)?;
        let (ex, ex_said) = match entry.skipped_by(Engine::Explore) {
            Some(_) => ("skipped".to_string(), Said::Undecided),
            None => explorer_cell(&program, args.max_seconds),
        };
        let (sr, sr_said) = shuttle_cell(&program, SchedulerKind::Random, it);
        let (sp, sp_said) = shuttle_cell(&program, SchedulerKind::Pct { depth: 3 }, it);
        let agreement = compare(&entry, ex_said, [sr_said, sp_said]);
        let word = match agreement {
            Agreement::Agree => "yes",
            Agreement::Missed => "missed",
            Agreement::Disagree => "NO",
        };
        if agreement != Agreement::Agree {
            notes.push(format!("{}: {word}", entry.name()));
        }
        worst = worst.max(agreement);
        let expect = if matches!(entry.expect, Expect::Broken(_)) { "broken" } else { "clean" };
        emitln!("{:<34} {:<8} {:<22} {:<22} {:<22} {word}", entry.name(), expect, ex, sr, sp);
    }
    emitln!("(loom: N = 2 only, run by `RUSTFLAGS=\"--cfg loom\" cargo test --release --test loom`; see the README)");
    emitln!("(missed: a sampled engine did not find the bug within {it} iterations; that is not a contradiction)");
    Ok(match worst {
        Agreement::Agree => {
            emitln!("every engine agrees on every case run");
            EXIT_PROVED
        }
        Agreement::Missed => {
            emitln!("no contradiction; sampled engines missed: {}", notes.join(", "));
            EXIT_INCOMPLETE
        }
        Agreement::Disagree => {
            emitln!("engines disagree: {}", notes.join(", "));
            EXIT_VIOLATION
        }
    })
}
