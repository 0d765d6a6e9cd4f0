//! `semcheck replay FILE`: re-execute a trace file against the current model.

use clap::Args;
use semcheck::checker::counterexample::{render, replay, TraceError, TraceErrorKind, TraceFile};

use super::args::BudgetArgs;
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
    pub(crate) format: FormatArg,
    /// Run the trace's kernel file in JAX's TPU interpret mode, steered through the
    /// counterexample's schedule, and print the output values that differ from the
    /// lock-step run (and JAX's race detector's report): exit 1 when something differs.
    #[arg(long, conflicts_with = "format")]
    pub(crate) interpret: bool,
    /// Time and memory budgets.
    #[command(flatten)]
    pub(crate) budget: BudgetArgs,
}

/// Exit code of `replay`: the file is sound but the run no longer breaks the rule (an event
/// is not possible any more, or no rule, or another, breaks): the kernel or the model
/// changed, typically because the bug was fixed.
pub(crate) const EXIT_NOT_REPRODUCED: i32 = 4;

/// Replays; `Err` is a bad file (exit 2), `Ok(1)` a reproduced violation, `Ok(4)` a
/// counterexample that no longer reproduces.
pub(crate) fn run(args: &ReplayArgs) -> Result<i32, String> {
    let stdin = args.file.as_os_str() == "-";
    let name = if stdin { "<stdin>".to_string() } else { args.file.display().to_string() };
    let bytes =
        if stdin { read_stdin() } else { read_bounded(&args.file) }.map_err(|e| format!("cannot read {name}: {e}"))?;
    let at = |e: TraceError| format!("{name}: {e}");
    let w = watch();
    w.case(&name, Style::Note);
    w.doing("reading the trace file", false);
    let file = TraceFile::parse_bytes(&bytes).map_err(at)?;
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
    let program = semcheck::trace_program(&file).map_err(at)?;
    let changed = semcheck::source_changed(&file);
    if let Some(note) = &changed {
        eprintln!("semcheck: note: {note}");
    }
    w.doing("replaying", false);
    let replayed = replay(&program, &file);
    w.idle();
    let replayed = match replayed {
        Ok(r) => r,
        Err(e) if matches!(e.kind(), TraceErrorKind::NotEnabled | TraceErrorKind::Rule) => {
            return Ok(not_reproduced(&name, &e, changed.as_deref(), args.format));
        }
        Err(e) => {
            return Err(match &changed {
                Some(note) => format!("{name}: {e}\n  ({note})"),
                None => at(e),
            })
        }
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
        return super::interpret::run(&name, &file, &program, &replayed.run, args.budget.max_seconds);
    }
    match args.format.render() {
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

/// Says that the trace no longer reproduces (on stderr, and as a document with `--format
/// json`) and returns its exit code.
fn not_reproduced(name: &str, e: &TraceError, changed: Option<&str>, format: FormatArg) -> i32 {
    let mut text = format!("{name}: no longer reproduces: {e}");
    if let Some(note) = changed {
        text.push_str(&format!("\n  ({note})"));
    }
    eprintln!("semcheck: {text}");
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
const MAX_TRACE_BYTES: u64 = 256 << 20;

/// Reads a file of at most [`MAX_TRACE_BYTES`], so a device or a runaway file cannot hang
/// or exhaust memory.
fn read_bounded(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    limited(std::fs::File::open(path)?)
}

/// Reads stdin, at most [`MAX_TRACE_BYTES`].
fn read_stdin() -> std::io::Result<Vec<u8>> {
    limited(std::io::stdin().lock())
}

fn limited(reader: impl std::io::Read) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    reader.take(MAX_TRACE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_TRACE_BYTES {
        return Err(std::io::Error::other(format!("larger than {} MiB; not a trace file", MAX_TRACE_BYTES >> 20)));
    }
    Ok(bytes)
}
