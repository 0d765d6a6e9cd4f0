//! `semcheck check TARGET [MORE_FILES]`: the cases the targets name (one per kernel and
//! mesh size), on the chosen engine.

use semcheck::checker::{explore_with, StopReason, Verdict};
use semcheck::{Case, ModelError};
use serde_json::json;

use super::args::{CaseArgs, CheckArgs};
use super::output::{emit_document, results as results_document, OutputFormat};
use super::report::Checked;
use super::shuttle::EngineArg;
use super::watch::{style, watch};
use super::{emit, usage, EXIT_INCOMPLETE, EXIT_PROVED, EXIT_USAGE, EXIT_VIOLATION};

/// The exit code of several verdicts: a violation anywhere is 1, else anything incomplete
/// is 3, else 0.
pub(crate) fn worst<'a>(verdicts: impl IntoIterator<Item = &'a Verdict>) -> i32 {
    let mut code = EXIT_PROVED;
    for v in verdicts {
        match v {
            Verdict::Violation(_) => return EXIT_VIOLATION,
            Verdict::Incomplete { .. } => code = EXIT_INCOMPLETE,
            Verdict::Proved => {}
        }
    }
    code
}

pub(crate) fn run(args: &CheckArgs) -> Result<i32, ModelError> {
    if let Some(sizes) = &args.sizes {
        return super::sizes::run(args, sizes);
    }
    let mut cases = Vec::new();
    for target in targets(args)? {
        cases.extend(target.each_case(2, style(args.output.machine()), true)?);
    }
    // Among several files, one whose script runs to its end calling no kernel (a helper
    // module, an `__init__.py` that `kernels/*.py` takes in) has nothing to check: said,
    // and left out of the verdict. Named alone, it is an error.
    let mut no_kernel: Vec<std::path::PathBuf> = Vec::new();
    if !args.more_files.is_empty() {
        cases.retain(|c| {
            let Ok(Case { source: semcheck::Source::Python { path, kernel: None, .. }, devices, .. }) = c else {
                return true;
            };
            let idle = semcheck::frontend::document(path, *devices).is_ok_and(|d| d.calls_no_kernel());
            if idle && !no_kernel.contains(path) {
                no_kernel.push(path.clone());
            }
            !idle
        });
        if cases.is_empty() {
            return Err(usage("none of the files calls a Pallas kernel: each ran to its end without one"));
        }
        for path in &no_kernel {
            eprintln!(
                "semcheck: note: {} calls no Pallas kernel (it ran to its end without one): nothing to check there",
                path.display()
            );
        }
    }
    // One case that cannot be read or compiled: the error is the result. Among several
    // (kernels of a file, mesh sizes) it is reported and the others are still checked.
    let single = cases.len() == 1;
    let mut results: Vec<Result<Checked, (Case, ModelError)>> = Vec::new();
    let w = watch();
    // After Ctrl-C, the cases not yet checked are counted, not checked (a case whose
    // export Ctrl-C stopped is reported as such).
    let mut not_checked = 0;
    for case in cases {
        if w.interrupted() && !case.as_ref().is_err_and(|(_, e)| stopped(e)) {
            not_checked += 1;
            continue;
        }
        let result = case.and_then(|case| check_one(args, case));
        w.idle();
        let result = match result {
            Err((_, e)) if single && !stopped(&e) => return Err(e),
            other => other,
        };
        match &result {
            Ok(c) if !args.output.machine() => emit(&c.text_with(args.schedule)),
            Err((case, e)) if stopped(e) && !args.output.machine() => emit(&format!("{case}: INCOMPLETE\n  {e}\n")),
            Err((case, e)) if !args.output.machine() => {
                // The same error at another size (an unsupported kernel is unsupported at
                // every N) is said once.
                let earlier = results.iter().find_map(|r| match r {
                    Err((first, f)) if f.to_string() == e.to_string() => Some(first),
                    _ => None,
                });
                match earlier {
                    Some(first) => eprintln!("semcheck: error: {case}: the same error as {first}"),
                    None => eprintln!("semcheck: error: {case}: {e}"),
                }
            }
            _ => {}
        }
        results.push(result);
    }
    let sets = value_sets(&results);
    if !args.output.machine() {
        for set in &sets {
            emit(&set.text());
        }
        if !args.more_files.is_empty() {
            emit(&tally(&results, 1 + args.more_files.len(), no_kernel.len()));
        }
    }
    let mut code = worst(results.iter().flatten().map(|c| &c.outcome.verdict));
    let errors = |stop: bool| results.iter().any(|r| r.as_ref().is_err_and(|(_, e)| stopped(e) == stop));
    if errors(false) && code != EXIT_VIOLATION {
        code = EXIT_USAGE;
    } else if (errors(true) || w.interrupted()) && code == EXIT_PROVED {
        code = EXIT_INCOMPLETE;
    }
    if not_checked > 0 {
        eprintln!("semcheck: interrupted: {not_checked} more case(s) not checked");
    }
    // A stop of an export is the time budget's, unless Ctrl-C was pressed (the memory
    // budget ends the command).
    let reason = if w.interrupted() { StopReason::Interrupted } else { StopReason::Time };
    match args.output.format() {
        OutputFormat::Text => {}
        OutputFormat::Json => {
            let cases = results
                .iter()
                .map(|r| match r {
                    Ok(c) => c.json(),
                    Err((case, e)) if stopped(e) => Checked::stopped_json(case, e, reason),
                    Err((case, e)) => Checked::error_json(case, e),
                })
                .collect();
            let mut summary = summary(&results);
            if not_checked > 0 {
                summary["not_checked"] = json!(not_checked);
            }
            if !no_kernel.is_empty() {
                summary["no_kernel"] = no_kernel.iter().map(|p| p.display().to_string()).collect();
            }
            if !sets.is_empty() {
                summary["value_sets"] = sets.iter().map(ValueSets::json).collect();
            }
            emit_document(&results_document("check", code, cases, summary));
        }
        OutputFormat::Sarif => emit_document(&super::sarif::log(
            results.iter().flatten(),
            results.iter().filter_map(|r| r.as_ref().err()).map(|(case, e)| (case, e)),
            &no_kernel,
        )),
    }
    Ok(code)
}

