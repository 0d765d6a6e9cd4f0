//! `semcheck check all`: every correct collective at every mesh size it can prove, and
//! every mutant at the smallest mesh size where it manifests.

use semcheck::checker::{Config, Verdict};
use semcheck::protocols::{catalogue, MeshKind};
use semcheck::ModelError;

use super::args::CheckArgs;
use super::case::Case;
use super::{EXIT_PROVED, EXIT_VIOLATION};

/// The largest ring size `check all` tries.
const MAX_RING: usize = 8;

/// The ring sizes a correct protocol must be proved for.
fn required_sizes(protocol: &str) -> usize {
    match protocol {
        "psum_scatter" => 3,
        _ => 4,
    }
}

/// Default per-case time budget of `check all`, when `--max-seconds` is not given.
const CASE_SECONDS: f64 = 30.0;

pub(crate) fn run(args: &CheckArgs) -> Result<i32, ModelError> {
    if args.case.mutant.is_some() {
        return Err(ModelError::new(
            semcheck::model::ErrorKind::UnknownName,
            "`check all` checks every mutant; drop --mutant",
        ));
    }
    let mut config: Config = args.config();
    config.budget.max_seconds = config.budget.max_seconds.or(Some(CASE_SECONDS));
    let mut cases: Vec<(Case, String)> = Vec::new();
    let mut failures = Vec::new();
    for p in catalogue() {
        let sizes: Vec<usize> = match p.mesh_kind {
            MeshKind::Ring => (2..=MAX_RING).collect(),
            MeshKind::TensorCores => vec![2],
        };
        // The correct protocol: every size until one is not proved.
        for &n in &sizes {
            let case = Case::check(p.name, None, n, args.case.repeat, &config)?;
            progress(&case, args.json);
            let verdict = case.report.verdict.clone();
            let required = p.mesh_kind == MeshKind::TensorCores || n <= required_sizes(p.name);
            let note = match &verdict {
                Verdict::Proved => "proved".to_string(),
                Verdict::Violation(_) => {
                    failures.push(format!("{} at N={n} is not correct", p.name));
                    "FAIL: the correct protocol breaks a rule".to_string()
                }
                Verdict::Incomplete { .. } if required => {
                    failures.push(format!("{} at N={n} was not proved within the budget", p.name));
                    "FAIL: required size not proved within the budget".to_string()
                }
                Verdict::Incomplete { .. } => "budget reached; larger sizes not tried".to_string(),
            };
            cases.push((case, note));
            if !matches!(verdict, Verdict::Proved) {
                break;
            }
        }
        // Each mutant: the smallest size where it manifests.
        for m in p.mutants {
            let mut caught = false;
            for &n in &sizes {
                let case = Case::check(p.name, Some(m.name), n, args.case.repeat, &config)?;
                progress(&case, args.json);
                let open = m.expected.is_empty();
                let note = match &case.report.verdict {
                    Verdict::Violation(_) if open => "open question: the checker finds a violation".to_string(),
                    Verdict::Violation(c) if m.expected.contains(&c.violation.rule) => {
                        "caught, expected rule".to_string()
                    }
                    Verdict::Violation(c) => {
                        failures.push(format!(
                            "{} --mutant {} broke {}, not an expected rule",
                            p.name, m.name, c.violation.rule
                        ));
                        "FAIL: caught, but not with an expected rule".to_string()
                    }
                    Verdict::Proved if open => format!("open question: no violation at N={n}"),
                    Verdict::Proved => format!("no violation at N={n}"),
                    Verdict::Incomplete { .. } => "budget reached".to_string(),
                };
                let stop = !matches!(case.report.verdict, Verdict::Proved);
                caught = matches!(case.report.verdict, Verdict::Violation(_));
                cases.push((case, note));
                if stop {
                    break;
                }
            }
            if !caught && !m.expected.is_empty() {
                failures.push(format!("{} --mutant {} was not caught", p.name, m.name));
            }
        }
    }
    if args.json {
        let all: Vec<_> = cases.iter().map(|(c, _)| c.json()).collect();
        println!("{}", serde_json::to_string_pretty(&all).expect("JSON of plain data"));
    } else {
        print_table(&cases);
        if failures.is_empty() {
            println!("\nall correct protocols proved at the required sizes; every mutant with an expected rule caught");
        } else {
            println!("\nFAILED:");
            for f in &failures {
                println!("  {f}");
            }
        }
    }
    Ok(if failures.is_empty() { EXIT_PROVED } else { EXIT_VIOLATION })
}

fn progress(case: &Case, json: bool) {
    if !json {
        eprintln!(
            "  {} {} N={} repeat={}: {} ({:.2} s)",
            case.protocol,
            case.mutant.as_deref().unwrap_or("-"),
            case.devices,
            case.repeat,
            case.report.verdict.name(),
            case.report.stats.seconds
        );
    }
}

fn print_table(cases: &[(Case, String)]) {
    println!(
        "{:<18} {:<16} {:>2} {:>3} {:<11} {:<15} {:>10} {:>11} {:>8}  note",
        "protocol", "mutant", "N", "rep", "verdict", "rule", "states", "transitions", "seconds"
    );
    for (c, note) in cases {
        let s = &c.report.stats;
        println!(
            "{:<18} {:<16} {:>2} {:>3} {:<11} {:<15} {:>10} {:>11} {:>8.2}  {note}",
            c.protocol,
            c.mutant.as_deref().unwrap_or("-"),
            c.devices,
            c.repeat,
            c.report.verdict.name(),
            c.rule().map_or("-", |r| r.name()),
            s.states,
            s.transitions,
            s.seconds,
        );
    }
}
