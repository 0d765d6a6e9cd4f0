//! `semcheck mutate TARGET --devices N`: every single-edit mutant of the kernel, checked,
//! as a kill matrix; with `--sync-only`, the synchronisation whose deletion stays proved at
//! every mesh size asked for.

use super::watch::{style, watch};
use std::time::Instant;

use clap::Args;
use semcheck::checker::{explore, Budget, Config, Outcome, Verdict};
use semcheck::model::ir::{Loc, StmtId};
use semcheck::model::mutate::Operator;
use semcheck::model::stmt_text;
use semcheck::mutate::{default_threads, kill_matrix, redundant_sync, Fate, MutantResult, SyncDeletion};
use semcheck::{Case, ModelError, Program};
use serde_json::{json, Value};

use super::args::{positive_seconds, CaseArgs};
use super::{emit, emitln};

/// Default per-mutant time budget.
const MUTANT_SECONDS: f64 = 10.0;

/// Per-mutant memory budget: two mutants explore at once on a shared machine.
const MUTANT_MEMORY_MIB: u64 = 2048;

/// Arguments of `semcheck mutate`.
#[derive(Args, Debug)]
pub(crate) struct MutateArgs {
    /// The protocol or kernel file, mesh sizes, repeat count and assumptions.
    #[command(flatten)]
    pub(crate) case: CaseArgs,
    /// Only delete each semaphore wait, signal, DMA wait and barrier scope, at every size
    /// of --devices (`2-5`), and list those whose deletion stays proved at every size.
    #[arg(long)]
    pub(crate) sync_only: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Stop a mutant's exploration (verdict incomplete) after this many seconds [default: 10];
    /// running a kernel file's script and compiling the kernel get the same budget.
    #[arg(long, value_parser = positive_seconds)]
    pub(crate) max_seconds: Option<f64>,
    /// Stop a mutant's exploration (verdict incomplete) after this many distinct states.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_states: Option<u64>,
    /// Mutants checked at once [default: the machine's cores].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub(crate) threads: Option<u16>,
    /// The kernel file's script's own arguments, after `--`.
    #[command(flatten)]
    pub(crate) script: super::args::ScriptArgs,
}

impl MutateArgs {
    /// The explorer's default configuration with the per-mutant budget.
    fn config(&self) -> Config {
        Config {
            budget: Budget {
                max_states: self.max_states,
                max_seconds: Some(self.max_seconds.unwrap_or(MUTANT_SECONDS)),
                max_memory_bytes: Some(MUTANT_MEMORY_MIB << 20),
            },
            ..Config::default()
        }
    }

    fn threads(&self) -> usize {
        self.threads.map_or_else(default_threads, usize::from)
    }
}

/// The exit code: the original kernel's verdict (0 proved, 1 violation, 3 incomplete), as
/// a kill matrix of a kernel that is not proved says little about its statements.
fn baseline_code(baselines: &[Outcome]) -> i32 {
    super::check::worst(baselines.iter().map(|o| &o.verdict))
}