/// The targets of `check`: its one target, or each of several kernel files (the same
/// options for each, every file's exports started at once).
fn targets(args: &CheckArgs) -> Result<Vec<CaseArgs>, ModelError> {
    if args.more_files.is_empty() {
        return Ok(vec![args.case.clone()]);
    }
    let names = std::iter::once(&args.case.target).chain(&args.more_files);
    let mut targets = Vec::new();
    for name in names {
        let path = std::path::Path::new(name);
        if !super::target::is_file(name) && !path.is_dir() {
            return Err(usage(format!(
                "`{name}` is not a file: several targets are kernel files (a catalogue protocol, or `all`, is \
                 checked alone)"
            )));
        }
        if !path.is_file() {
            // A folder, or a file that is not there.
            return Err(usage(semcheck::frontend::not_a_kernel_file(path)));
        }
        if targets.iter().any(|t: &CaseArgs| t.target == *name) {
            return Err(usage(format!("`{name}` is named twice")));
        }
        targets.push(CaseArgs { target: name.clone(), ..args.case.clone() });
    }
    if args.case.kernel.is_some() {
        return Err(usage("--kernel picks a kernel of one file; give one file with it"));
    }
    for t in &targets {
        semcheck::frontend::prefetch(std::path::Path::new(&t.target), &t.sizes(2)?);
    }
    Ok(targets)
}

/// The last line of a check of several files: `4 files, 6 cases: 4 proved, 1 violation,
/// 1 error; 1 file calls no kernel`.
fn tally(results: &[Result<Checked, (Case, ModelError)>], files: usize, no_kernel: usize) -> String {
    let word = |r: &Result<Checked, (Case, ModelError)>| match r {
        Ok(c) => c.outcome.verdict.name(),
        Err((_, e)) if stopped(e) => "incomplete",
        Err(_) => "error",
    };
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let parts: Vec<String> = ["proved", "violation", "incomplete", "error"]
        .into_iter()
        .filter_map(|w| {
            let n = results.iter().filter(|r| word(r) == w).count();
            (n > 0).then(|| if matches!(w, "violation" | "error") { plural(n, w) } else { format!("{n} {w}") })
        })
        .collect();
    let mut line = format!("{}, {}: {}", plural(files, "file"), plural(results.len(), "case"), parts.join(", "));
    match no_kernel {
        0 => {}
        1 => line.push_str("; 1 file calls no kernel"),
        n => line.push_str(&format!("; {n} files call no kernel")),
    }
    line.push('\n');
    line
}

/// What every `check` document's summary says: how many cases, their seconds, the peak
/// memory.
fn summary(results: &[Result<Checked, (Case, ModelError)>]) -> serde_json::Value {
    json!({
        "cases": results.len(),
        "seconds": results.iter().flatten().map(|c| c.outcome.stats.seconds).sum::<f64>(),
        "peak_rss_bytes": semcheck::memory::peak_resident_bytes(),
    })
}

/// One kernel of a kernel file called with several sets of values for its integer inputs
/// (the routings the script passes), at one mesh size: each set is a case of its own
/// (`kernel`, `kernel#2`, ...), and together they are "checked for K routings".
struct ValueSets {
    path: std::path::PathBuf,
    devices: usize,
    /// The first set's kernel name.
    group: String,
    /// How many sets the script passed.
    of: usize,
    /// Whether the values were recorded in JAX's TPU interpret mode (`--interpret-values`).
    recorded: bool,
    /// The sets checked: their kernel names and verdicts (`None`: an error).
    checked: Vec<(String, Option<&'static str>)>,
}

impl ValueSets {
    fn named(&self, verdict: Option<&str>) -> Vec<&str> {
        self.checked.iter().filter(|(_, v)| v.as_deref() == verdict).map(|(n, _)| n.as_str()).collect()
    }

