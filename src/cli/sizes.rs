//! `semcheck check TARGET --sizes 2..256`: every ring size of a range, exact where it is
//! cheap and by the window method above (see [`semcheck::sizes`]).

use super::usage;
use semcheck::checker::focused::Environment;
use semcheck::checker::Counterexample;
use semcheck::sizes::{check_sizes, Method, Search, SizeResult, SizeVerdict, SizesConfig, SizesReport};
use semcheck::{Case, ModelError, Program};
use serde_json::json;

use super::args::CheckArgs;
use super::emit;
use super::output::{emit_document, results, verdict_of, OutputFormat};
use super::shown::Shown;
use super::shuttle::EngineArg;
use super::target::parse_size_list;
use super::watch::{style, watch};

/// The ring sizes of `--sizes`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SizeRange(pub(crate) Vec<usize>);

/// The largest ring size `--sizes` accepts.
const MAX_SIZE: usize = 1024;

/// Parses `--sizes`: `2..256` (both ends included), `2-256`, or a list `5,8,64`.
pub(crate) fn parse_sizes(s: &str) -> Result<SizeRange, String> {
    let mut sizes = parse_size_list(s, 2..=MAX_SIZE, "a ring size")?;
    sizes.sort_unstable();
    sizes.dedup();
    Ok(SizeRange(sizes))
}