pub(crate) fn run(args: &MutateArgs) -> Result<i32, ModelError> {
    let config = args.config();
    // The watchdog ends a run that exceeds the memory budget or is interrupted. Running a
    // kernel file's script and compiling the kernel get one mutant's time budget; the
    // explorations that follow keep their own.
    let w = watch();
    w.limit_seconds(config.budget.max_seconds);
    let cases = args.case.cases(2, style(args.json))?;
    w.case(&format!("mutate {}", cases.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")), style(args.json));
    w.doing("compiling the kernel", false);
    let bases = cases.iter().map(semcheck::program).collect::<Result<Vec<_>, _>>()?;
    w.limit_seconds(None);
    w.doing("checking the kernel itself", false);
    // The original kernel, without budget beyond the per-mutant one: what "survived" is
    // measured against.
    let baselines: Vec<Outcome> = bases.iter().map(|b| explore(b, &config)).collect();
    w.idle();
    if args.sync_only {
        if let Some((case, b)) = cases.iter().zip(&baselines).find(|(_, b)| !matches!(b.verdict, Verdict::Proved)) {
            eprintln!("semcheck: {}", baseline_text(case, b));
            eprintln!("semcheck: a deletion can only be called redundant in a kernel proved at every size");
            return Ok(baseline_code(&baselines));
        }
        w.doing(&format!("checking the deletion of each synchronisation on {} threads", args.threads()), false);
        sync_only(args, &cases, &bases, &config);
    } else {
        let mut reports = Vec::new();
        for ((case, base), baseline) in cases.iter().zip(&bases).zip(&baselines) {
            let start = Instant::now();
            w.doing(&format!("checking the mutants of {case} on {} threads", args.threads()), false);
            let results = kill_matrix(base, &Operator::ALL, &config, args.threads());
            w.idle();
            let seconds = start.elapsed().as_secs_f64();
            if args.json {
                reports.push(matrix_json(case, baseline, &results, seconds));
            } else {
                emit(&matrix_text(case, baseline, &results, seconds, args.threads()));
            }
        }
        if args.json {
            let code = baseline_code(&baselines);
            super::output::emit_document(&super::output::document(
                "mutate",
                json!({"exit_code": code, "sync_only": false, "cases": reports}),
            ));
        }
    }
    Ok(baseline_code(&baselines))
}

fn baseline_text(case: &Case, baseline: &Outcome) -> String {
    match &baseline.verdict {
        Verdict::Proved => format!("{case}: the kernel is proved ({} states)", baseline.stats.states),
        Verdict::Violation(c) => format!(
            "{case}: warning: the kernel itself breaks a rule ({}): mutants may be killed by its own bug",
            c.violation.rule
        ),
        Verdict::Incomplete { detail, .. } => {
            format!("{case}: warning: the kernel itself was not proved within the per-mutant budget ({detail})")
        }
    }
}

fn counts(results: &[MutantResult]) -> [usize; 4] {
    let mut c = [0; 4];
    for r in results {
        c[match r.fate {
            Fate::Killed { .. } => 0,
            Fate::Survived { .. } => 1,
            Fate::Rejected { .. } => 2,
            Fate::Incomplete { .. } => 3,
        }] += 1;
    }
    c
}

fn fate_text(fate: &Fate, stats: &semcheck::checker::Stats) -> String {
    match fate {
        Fate::Killed { rule, length, .. } => format!("{rule}, {length} events"),
        Fate::Survived { equivalent: true } => {
            format!("proved, {} states (equivalent: same operations as the kernel)", stats.states)
        }
        Fate::Survived { equivalent: false } => format!("proved, {} states", stats.states),
        Fate::Rejected { reason } => format!("does not compile: {reason}"),
        Fate::Incomplete { reason } => format!("incomplete: {reason}"),
    }
}

/// What a listed mutant or deletion edits: the operator, the edit, where the statement
/// is, its words and its pre-order number.
type Edited<'a> = (Operator, &'a str, Option<&'a Loc>, &'a str, StmtId);

/// The heading each item is listed under: the semaphore it deletes, or its statement as
/// [`stmt_text::labels`] tells the statements apart.
fn headings(items: &[Edited<'_>]) -> Vec<String> {
    let statements: Vec<(Option<&Loc>, &str, StmtId)> = items
        .iter()
        .filter(|item| item.0 != Operator::DeleteSemaphore)
        .map(|&(_, _, loc, words, id)| (loc, words, id))
        .collect();
    let mut labels = stmt_text::labels(&statements).into_iter();
    items
        .iter()
        .map(|item| match item.0 {
            Operator::DeleteSemaphore => item.1.to_string(),
            _ => labels.next().expect("one label per statement"),
        })
        .collect()
}

fn matrix_text(case: &Case, baseline: &Outcome, results: &[MutantResult], seconds: f64, threads: usize) -> String {
    let [killed, survived, rejected, incomplete] = counts(results);
    let mut out = format!(
        "kill matrix of {case}: {} mutants: {killed} killed, {survived} survived, {rejected} rejected, {incomplete} incomplete ({seconds:.1} s on {threads} threads)\n{}\n",
        results.len(),
        baseline_text(case, baseline),
    );
    let mut current = None;
    let edited: Vec<Edited<'_>> = results
        .iter()
        .map(|r| (r.operator, r.edit.as_str(), r.location.as_ref(), r.statement.as_str(), r.stmt))
        .collect();
    for (r, head) in results.iter().zip(headings(&edited)) {
        if current.as_ref() != Some(&head) {
            out.push_str(&format!("\n{head}\n"));
            current = Some(head);
        }
        let detail = if r.detail.is_empty() { String::new() } else { format!(" ({})", r.detail) };
        out.push_str(&format!(
            "  {:<10} {}{detail} => {}\n",
            r.fate.name(),
            r.operator.name(),
            fate_text(&r.fate, &r.stats)
        ));
    }
    out
}

fn stats_json(s: &semcheck::checker::Stats) -> Value {
    json!({"states": s.states, "transitions": s.transitions, "seconds": s.seconds})
}

fn mutant_json(r: &MutantResult) -> Value {
    let mut v = json!({
        "edit": r.edit,
        "operator": r.operator,
        "detail": r.detail,
        "stmt": r.stmt.0,
        "location": r.location.as_ref().map(|l| format!("{}:{}", l.file, l.line)),
        "statement": stmt_text::at(r.location.as_ref(), &r.statement),
        "words": r.statement,
        "verdict": r.fate.name(),
    });
    let extra = match &r.fate {
        Fate::Killed { rule, length, message } => json!({"rule": rule, "length": length, "message": message}),
        Fate::Survived { equivalent } => json!({"equivalent": equivalent}),
        Fate::Rejected { reason } | Fate::Incomplete { reason } => json!({"reason": reason}),
    };
    for (k, x) in extra.as_object().into_iter().flatten().chain(stats_json(&r.stats).as_object().into_iter().flatten())
    {
        v[k] = x.clone();
    }
    v
}

fn matrix_json(case: &Case, baseline: &Outcome, results: &[MutantResult], seconds: f64) -> Value {
    let [killed, survived, rejected, incomplete] = counts(results);
    json!({
        "protocol": case.source.to_string(),
        "source": case.source,
        "devices": case.devices,
        "repeat": case.repeat,
        "baseline": {"verdict": baseline.verdict.name(), "states": baseline.stats.states},
        "summary": {"killed": killed, "survived": survived, "rejected": rejected, "incomplete": incomplete},
        "seconds": seconds,
        "mutants": results.iter().map(mutant_json).collect::<Vec<_>>(),
    })
}

fn sync_only(args: &MutateArgs, cases: &[Case], bases: &[Program], config: &Config) {
    let start = Instant::now();
    let deletions = redundant_sync(bases, config, args.threads());
    watch().idle();
    let seconds = start.elapsed().as_secs_f64();
    let sizes: Vec<usize> = cases.iter().map(|c| c.devices).collect();
    let (removable, rest): (Vec<&SyncDeletion>, Vec<&SyncDeletion>) =
        deletions.iter().partition(|d| d.removable(sizes.len()));
    let (needed, undecided): (Vec<&SyncDeletion>, Vec<&SyncDeletion>) =
        rest.into_iter().partition(|d| d.killed_at().is_some());
    let name = cases[0].source.to_string();
    if args.json {
        let item = |d: &SyncDeletion| {
            json!({
                "operator": d.operator,
                "detail": d.detail,
                "stmt": d.stmt.0,
                "location": d.location.as_ref().map(|l| format!("{}:{}", l.file, l.line)),
                "statement": stmt_text::at(d.location.as_ref(), &d.statement),
                "words": d.statement,
                "edit": d.edit,
                "evidence": d.evidence.iter().map(|e| {
                    let mut v = json!({"devices": e.devices, "verdict": e.fate.check_verdict()});
                    match &e.fate {
                        Fate::Killed { rule, length, .. } => { v["rule"] = json!(rule); v["length"] = json!(length); }
                        Fate::Survived { equivalent } => v["equivalent"] = json!(equivalent),
                        Fate::Rejected { reason } | Fate::Incomplete { reason } => v["reason"] = json!(reason),
                    }
                    v["states"] = json!(e.stats.states);
                    v["seconds"] = json!(e.stats.seconds);
                    v
                }).collect::<Vec<_>>(),
            })
        };
        let value = json!({
            "sync_only": true,
            "protocol": name,
            "source": cases[0].source,
            "devices": sizes,
            "seconds": seconds,
            "removable": removable.iter().map(|d| item(d)).collect::<Vec<_>>(),
            "needed": needed.iter().map(|d| item(d)).collect::<Vec<_>>(),
            "undecided": undecided.iter().map(|d| item(d)).collect::<Vec<_>>(),
        });
        super::output::emit_document(&super::output::document("mutate", value));
        return;
    }
    let range = match sizes.as_slice() {
        [one] => format!("N = {one}"),
        [first, .., last] if last - first + 1 == sizes.len() => format!("N = {first}-{last}"),
        many => format!("N = {}", many.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(",")),
    };
    emitln!(
        "synchronisation of {name} at {range}: each wait, signal, DMA wait and barrier scope deleted in turn, then each semaphore's every signal and wait ({} deletions, {seconds:.1} s on {} threads)",
        deletions.len(),
        args.threads()
    );
    let repeat = cases[0].repeat;
    if repeat == 1 {
        emitln!("one invocation per check: what only orders back-to-back invocations (the second barrier) is exercised with --repeat 2");
    } else {
        emitln!("{repeat} back-to-back invocations per check");
    }
    let evidence = |d: &SyncDeletion| {
        d.evidence
            .iter()
            .map(|e| {
                let what = match &e.fate {
                    Fate::Survived { equivalent: true } => format!("proved ({} states; never ran)", e.stats.states),
                    Fate::Survived { .. } => format!("proved ({} states)", e.stats.states),
                    Fate::Killed { rule, length, .. } => format!("{rule} ({length} events)"),
                    Fate::Rejected { reason } => format!("rejected: {reason}"),
                    Fate::Incomplete { .. } => "incomplete".to_string(),
                };
                format!("N={}: {what}", e.devices)
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let edited: Vec<Edited<'_>> = deletions
        .iter()
        .map(|d| (d.operator, d.edit.as_str(), d.location.as_ref(), d.statement.as_str(), d.stmt))
        .collect();
    let heads = headings(&edited);
    let section = |title: &str, list: &[&SyncDeletion]| {
        let mut out = format!("\n{title} ({}):\n", list.len());
        if list.is_empty() {
            out.push_str("  none\n");
        }
        // A list keeps the order of `deletions`: one walk finds each one's heading.
        let mut listed = deletions.iter().zip(&heads);
        for d in list {
            let (_, head) = listed.find(|(e, _)| std::ptr::eq(*e, *d)).expect("listed in order");
            let detail = if d.detail.is_empty() { String::new() } else { format!("\n      ({})", d.detail) };
            out.push_str(&format!("  {head}{detail}\n      {}\n", evidence(d)));
        }
        out
    };
    emit(&section(&format!("candidates for removal: the deletion is proved at every size, {range}"), &removable));
    emit(&section("needed: the deletion breaks a rule", &needed));
    if !undecided.is_empty() {
        emit(&section(
            "undecided: a budget stopped the check at some size, or the kernel lacks the statement there",
            &undecided,
        ));
    }
}

/// `semcheck bench --mutate`: each protocol's kill matrix at N = 3 (2 on TensorCores), in
/// its own `semcheck mutate` process, timed from outside.
pub(crate) fn bench(args: &super::args::BenchArgs, exe: &std::path::Path) -> Result<i32, ModelError> {
    use semcheck::protocols::{catalogue, MeshKind};
    let failed = |e: String| ModelError::new(semcheck::ErrorKind::UnknownName, e);
    if !args.json {
        emitln!(
            "{:<18} {:>2} {:>8} {:>7} {:>9} {:>9} {:>11} {:>9}   (semcheck mutate, {} threads)",
            "protocol",
            "N",
            "mutants",
            "killed",
            "survived",
            "rejected",
            "incomplete",
            "seconds",
            default_threads()
        );
    }
    let mut rows = Vec::new();
    for p in catalogue() {
        if args.protocol.as_deref().is_some_and(|name| name != p.name) {
            continue;
        }
        let n = if p.mesh_kind == MeshKind::TensorCores { 2 } else { 3 };
        let start = Instant::now();
        let out = semcheck::children::semcheck_output(std::process::Command::new(exe).args([
            "mutate",
            p.name,
            "--json",
            "--devices",
            &n.to_string(),
        ]))
        .map_err(|e| failed(format!("cannot run `semcheck mutate`: {e}")))?;
        let seconds = start.elapsed().as_secs_f64();
        let mut v: Value =
            serde_json::from_slice::<Value>(&out.stdout).map(|mut d| d["cases"][0].take()).map_err(|e| {
                failed(format!("mutate {} printed no report ({e}): {}", p.name, String::from_utf8_lossy(&out.stderr)))
            })?;
        let s = &v["summary"];
        if !args.json {
            emitln!(
                "{:<18} {:>2} {:>8} {:>7} {:>9} {:>9} {:>11} {:>9.2}",
                p.name,
                n,
                v["mutants"].as_array().map_or(0, Vec::len),
                s["killed"].as_u64().unwrap_or(0),
                s["survived"].as_u64().unwrap_or(0),
                s["rejected"].as_u64().unwrap_or(0),
                s["incomplete"].as_u64().unwrap_or(0),
                seconds
            );
        }
        v["wall_seconds"] = json!(seconds);
        if let Some(o) = v.as_object_mut() {
            o.remove("mutants");
        }
        rows.push(v);
    }
    if args.json {
        super::output::emit_document(&super::output::document("bench", json!({"rows": rows})));
    }
    Ok(super::EXIT_PROVED)
}
