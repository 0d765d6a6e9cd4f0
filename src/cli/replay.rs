//! `semcheck replay FILE`: re-execute a trace file against the current model.
//!
//! The file is read under both budgets (at most a quarter of the memory budget; a reader
//! that blocks, such as a FIFO, is stopped by the time budget), and the kernel file a
//! trace names runs only by the rules of [`super::replay_kernel`]: the first line printed
//! says which file runs.

use std::path::{Path, PathBuf};

use clap::Args;
use semcheck::checker::counterexample::{render, replay, TraceError, TraceErrorKind, TraceFile};
use semcheck::Source;

use super::args::BudgetArgs;
use super::replay_kernel::{self, Leave};
use super::trace::FormatArg;
use super::watch::{watch, Style};
use super::{emit, EXIT_VIOLATION};

/// Arguments of `semcheck replay`.
#[derive(Args, Debug)]
pub(crate) struct ReplayArgs {
    /// The trace file, or `-` to read it from stdin.
    pub(crate) file: std::path::PathBuf,
    /// Output format for the replayed run.
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    format: FormatArg,
    /// The same as `--format json`.
    #[arg(long, conflicts_with_all = ["format", "interpret"])]
    json: bool,
    /// Run the trace's kernel file in JAX's TPU interpret mode, steered through the
    /// counterexample's schedule, and print the output values that differ from the
    /// lock-step run (and JAX's race detector's report): exit 1 when something differs.
    /// Not for a trace of an exported `.json` document, which has no script to run.
    #[arg(long, conflicts_with = "format")]
    pub(crate) interpret: bool,
    /// For a trace of a kernel file: run this file instead of the one the trace names
    /// (resolved against the current folder); under any name, its lines stand for the
    /// lines of the trace's kernel file. Without it, the trace's kernel file runs only
    /// from the trace's folder or below, outside hidden folders (`.venv`), `site-packages`
    /// and Python installations, and with the sha256 the trace records.
    #[arg(long, value_name = "FILE")]
    pub(crate) kernel: Option<PathBuf>,
    /// For a trace of a kernel file: run the file the trace names even if it changed since
    /// the trace was written (its sha256 differs from the trace's `kernel-sha256`); where
    /// it may be is not changed.
    #[arg(long, conflicts_with = "kernel")]
    pub(crate) allow_changed: bool,
    /// Time and memory budgets.
    #[command(flatten)]
    pub(crate) budget: BudgetArgs,
    /// The kernel file's script's own arguments, after `--`: a trace's `kernel-args` are
    /// not given to it unless they are repeated here.
    #[command(flatten)]
    pub(crate) script: super::args::ScriptArgs,
}

impl ReplayArgs {
    /// The output format asked for (`--json` is `--format json`).
    pub(crate) fn format(&self) -> FormatArg {
        FormatArg::or_json(self.format, self.json)
    }
}

/// Exit code of `replay`: the file is sound but the run no longer breaks the rule (an event
/// is not possible any more, or no rule, or another, breaks): the kernel or the model
/// changed, typically because the bug was fixed.
pub(crate) const EXIT_NOT_REPRODUCED: i32 = 4;