pub(crate) fn run(args: &CheckArgs, sizes: &SizeRange) -> Result<i32, ModelError> {
    if args.engine.engine != EngineArg::Explore {
        return Err(usage("--sizes decides every size with the explorer and the window method; drop --engine"));
    }
    // The explorer's budgets are the method's, per size; --max-seconds and
    // --max-memory-mib bound the whole command (the watchdog's).
    let given = args.explore.explorer_only();
    if !given.is_empty() {
        return Err(usage(format!("--sizes sets the explorer's budgets per size; drop {}", given.join(", "))));
    }
    // A kernel file's exports at every size start now, on the export server's cores.
    if super::target::is_file(&args.case.target) {
        semcheck::frontend::prefetch(std::path::Path::new(&args.case.target), &sizes.0);
    }
    // The case at the smallest size (a kernel file is exported there once, and the
    // export is reused when that size is checked).
    let cases = args.case.cases(sizes.0[0], style(args.output.machine()))?;
    if cases.len() > 1 {
        let names: Vec<String> = cases
            .iter()
            .filter_map(|c| match &c.source {
                semcheck::Source::Python { kernel: Some(k), .. } => Some(k.clone()),
                _ => None,
            })
            .collect();
        return Err(usage(format!(
            "{} has several communicating kernels; --sizes checks one: pick it with --kernel ({})",
            args.case.target,
            names.join(", ")
        )));
    }
    let case = cases.into_iter().next().expect("one case at the smallest size");
    if let Some(p) = case.source.protocol() {
        let p = semcheck::protocols::find(p)?;
        if p.mesh_kind != semcheck::protocols::MeshKind::Ring {
            return Err(usage(format!("{} runs on the two TensorCores of one chip, not on rings of any size", p.name)));
        }
    }
    let mut config = SizesConfig::default();
    if let Some(r) = args.window_radius {
        config.max_radius = r as usize;
    }
    let mut exact = args.exact_max_states != Some(0);
    if let Some(m) = args.exact_max_states {
        config.exact.max_states = Some(m);
    }
    // The watchdog ends a run that exceeds the memory budget or is interrupted, saying
    // which sizes were decided before.
    let w = watch();
    w.case(
        &format!("{} (repeat {}), {}", case.source, case.repeat, sizes_text(&sizes.0)),
        style(args.output.machine()),
    );
    w.doing(&format!("checking N = {}", sizes.0[0]), false);
    let mut decided: Vec<usize> = Vec::new();
    let mut tally = [0usize; 3];
    let report = check_sizes(&case, &sizes.0, &config, &mut exact, |r| {
        tracing::info!(devices = r.devices, verdict = r.verdict.name(), seconds = r.seconds, "size decided");
        decided.push(r.devices);
        tally[match r.verdict {
            SizeVerdict::Proved => 0,
            SizeVerdict::Violation { .. } => 1,
            SizeVerdict::NotProved { .. } => 2,
        }] += 1;
        w.so_far(&format!(
            "decided before it: {} ({} proved, {} with a violation, {} not proved)",
            sizes_text(&decided),
            tally[0],
            tally[1],
            tally[2]
        ));
        if let Some(next) = sizes.0.get(decided.len()) {
            w.doing(&format!("checking N = {next}"), false);
        }
    });
    w.idle();
    let error = report.error.as_ref().map(|e| format!("at N = {}: {}", e.devices, e.error));
    if let (Some(e), OutputFormat::Text | OutputFormat::Sarif) = (&report.error, args.output.format()) {
        // The sizes decided before the error are reported, then the error.
        if args.output.format() == OutputFormat::Text && !report.sizes.is_empty() {
            emit(&text(&case, &report, args.schedule));
        }
        return Err(ModelError::new(e.error.kind().clone(), error.expect("an error")));
    }
    let code = if error.is_some() { super::EXIT_USAGE } else { report.exit_code() };
    match args.output.format() {
        OutputFormat::Text => emit(&text(&case, &report, args.schedule)),
        OutputFormat::Json => {
            // An error at one size keeps the sizes decided before it: the case's verdict
            // is `error`, with the error and the report of those sizes.
            let value = json!({
                "kind": "sizes",
                "source": case.source,
                "protocol": case.source.protocol(),
                "mutant": case.source.mutant(),
                "repeat": case.repeat,
                "semantics": case.semantics,
                "prefetch": prefetch_by_size(&case, &report),
                "verdict": verdict_of(code),
                "error": error,
                "report": report,
                // The first size's violation as `check --devices N --json` shows it.
                "counterexample": first_counterexample(&case, &report).map(|f| json!({
                    "devices": f.devices,
                    "violation": f.shown.json(&f.program, f.counterexample),
                })),
            });
            let summary = json!({
                "cases": 1,
                "seconds": report.seconds,
                "peak_rss_bytes": semcheck::memory::peak_resident_bytes(),
            });
            emit_document(&results("check", code, vec![value], summary));
        }
        OutputFormat::Sarif => {
            let broken: Vec<usize> = report
                .sizes
                .iter()
                .filter(|r| matches!(r.verdict, SizeVerdict::Violation { .. }))
                .map(|r| r.devices)
                .collect();
            let not_proved: Vec<(String, String)> = groups(&report)
                .iter()
                .filter_map(|g| match &g.results[0].verdict {
                    SizeVerdict::NotProved { reason } => Some((range(g.first, g.last), reason.clone())),
                    _ => None,
                })
                .collect();
            emit_document(&super::sarif::sizes_log(
                &case,
                first_counterexample(&case, &report).as_ref(),
                &sizes_text(&broken),
                &not_proved,
            ));
        }
    }
    Ok(code)
}

/// A run of consecutive sizes decided the same way.
struct Group<'a> {
    first: usize,
    last: usize,
    results: Vec<&'a SizeResult>,
}

/// What makes two consecutive sizes one line of the report.
fn key(r: &SizeResult) -> (String, String) {
    let how = match &r.method {
        Method::Exact { fallback: None, .. } => "exact".to_string(),
        Method::Exact { fallback: Some(f), .. } => format!("exact-fallback {f}"),
        Method::Window(w) => format!(
            "window {} {} {} {:?} {:?}",
            w.radius,
            w.tracked,
            w.classes == 1,
            w.confirmed_by.map(|c| c.search),
            w.escalated_from
        ),
    };
    let verdict = match &r.verdict {
        SizeVerdict::Violation { counterexample } => format!("violation {}", counterexample.violation.rule),
        v => v.name().to_string(),
    };
    (verdict, how)
}

