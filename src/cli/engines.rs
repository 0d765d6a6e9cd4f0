//! `semcheck engines`: every corpus case on every engine the binary has, and where they
//! agree (loom needs `--cfg loom` at build time: its column comes from `tests/loom.rs`).

use clap::Args;
use semcheck::checker::runtime::shuttle_engine::{check, Campaign, SchedulerKind, ShuttleVerdict};
use semcheck::checker::{explore, Budget, Config, Verdict};
use semcheck::corpus::{cases, Engine, Expect};
use semcheck::model::ErrorKind;
use semcheck::protocols::find;
use semcheck::ModelError;

use super::{EXIT_PROVED, EXIT_VIOLATION};

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
    #[arg(long, default_value_t = 20.0)]
    pub(crate) max_seconds: f64,
}

/// One engine's outcome on a case, as a table cell, and whether it broke a rule.
fn explorer_cell(protocol: &str, mutant: Option<&str>, n: usize, repeat: u32, secs: f64) -> (String, Option<bool>) {
    let program = find(protocol).and_then(|p| p.program(n, mutant, repeat)).expect("corpus cases compile");
    let config = Config { budget: Budget { max_seconds: Some(secs), ..Budget::default() }, ..Config::default() };
    let r = explore(&program, &config);
    match r.verdict {
        Verdict::Proved => (format!("proved ({} st)", r.stats.states), Some(false)),
        Verdict::Violation(c) => (format!("{}", c.violation.rule), Some(true)),
        Verdict::Incomplete { .. } => ("incomplete".into(), None),
    }
}

fn shuttle_cell(
    protocol: &str,
    mutant: Option<&str>,
    n: usize,
    repeat: u32,
    s: SchedulerKind,
    it: usize,
) -> (String, bool) {
    let program = find(protocol).and_then(|p| p.program(n, mutant, repeat)).expect("corpus cases compile");
    match check(&program, Campaign { scheduler: s, iterations: it, seed: 0 }) {
        Ok(r) => match r.verdict {
            ShuttleVerdict::Violation { violation, iteration, .. } => {
                (format!("{} @{iteration}", violation.rule), true)
            }
            ShuttleVerdict::Incomplete { iterations } => (format!("clean x{iterations}"), false),
        },
        Err(e) => (format!("error: {e}"), true),
    }
}

pub(crate) fn run(args: &EnginesArgs) -> Result<i32, ModelError> {
    if let Some(n) = args.devices.iter().find(|n| ![2, 4, 8].contains(n)) {
        return Err(ModelError::new(ErrorKind::UnknownName, format!("the corpus has N = 2, 4 and 8, not {n}")));
    }
    if !(args.max_seconds.is_finite() && args.max_seconds > 0.0) {
        return Err(ModelError::new(ErrorKind::UnknownName, "--max-seconds must be a positive number"));
    }
    super::shuttle::quiet_panics();
    let it = args.iterations as usize;
    let header = ["case", "expect", "explore", "shuttle random", "shuttle pct(3)", "agree"];
    println!("{:<34} {:<8} {:<22} {:<22} {:<22} {}", header[0], header[1], header[2], header[3], header[4], header[5]);
    let mut disagreements = Vec::new();
    for case in cases().into_iter().filter(|c| args.devices.contains(&c.devices)) {
        let (p, m, n, rep) = (case.protocol, case.mutant, case.devices, case.repeat);
        let (ex, ex_broken) = match case.skipped_by(Engine::Explore) {
            Some(_) => ("skipped".to_string(), None),
            None => explorer_cell(p, m, n, rep, args.max_seconds),
        };
        let (sr, sr_broken) = shuttle_cell(p, m, n, rep, SchedulerKind::Random, it);
        let (sp, sp_broken) = shuttle_cell(p, m, n, rep, SchedulerKind::Pct { depth: 3 }, it);
        let expect_broken = matches!(case.expect, Expect::Broken(_));
        // A correct (or clean-expected) case is never reported broken by any engine; a case
        // the explorer breaks is caught by both shuttle schedulers within the budget.
        let mut ok = expect_broken || !(sr_broken || sp_broken || ex_broken == Some(true));
        if ex_broken == Some(true) || (ex_broken.is_none() && expect_broken) {
            ok &= sr_broken && sp_broken;
        }
        if ex_broken.is_some() {
            ok &= ex_broken == Some(expect_broken);
        }
        if !ok {
            disagreements.push(case.name());
        }
        let expect = if expect_broken { "broken" } else { "clean" };
        println!(
            "{:<34} {:<8} {:<22} {:<22} {:<22} {}",
            case.name(),
            expect,
            ex,
            sr,
            sp,
            if ok { "yes" } else { "NO" }
        );
    }
    println!("(loom: N = 2 only, run by `RUSTFLAGS=\"--cfg loom\" cargo test --release --test loom`; see the README)");
    if disagreements.is_empty() {
        println!("every engine agrees on every case run");
        Ok(EXIT_PROVED)
    } else {
        println!("engines disagree on: {}", disagreements.join(", "));
        Ok(EXIT_VIOLATION)
    }
}