/// Replays; `Err` is a bad file (exit 2), `Ok(1)` a reproduced violation, `Ok(4)` a
/// counterexample that no longer reproduces. The trace's kernel file, if any, runs only
/// by the rules of [`super::replay_kernel`].
pub(crate) fn run(args: &ReplayArgs) -> Result<i32, String> {
    let stdin = args.file.as_os_str() == "-";
    let name = if stdin { "<stdin>".to_string() } else { args.file.display().to_string() };
    let w = watch();
    // Reading is under both budgets: a FIFO that never ends is stopped by the time
    // budget, and what is read is capped by the memory budget.
    // With --json, a budget or a signal that stops the replay prints its document (`verdict`
    // `incomplete`, as `check --json` does); else a note on stderr.
    w.case(&name, if args.format() == FormatArg::Json { Style::Json } else { Style::Note });
    w.doing("reading the trace file", false);
    let cap = read_cap(args.budget.memory_bytes());
    let bytes = if stdin { limited(std::io::stdin().lock(), cap) } else { read_bounded(&args.file, cap) }
        .map_err(|e| format!("cannot read {name}: {e}"))?;
    let at = |e: TraceError| format!("{name}: {e}");
    let file = TraceFile::parse_bytes(&bytes).map_err(at)?;
    drop(bytes);
    // What can be checked without running the script is checked before it runs.
    semcheck::check_trace_names(&file).map_err(at)?;
    w.doing("checking the trace's kernel file", false);
    let leave = Leave { kernel: args.kernel.as_deref(), allow_changed: args.allow_changed };
    let chosen = replay_kernel::choose(&file, (!stdin).then_some(args.file.as_path()), &name, leave)?;
    let script_notes = replay_kernel::script_args(&file, &args.script.args, &name)?;
    semcheck::frontend::run_scripts_with(&args.script.args);
    let mut runnable = file.clone();
    let mut changed = None;
    let document = chosen.as_ref().is_some_and(|k| semcheck::frontend::is_document(&k.path));
    if document && args.interpret {
        let k = chosen.as_ref().map_or_else(String::new, |k| k.path.display().to_string());
        return Err(format!(
            "{name}: line {}: --interpret runs a kernel file's script in JAX's interpreter, and {k} is a kernel \
             document, which has no script to run (a document is read, never run); replay --interpret the trace \
             of the kernel file it was exported from (`semcheck trace k.py --format trace`), or name that file \
             with --kernel FILE",
            file.header_lines.source
        ));
    }
    if let Some(k) = &chosen {
        // The first line: what runs (a document: what is read).
        if document {
            eprintln!(
                "semcheck: {name}: reading the kernel document {} (sha256 {}) at N = {}: a document is read, never run",
                k.path.display(),
                k.sha256,
                file.header.case.devices
            );
        } else {
            eprintln!(
                "semcheck: {name}: running {} (sha256 {}){} to export its kernels at N = {}",
                k.path.display(),
                k.sha256,
                replay_kernel::with_args(&args.script.args),
                file.header.case.devices
            );
        }
        for note in k.notes.iter().chain(&script_notes) {
            eprintln!("semcheck: note: {note}");
        }
        changed = k.notes.first().cloned();
        if let Source::Python { path, .. } = &mut runnable.header.case.source {
            if args.kernel.is_some() {
                // The file named by --kernel stands for the trace's kernel file, under
                // whatever name: its lines are matched as the trace's file's lines.
                let (from, to) = (file_name(path), file_name(&k.path));
                if from != to {
                    for event in &mut runnable.events {
                        event.text = renamed(&event.text, &from, &to);
                    }
                    runnable.message = runnable.message.as_deref().map(|m| renamed(m, &from, &to));
                }
            }
            *path = k.path.clone();
        }
    }
    if let Some(chip) = &file.header.tpu {
        // Traced again for the chip it was traced for, whatever SEMCHECK_TPU says now.
        if std::env::var("SEMCHECK_TPU").is_ok_and(|now| &now != chip) {
            eprintln!(
                "semcheck: note: the trace was written with SEMCHECK_TPU={chip}: the kernel file is traced for {chip}"
            );
        }
        semcheck::frontend::trace_for_tpu(chip);
    }
    w.doing("compiling the kernel of the trace", false);
    let program = semcheck::trace_program(&runnable).map_err(at)?;
    if document {
        // A kernel document: its script's hash is the one to compare (nothing ran).
        changed = semcheck::source_changed(&runnable);
        if let Some(note) = &changed {
            eprintln!("semcheck: note: {note}");
        }
    }
    w.doing("replaying", false);
    let replayed = replay(&program, &runnable);
    w.idle();
    let replayed = match replayed {
        Ok(r) => r,
        Err(e) if matches!(e.kind(), TraceErrorKind::NotEnabled | TraceErrorKind::Rule) => {
            return Ok(not_reproduced(&name, &e, changed.as_deref(), args.format()));
        }
        Err(e) => return Err(at(e)),
    };
    let violation = replayed.run.ending.violation().expect("replay returns a violation");
    eprintln!(
        "semcheck: {name}: {} events replayed, every one enabled; rule `{}` reproduced",
        replayed.run.events.len(),
        violation.rule
    );
    if !replayed.message_matches {
        eprintln!(
            "semcheck: note: the message differs from the recorded one\n  recorded: {}\n  now:      {}",
            file.message.as_deref().unwrap_or(""),
            violation.message
        );
    }
    if args.interpret {
        return super::interpret::run(&name, &runnable, &program, &replayed.run, args.budget.max_seconds);
    }
    match args.format().render() {
        None => {
            let mut again = file.clone();
            again.message = Some(violation.message.clone());
            emit(&again.to_text());
        }
        Some(semcheck::checker::counterexample::Format::Json) => {
            let counterexample =
                semcheck::checker::counterexample::render::json::value(&program, &file.header, &replayed.run);
            super::output::emit_document(&super::output::document(
                "replay",
                serde_json::json!({"verdict": "violation", "exit_code": EXIT_VIOLATION, "counterexample": counterexample}),
            ));
        }
        Some(f) => emit(&render(f, &program, &file.header, &replayed.run)),
    }
    Ok(EXIT_VIOLATION)
}