fn groups(report: &SizesReport) -> Vec<Group<'_>> {
    let mut out: Vec<Group<'_>> = Vec::new();
    for r in &report.sizes {
        match out.last_mut() {
            Some(g) if g.last + 1 == r.devices && key(g.results[0]) == key(r) => {
                g.last = r.devices;
                g.results.push(r);
            }
            _ => out.push(Group { first: r.devices, last: r.devices, results: vec![r] }),
        }
    }
    out
}

/// `N = 2..256` for consecutive sizes, `N = 2..5, 8, 16..18` otherwise (sizes in order).
fn sizes_text(all: &[usize]) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &n in all {
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == n => *last = n,
            _ => runs.push((n, n)),
        }
    }
    let parts: Vec<String> =
        runs.iter().map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}..{b}") }).collect();
    format!("N = {}", parts.join(", "))
}

/// Each distinct claim the window method checked on a size's compiled program, with the
/// sizes it holds for, in the order first met (a claim that names its size, `at N = 6`,
/// is counted without it).
fn claims(report: &SizesReport) -> Vec<(String, Vec<usize>)> {
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for r in &report.sizes {
        for line in &r.checked {
            let claim = line.replace(&format!(" at N = {}", r.devices), "");
            match out.iter_mut().find(|(c, _)| *c == claim) {
                Some((_, sizes)) => {
                    if !sizes.contains(&r.devices) {
                        sizes.push(r.devices);
                    }
                }
                None => out.push((claim, vec![r.devices])),
            }
        }
    }
    out
}

fn range(first: usize, last: usize) -> String {
    if first == last {
        format!("N = {first}")
    } else {
        format!("N = {first}..{last}")
    }
}

fn spread(values: impl Iterator<Item = u64>) -> String {
    let v: Vec<u64> = values.collect();
    let (lo, hi) = (v.iter().min().copied().unwrap_or(0), v.iter().max().copied().unwrap_or(0));
    if lo == hi {
        format!("{lo}")
    } else {
        format!("{lo} to {hi}")
    }
}