    fn text(&self) -> String {
        let mut parts = Vec::new();
        for (verdict, word) in [
            (Some("proved"), "proved"),
            (Some("violation"), "violation"),
            (Some("incomplete"), "incomplete"),
            (None, "error"),
        ] {
            let names = self.named(verdict);
            if names.is_empty() {
                continue;
            }
            if verdict == Some("proved") {
                parts.push(format!("{} {word}", names.len()));
            } else {
                parts.push(format!("{} {word} ({})", names.len(), names.join(", ")));
            }
        }
        let unchecked = self.of - self.checked.len();
        if unchecked > 0 {
            parts.push(format!("{unchecked} not checked"));
        }
        let values = if self.recorded {
            "the sets of values its kernel computed from what the script passes, recorded in JAX's TPU interpret mode"
        } else {
            "the sets of values the script passes to its integer inputs"
        };
        format!(
            "{} N={}: kernel {}: checked for {} routings, {values} (the verdicts cover these only): {}\n",
            self.path.display(),
            self.devices,
            self.group,
            self.of,
            parts.join(", ")
        )
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "source": self.path.display().to_string(),
            "devices": self.devices,
            "kernel": self.group,
            "routings": self.of,
            "proved": self.named(Some("proved")),
            "violation": self.named(Some("violation")),
            "incomplete": self.named(Some("incomplete")),
            "error": self.named(None),
        })
    }
}

/// The kernels of kernel files checked over several sets of values (`prefetch.set` of
/// `python/SCHEMA.md`), in the order met.
fn value_sets(results: &[Result<Checked, (Case, ModelError)>]) -> Vec<ValueSets> {
    let mut sets: Vec<ValueSets> = Vec::new();
    for r in results {
        let (case, verdict) = match r {
            Ok(c) => (&c.case, Some(c.outcome.verdict.name())),
            Err((case, e)) if stopped(e) => (case, Some("incomplete")),
            Err((case, _)) => (case, None),
        };
        let semcheck::Source::Python { path, kernel: Some(name), .. } = &case.source else { continue };
        let Some(prefetch) = semcheck::frontend::kernel_prefetch(path, case.devices, Some(name)) else { continue };
        let Some(set) = prefetch.get("set").cloned() else { continue };
        let recorded = prefetch.get("recorded").is_some();
        let (Some(group), Some(of)) = (set["group"].as_str(), set["of"].as_u64()) else { continue };
        // A routing the script named (`semcheck.routings.routing`) says its name.
        let named = match set.get("name").and_then(|n| n.as_str()) {
            Some(label) => format!("{name} ({label})"),
            None => name.clone(),
        };
        let at = sets.iter().position(|s| s.path == *path && s.devices == case.devices && s.group == group);
        let at = at.unwrap_or_else(|| {
            sets.push(ValueSets {
                path: path.clone(),
                devices: case.devices,
                group: group.to_string(),
                of: of as usize,
                recorded,
                checked: Vec::new(),
            });
            sets.len() - 1
        });
        sets[at].checked.push((named, verdict));
    }
    sets
}

/// Whether an error is a stop (a budget or Ctrl-C ended the case's export): the case is
/// incomplete, not wrong.
fn stopped(e: &ModelError) -> bool {
    matches!(e.kind(), semcheck::ErrorKind::Stopped)
}

/// Compiles and checks one case on the chosen engine; an error comes with its case.
fn check_one(args: &CheckArgs, case: Case) -> Result<Checked, (Case, ModelError)> {
    let w = watch();
    w.case(&case.to_string(), style(args.output.machine()));
    if let semcheck::Source::Python { path, .. } = &case.source {
        // The export, unless the listing made it (`--kernel`): stopped at the case's
        // budget alone, like the listing's.
        if let Err(e) = super::target::export_unless_stopped(path, case.devices) {
            return Err((case, e));
        }
    }
    w.doing("compiling the kernel", false);
    // A kernel file's export was made (and cached) when its cases were listed: this is
    // the import and the compile alone.
    let start = std::time::Instant::now();
    let program = match semcheck::program(&case) {
        Ok(p) => p,
        Err(e) => return Err((case, e)),
    };
    let compile_seconds = start.elapsed().as_secs_f64();
    Ok(match args.engine.engine {
        EngineArg::Explore => {
            let config = args.explore.config();
            w.doing("exploring", true);
            let outcome = explore_with(&program, &config, w.control());
            // The re-checks stop at the case's budget too, leaving what the violation
            // requires undecided rather than losing the violation.
            w.doing("re-checking under the other hardware assumptions", true);
            Checked::explored_unless(case, program, outcome, &config, w.control().stop).compiled_in(compile_seconds)
        }
        EngineArg::Shuttle => {
            // The campaign keeps the time budget itself and reports how many iterations
            // ran; the watchdog only ends it if it does not stop within its grace period.
            w.doing("running the shuttle campaign", true);
            match super::shuttle::run(args, &case, &program) {
                Ok(outcome) => Checked::sampled(case, program, outcome).compiled_in(compile_seconds),
                Err(e) => return Err((case, e)),
            }
        }
    })
}