/// A path's last component, as an event names the file of a line (`psum.py:57`).
fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// An event's name with the source lines of file `from` named as lines of `to`: each
/// `@ from:LINE` (the operation's line) and `(via from:LINE)` (the line calling a helper);
/// lines of other files, and the statements' own text, are left as they are.
fn renamed(event: &str, from: &str, to: &str) -> String {
    let mut out = event.to_string();
    for lead in ["@ ", "(via "] {
        let (old, new) = (format!("{lead}{from}:"), format!("{lead}{to}:"));
        let mut text = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(i) = rest.find(&old) {
            let after = &rest[i + old.len()..];
            let line = after.starts_with(|c: char| c.is_ascii_digit());
            text.push_str(&rest[..i]);
            text.push_str(if line { &new } else { &old });
            rest = after;
        }
        text.push_str(rest);
        out = text;
    }
    out
}

/// Says that the trace no longer reproduces (on stderr, and as a document with `--format
/// json`) and returns its exit code.
fn not_reproduced(name: &str, e: &TraceError, changed: Option<&str>, format: FormatArg) -> i32 {
    // That the kernel file changed was said already, before it ran.
    eprintln!("semcheck: {name}: no longer reproduces: {e}");
    if format == FormatArg::Json {
        super::output::emit_document(&super::output::document(
            "replay",
            serde_json::json!({
                "verdict": "not-reproduced",
                "exit_code": EXIT_NOT_REPRODUCED,
                "counterexample": null,
                "not_reproduced": {
                    "message": e.message(),
                    "line": e.line(),
                    "source_changed": changed,
                },
            }),
        ));
    }
    EXIT_NOT_REPRODUCED
}

/// The largest trace file `replay` reads (a trace of a million events is far smaller).
pub(crate) const MAX_TRACE_BYTES: u64 = 256 << 20;

/// How much of a trace file `replay` reads under a memory budget of `budget` bytes: a
/// quarter of it (the parsed file and the replay take a few times the text), at most
/// [`MAX_TRACE_BYTES`].
pub(crate) fn read_cap(budget: u64) -> u64 {
    (budget / 4).min(MAX_TRACE_BYTES)
}

/// Reads a file of at most `cap` bytes, so a device or a runaway file cannot exhaust
/// memory (a FIFO that never ends is the time budget's: the watchdog stops it).
pub(crate) fn read_bounded(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    limited(std::fs::File::open(path)?, cap)
}

fn limited(reader: impl std::io::Read, cap: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    reader.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(std::io::Error::other(format!(
            "larger than {} (a quarter of the memory budget, at most {} MiB); not a trace file",
            mib(cap),
            MAX_TRACE_BYTES >> 20
        )));
    }
    Ok(bytes)
}

/// `12.5 MiB`.
fn mib(bytes: u64) -> String {
    let m = bytes as f64 / f64::from(1 << 20);
    if m.fract() == 0.0 {
        format!("{m:.0} MiB")
    } else {
        format!("{m:.1} MiB")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn renamed_names_the_lines_of_one_file_by_another_name() {
        let event = "dma [d1 (0) start remote_copy x @ k.py:86 first.start() (via k.py:9)] sent: d1 s 0 -> 4096";
        assert_eq!(
            super::renamed(event, "k.py", "copy.py"),
            "dma [d1 (0) start remote_copy x @ copy.py:86 first.start() (via copy.py:9)] sent: d1 s 0 -> 4096"
        );
        // A helper's line stays, and the file named by the call in it.
        let helper = "d0 (0) signal b +1 -> d1 @ helper.py:3 f(\"@ k.py:x\") (via k.py:74)";
        assert_eq!(
            super::renamed(helper, "k.py", "copy.py"),
            "d0 (0) signal b +1 -> d1 @ helper.py:3 f(\"@ k.py:x\") (via copy.py:74)"
        );
    }
}