/// The report for a person.
fn text(case: &Case, report: &SizesReport, schedule: bool) -> String {
    let mut out = String::new();
    let all: Vec<usize> = report.sizes.iter().map(|r| r.devices).collect();
    let repeat = format!("repeat {}", case.repeat);
    let head = match report.exit_code() {
        _ if report.error.is_some() => {
            let at = report.error.as_ref().map_or(0, |e| e.devices);
            format!(
                "{} ({repeat}): ERROR at N = {at} (see the error below); decided before it: {}",
                case.source,
                sizes_text(&all)
            )
        }
        0 => format!("{} ({repeat}): PROVED for every ring size {}", case.source, sizes_text(&all)),
        1 => {
            let first = report.sizes.iter().find(|r| matches!(r.verdict, SizeVerdict::Violation { .. }));
            let r = first.expect("a violation");
            let SizeVerdict::Violation { counterexample } = &r.verdict else { unreachable!() };
            format!("{} ({repeat}): VIOLATION ({}) from N = {}", case.source, counterexample.violation.rule, r.devices)
        }
        _ => format!("{} ({repeat}): NOT PROVED for some sizes", case.source),
    };
    out.push_str(&head);
    out.push('\n');
    let total = report.seconds;
    for g in groups(report) {
        let first = g.results[0];
        let verdict = match &first.verdict {
            SizeVerdict::Proved => "proved".to_string(),
            SizeVerdict::Violation { counterexample } => format!("VIOLATION ({})", counterexample.violation.rule),
            SizeVerdict::NotProved { .. } => "NOT PROVED".to_string(),
        };
        let secs: f64 = g.results.iter().map(|r| r.seconds).sum();
        let how = match &first.method {
            Method::Exact { fallback, .. } => {
                let states = spread(g.results.iter().map(|r| match &r.method {
                    Method::Exact { stats, .. } => stats.states,
                    _ => 0,
                }));
                match fallback {
                    None => format!("exact exploration of the whole ring ({states} states per N)"),
                    Some(why) => format!(
                        "the window method does not apply ({why}): exact exploration of the whole ring only ({states} states per N)"
                    ),
                }
            }
            Method::Window(w) => {
                let states = spread(g.results.iter().map(|r| match &r.method {
                    Method::Window(w) => w.window_stats.states,
                    _ => 0,
                }));
                let (radius, tracked, classes) = (w.radius, w.tracked, w.classes);
                let around = if classes == 1 {
                    "around d0 (every device's window is the same)".to_string()
                } else {
                    format!("around every device ({classes} classes of identical windows)")
                };
                let mut s = format!(
                    "windows of radius {radius} ({tracked} devices) {around}: race, outside-kernel, semaphore-leak ({states} window states per N)"
                );
                if !w.escalated_from.is_empty() {
                    let r: Vec<String> = w.escalated_from.iter().map(|r| r.to_string()).collect();
                    let proved = matches!(first.verdict, SizeVerdict::Proved);
                    let when = if proved { " first" } else { "" };
                    s.push_str(&format!("; radius {} reported a violation at the center{when}", r.join(", ")));
                }
                match (&first.verdict, w.confirmed_by) {
                    (SizeVerdict::Violation { .. }, Some(c)) => s.push_str(&format!(
                        "\n                 confirmed on the real ring: {}",
                        match c.search {
                            Search::FollowWindow => format!(
                                "the window's own execution replays with the rest of the ring moving only when it must ({} events)",
                                c.states
                            ),
                            Search::Focused { environment } => format!(
                                "found by a search in which {} devices interleave and {}",
                                c.active,
                                match environment {
                                    Environment::Held => "the others never start",
                                    Environment::Lazy => "the others move only when they must",
                                    Environment::Eager => "the others run as far ahead as they can",
                                }
                            ),
                        }
                    )),
                    (SizeVerdict::NotProved { .. }, _) => {}
                    _ => s.push_str(
                        "\n                 + one run of the whole ring per N: deadlock, wrong-result, final barrier semaphore",
                    ),
                }
                s
            }
        };
        out.push_str(&format!("  {:<14} {verdict}: {how} [{secs:.1} s]\n", range(g.first, g.last)));
        if let SizeVerdict::NotProved { reason } = &first.verdict {
            out.push_str(&format!("                 {reason}\n"));
        }
    }
    let claims = claims(report);
    if !claims.is_empty() {
        out.push_str("  checked (on each size's compiled program, for the sizes in brackets):\n");
        for (claim, sizes) in claims {
            out.push_str(&format!("    {claim} [{}]\n", sizes_text(&sizes)));
        }
    }
    let values = if prefetch_by_size(case, report).is_empty() {
        ""
    } else {
        "; at each N, the values the script passes to its scalar-prefetch and SMEM operands"
    };
    out.push_str(&format!(
        "  assumed: the model's semantics (semcheck-model crate docs); {repeat}; {}{values}\n",
        case.semantics
    ));
    if let Some(e) = &report.error {
        out.push_str(&format!("  not decided: N = {} and every size after it (the error ends the run)\n", e.devices));
    }
    out.push_str(&format!(
        "  not claimed: ring sizes outside those listed; other repeat counts or hardware assumptions [{total:.1} s wall-clock in all; a size's own seconds include its compiling, done alongside]\n"
    ));
    if let Some(f) = first_counterexample(case, report) {
        // As `check --devices N` shows it: minimised, rotated and explained.
        let (c, shown) = (f.counterexample, &f.shown);
        out.push_str(&format!(
            "counterexample at N = {}: {}: {}\n",
            f.devices,
            shown.violation(c).rule,
            shown.message(c)
        ));
        out.push_str(&shown.text(&f.program, schedule));
    } else if let Some((n, c)) = first_violation(report) {
        out.push_str(&format!("counterexample at N = {n}: {} ({} events)\n", c.violation, c.schedule.len()));
    }
    out
}

