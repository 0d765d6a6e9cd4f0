//! `semcheck check all`: every correct collective at every mesh size it can prove, and
//! every mutant at the smallest mesh size where it manifests.

use super::watch::{style, watch};
use semcheck::checker::{explore, Config, Verdict};
use semcheck::protocols::{catalogue, MeshKind};
use semcheck::ModelError;
use serde_json::json;

use super::args::CheckArgs;
use super::output::{emit_document, results, OutputFormat};
use super::report::Checked;
use super::{emitln, usage, EXIT_PROVED, EXIT_VIOLATION};

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

fn run_case(
    protocol: &str,
    mutant: Option<&str>,
    n: usize,
    repeat: Option<u32>,
    config: &Config,
) -> Result<Checked, ModelError> {
    let mut case = semcheck::catalogue_case(protocol, mutant, n)?;
    if let Some(r) = repeat {
        case.repeat = r;
    }
    watch().doing(&format!("checking {case}"), false);
    let start = std::time::Instant::now();
    let program = semcheck::program(&case)?;
    let compiled = start.elapsed().as_secs_f64();
    let outcome = explore(&program, config);
    Ok(Checked::explored(case, program, outcome, config).compiled_in(compiled))
}

pub(crate) fn run(args: &CheckArgs) -> Result<i32, ModelError> {
    if args.case.mutant.is_some() || args.case.kernel.is_some() || args.case.interpret_values {
        return Err(usage(
            "`check all` checks every protocol and mutant; drop --mutant / --kernel / --interpret-values",
        ));
    }
    if args.case.devices.is_some() {
        return Err(usage("`check all` chooses the mesh sizes itself (up to 8); drop --devices"));
    }
    if !args.case.semantics.semantics().is_default() {
        return Err(usage(
            "`check all` checks the catalogue under the default assumptions; drop --dma-order / --dma-landing",
        ));
    }
    let mut config: Config = args.explore.config();
    config.budget.max_seconds = config.budget.max_seconds.or(Some(CASE_SECONDS));
    let mut rows: Vec<(Checked, String)> = Vec::new();
    let mut failures = Vec::new();
    // The watchdog ends a run that exceeds the memory budget or is interrupted.
    watch().case("check all", style(args.output.machine()));
    for p in catalogue() {
        let sizes: Vec<usize> = match p.mesh_kind {
            MeshKind::Ring => (2..=MAX_RING).collect(),
            MeshKind::TensorCores => vec![2],
        };
        // The correct protocol: every size until one is not proved.
        for &n in &sizes {
            let c = run_case(p.name, None, n, args.case.repeat, &config)?;
            progress(&c, args.output.machine());
            let required = p.mesh_kind == MeshKind::TensorCores || n <= required_sizes(p.name);
            let note = match &c.outcome.verdict {
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
            let stop = !matches!(c.outcome.verdict, Verdict::Proved);
            rows.push((c, note));
            if stop {
                break;
            }
        }
        // Each mutant: the smallest size where it manifests.
        for m in p.mutants {
            let mut caught = false;
            for &n in &sizes {
                let c = run_case(p.name, Some(m.name), n, args.case.repeat, &config)?;
                progress(&c, args.output.machine());
                let open = m.expected.is_empty();
                let note = match &c.outcome.verdict {
                    Verdict::Violation(_) if open => "open question: the checker finds a violation".to_string(),
                    Verdict::Violation(x) if m.expected.contains(&x.violation.rule) => {
                        "caught, expected rule".to_string()
                    }
                    Verdict::Violation(x) => {
                        failures.push(format!(
                            "{} --mutant {} broke {}, not an expected rule",
                            p.name, m.name, x.violation.rule
                        ));
                        "FAIL: caught, but not with an expected rule".to_string()
                    }
                    Verdict::Proved if open => format!("open question: no violation at N={n}"),
                    Verdict::Proved => format!("no violation at N={n}"),
                    Verdict::Incomplete { .. } => "budget reached".to_string(),
                };
                let stop = !matches!(c.outcome.verdict, Verdict::Proved);
                caught = matches!(c.outcome.verdict, Verdict::Violation(_));
                rows.push((c, note));
                if stop {
                    break;
                }
            }
            if !caught && !m.expected.is_empty() {
                failures.push(format!("{} --mutant {} was not caught", p.name, m.name));
            }
        }
    }
    let code = if failures.is_empty() { EXIT_PROVED } else { EXIT_VIOLATION };
    if args.output.format() != OutputFormat::Text {
        if args.output.format() == OutputFormat::Sarif {
            emit_document(&super::sarif::log(rows.iter().map(|(c, _)| c), std::iter::empty(), &[]));
            return Ok(code);
        }
        let cases: Vec<_> = rows
            .iter()
            .map(|(c, note)| {
                let mut v = c.json();
                v["note"] = json!(note);
                v
            })
            .collect();
        let summary = json!({
            "ok": failures.is_empty(),
            "failures": failures,
            "cases": rows.len(),
            "seconds": rows.iter().map(|(c, _)| c.outcome.stats.seconds).sum::<f64>(),
            "peak_rss_bytes": semcheck::memory::peak_resident_bytes(),
        });
        emit_document(&results("check", code, cases, summary));
    } else {
        print_table(&rows);
        if failures.is_empty() {
            emitln!("\nall correct protocols proved at the required sizes; every mutant with an expected rule caught");
        } else {
            emitln!("\nFAILED:");
            for f in &failures {
                emitln!("  {f}");
            }
        }
    }
    Ok(code)
}

fn progress(c: &Checked, json: bool) {
    watch().idle();
    if !json {
        eprintln!("  {}: {} ({:.2} s)", c.case, c.outcome.verdict.name(), c.outcome.stats.seconds);
    }
}

fn print_table(rows: &[(Checked, String)]) {
    emitln!(
        "{:<18} {:<16} {:>2} {:>3} {:<11} {:<15} {:<15} {:>10} {:>11} {:>8}  note",
        "protocol",
        "mutant",
        "N",
        "rep",
        "verdict",
        "rule",
        "requires",
        "states",
        "transitions",
        "seconds"
    );
    for (c, note) in rows {
        let s = &c.outcome.stats;
        let requires = match c.requires() {
            None => "-".to_string(),
            Some(names) if names.is_empty() => "nothing".to_string(),
            Some(names) => names.join(","),
        };
        emitln!(
            "{:<18} {:<16} {:>2} {:>3} {:<11} {:<15} {:<15} {:>10} {:>11} {:>8.2}  {note}",
            c.case.source.protocol().unwrap_or("-"),
            c.case.source.mutant().unwrap_or("-"),
            c.case.devices,
            c.case.repeat,
            c.outcome.verdict.name(),
            c.outcome.verdict.violation().map_or("-", |v| v.rule.name()),
            requires,
            s.states,
            s.transitions,
            s.seconds,
        );
    }
}