/// Per size, the scalar-prefetch values a kernel file's kernel was read with (the
/// `prefetch` of `python/SCHEMA.md`): the sizes' verdicts cover those values only. Empty
/// for catalogue kernels and kernels without scalar prefetch.
fn prefetch_by_size(case: &Case, report: &SizesReport) -> serde_json::Map<String, serde_json::Value> {
    let mut out = serde_json::Map::new();
    if let semcheck::Source::Python { path, kernel, .. } = &case.source {
        for r in &report.sizes {
            if let Some(p) = semcheck::frontend::kernel_prefetch(path, r.devices, kernel.as_deref()) {
                out.insert(r.devices.to_string(), p);
            }
        }
    }
    out
}

/// The first size with a violation, and its counterexample.
fn first_violation(report: &SizesReport) -> Option<(usize, &Counterexample)> {
    report.sizes.iter().find_map(|r| match &r.verdict {
        SizeVerdict::Violation { counterexample } => Some((r.devices, counterexample)),
        _ => None,
    })
}

/// The counterexample of the first size with a violation, as every command shows it.
pub(crate) struct FirstViolation<'r> {
    /// The size.
    pub(crate) devices: usize,
    /// The program at that size.
    pub(crate) program: Program,
    /// The counterexample the range found there.
    pub(crate) counterexample: &'r Counterexample,
    /// It minimised, rotated and explained.
    pub(crate) shown: Shown,
}

/// The first size's violation (`None` without one, or when the size's program does not
/// compile again).
fn first_counterexample<'r>(case: &Case, report: &'r SizesReport) -> Option<FirstViolation<'r>> {
    let (devices, counterexample) = first_violation(report)?;
    let mut at = case.clone();
    at.devices = devices;
    let program = semcheck::program(&at).ok()?;
    let shown = Shown::of(&program, counterexample);
    Some(FirstViolation { devices, program, counterexample, shown })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_a_range_or_a_list() {
        assert_eq!(parse_sizes("2..5"), Ok(SizeRange(vec![2, 3, 4, 5])));
        assert_eq!(parse_sizes("2..=4"), Ok(SizeRange(vec![2, 3, 4])));
        assert_eq!(parse_sizes("3-4"), Ok(SizeRange(vec![3, 4])));
        assert_eq!(parse_sizes("8,5,5"), Ok(SizeRange(vec![5, 8])));
        assert!(parse_sizes("5..2").is_err());
        assert!(parse_sizes("1..4").is_err());
        assert!(parse_sizes("2..5000").is_err());
        assert!(parse_sizes("two").is_err());
    }

    #[test]
    fn sizes_are_written_as_runs() {
        assert_eq!(sizes_text(&[2, 3, 4, 5]), "N = 2..5");
        assert_eq!(sizes_text(&[6]), "N = 6");
        assert_eq!(sizes_text(&[2, 3, 5, 8, 9, 10]), "N = 2..3, 5, 8..10");
    }

    #[test]
    fn each_claim_is_listed_once_with_the_sizes_it_holds_for() {
        let result = |devices: usize, checked: &[String]| SizeResult {
            devices,
            verdict: SizeVerdict::Proved,
            method: Method::Window(Default::default()),
            checked: checked.to_vec(),
            seconds: 0.0,
        };
        let classes = |n: usize| {
            format!(
                "the windows of radius 1 fall into 2 classes of identical windows at N = {n}: one explored per class"
            )
        };
        let report = SizesReport {
            sizes: vec![
                result(4, &["radius 1".into(), classes(4)]),
                result(5, &["radius 1".into(), "radius 2".into()]),
                result(6, &["radius 1".into(), classes(6)]),
            ],
            config: SizesConfig::default(),
            seconds: 0.0,
            error: None,
        };
        let got = claims(&report);
        let want = vec![
            ("radius 1".to_string(), vec![4, 5, 6]),
            (
                "the windows of radius 1 fall into 2 classes of identical windows: one explored per class".to_string(),
                vec![4, 6],
            ),
            ("radius 2".to_string(), vec![5]),
        ];
        assert_eq!(got, want);
    }
}
