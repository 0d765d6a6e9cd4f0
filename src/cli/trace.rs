//! `semcheck trace PROTOCOL`: find the shortest counterexample, minimise it and render it
//! (or write it as a trace file with `--format trace`).

use clap::{Args, ValueEnum};
use semcheck::checker::counterexample::{counterexample, engine_name, render, Format, Found};
use semcheck::checker::{explore_with, Budget, Config, Symmetry, Verdict};
use semcheck::{Case, ErrorKind, ModelError, Source};

use super::args::{BudgetArgs, StrategyArg};
use super::output::{document, emit_document, verdict_of};
use super::watch::{watch, Style};
use super::{emit, EXIT_INCOMPLETE, EXIT_PROVED, EXIT_VIOLATION};

/// How a counterexample is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum FormatArg {
    /// Per-device column timeline.
    Text,
    /// The seed's traversal-table view after every event.
    Table,
    /// Mermaid sequenceDiagram.
    Mermaid,
    /// Graphviz happens-before / wait-for graph.
    Dot,
    /// JSON.
    Json,
    /// One self-contained HTML page: a lane per device, the explanation highlighted, the
    /// semaphores and DMAs at the selected step.
    Html,
    /// The replayable trace file (for `counterexamples/`).
    Trace,
}

impl TraceArgs {
    /// The output format asked for (`--json` is `--format json`).
    pub(crate) fn format(&self) -> FormatArg {
        FormatArg::or_json(self.format, self.json)
    }
}

impl FormatArg {
    /// `format`, or JSON when `--json` was given.
    pub(crate) fn or_json(format: FormatArg, json: bool) -> FormatArg {
        if json {
            FormatArg::Json
        } else {
            format
        }
    }

    /// The renderer, or `None` for the trace file itself.
    pub(crate) fn render(self) -> Option<Format> {
        match self {
            FormatArg::Text => Some(Format::Text),
            FormatArg::Table => Some(Format::Table),
            FormatArg::Mermaid => Some(Format::Mermaid),
            FormatArg::Dot => Some(Format::Dot),
            FormatArg::Json => Some(Format::Json),
            FormatArg::Html => Some(Format::Html),
            FormatArg::Trace => None,
        }
    }
}

/// Arguments of `semcheck trace`.
#[derive(Args, Debug)]
pub(crate) struct TraceArgs {
    /// The protocol or kernel file, mutant, mesh size and repeat count.
    #[command(flatten)]
    pub(crate) case: super::args::CaseArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    format: FormatArg,
    /// The same as `--format json`.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// Keep the explorer's schedule as it is (no event dropped).
    #[arg(long)]
    pub(crate) no_minimize: bool,
    /// Exploration order (BFS gives a shortest schedule; DFS ones are longer and show what
    /// the minimiser drops).
    #[arg(long, value_enum, default_value_t = StrategyArg::Bfs)]
    pub(crate) strategy: StrategyArg,
    /// Time and memory budgets.
    #[command(flatten)]
    pub(crate) budget: BudgetArgs,
    /// The kernel file's script's own arguments, after `--`.
    #[command(flatten)]
    pub(crate) script: super::args::ScriptArgs,
}

pub(crate) fn run(args: &TraceArgs) -> Result<i32, ModelError> {
    // With --json, a budget or a signal that ends work which cannot stop half-way
    // (compiling, exporting, minimising) prints its document too; else a note on stderr.
    let style = if args.format() == FormatArg::Json { Style::Json } else { Style::Note };
    let cases = args.case.cases(2, style)?;
    let [case] = cases.as_slice() else {
        return Err(ModelError::new(ErrorKind::UnknownName, "trace shows one counterexample: give --devices N"));
    };
    let w = watch();
    w.case(&case.to_string(), style);
    w.doing("compiling the kernel", false);
    let program = semcheck::program(case)?;
    let budget = Budget {
        max_seconds: args.budget.max_seconds,
        max_memory_bytes: Some(args.budget.memory_bytes()),
        ..Budget::default()
    };
    // The explorer as `check` runs it by default (rotation symmetry on), so that both find
    // the same schedule and tell the same story of a case.
    let config = Config { strategy: args.strategy.strategy(), budget, symmetry: Symmetry::Auto, ..Config::default() };
    w.doing("exploring", true);
    let outcome = explore_with(&program, &config, w.control());
    w.idle();
    let cex = match outcome.verdict {
        Verdict::Violation(cex) => cex,
        Verdict::Proved => {
            eprintln!("semcheck: {case}: proved, no rule is broken, so there is no counterexample");
            if args.format() == FormatArg::Json {
                emit_document(&trace_document(EXIT_PROVED, serde_json::Value::Null));
            }
            return Ok(EXIT_PROVED);
        }
        Verdict::Incomplete { detail, .. } => {
            eprintln!("semcheck: {case}: incomplete: {detail}");
            if args.format() == FormatArg::Json {
                emit_document(&trace_document(EXIT_INCOMPLETE, serde_json::Value::Null));
            }
            return Ok(EXIT_INCOMPLETE);
        }
    };
    w.doing("minimising the counterexample", false);
    let found: Found = counterexample(&program, &cex, !args.no_minimize).map_err(|e| {
        ModelError::new(
            ErrorKind::BadDeclaration,
            format!("internal error: the explorer's schedule does not replay at event {}: {}", e.index + 1, e.wanted),
        )
    })?;
    w.idle();
    if let Some(sentence) = found.minimized_sentence() {
        eprintln!("semcheck: {sentence}");
    }
    let mut file = found.trace_file(case, &engine_name(&config));
    file.header.source_sha256 = semcheck::source_sha256(case);
    file.header.tpu = semcheck::source_tpu(case);
    // Empty but for a kernel file's script (`ScriptArgs::apply` refuses them elsewhere).
    file.header.script_args = semcheck::frontend::script_args();
    match args.format().render() {
        None => emit(&file.to_text()),
        Some(Format::Json) => emit_document(&trace_document(
            EXIT_VIOLATION,
            semcheck::checker::counterexample::render::json::value(&program, &file.header, &found.run),
        )),
        Some(f) => emit(&render(f, &program, &file.header, &found.run)),
    }
    Ok(EXIT_VIOLATION)
}

/// The `semcheck trace` command that draws `case`'s counterexample as a page
/// (`semcheck trace kernel.py --devices 2 --format html > counterexample.html`), with the
/// case's kernel, specification, repeat count and assumptions; `None` for a DSL kernel,
/// which lives in its caller's code.
pub(crate) fn html_command(case: &Case) -> Option<String> {
    let mut words = vec!["semcheck".to_string(), "trace".to_string()];
    match &case.source {
        Source::Catalogue { protocol, mutant } => {
            words.push(quoted(protocol));
            if let Some(m) = mutant {
                words.extend(["--mutant".to_string(), quoted(m)]);
            }
        }
        Source::Python { path, kernel, expect } => {
            words.push(quoted(&path.display().to_string()));
            if let Some(k) = kernel {
                words.extend(["--kernel".to_string(), quoted(k)]);
            }
            if let Some(e) = expect {
                words.extend(["--expect".to_string(), quoted(e)]);
            }
            if semcheck::frontend::interpreting_values() {
                words.push("--interpret-values".to_string());
            }
        }
        Source::Dsl { .. } => return None,
    }
    words.extend(["--devices".to_string(), case.devices.to_string()]);
    if case.repeat != 1 {
        words.extend(["--repeat".to_string(), case.repeat.to_string()]);
    }
    let default = semcheck::Semantics::default();
    if case.semantics.dma_order != default.dma_order {
        words.extend(["--dma-order".to_string(), case.semantics.dma_order.name().to_string()]);
    }
    if case.semantics.dma_landing != default.dma_landing {
        words.extend(["--dma-landing".to_string(), case.semantics.dma_landing.name().to_string()]);
    }
    words.extend(["--format", "html"].map(str::to_string));
    let args = semcheck::frontend::script_args();
    if !args.is_empty() {
        words.extend(["--".to_string(), shell_words(&args)]);
    }
    words.extend([">", "counterexample.html"].map(str::to_string));
    Some(words.join(" "))
}

/// `words` as words of a POSIX shell command: each [`quoted`], separated by spaces.
pub(crate) fn shell_words(words: &[String]) -> String {
    words.iter().map(|w| quoted(w)).collect::<Vec<_>>().join(" ")
}

/// `word` as one word of a POSIX shell command (single-quoted unless it is plain).
fn quoted(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=,+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// `trace --format json`: the counterexample (null when there is none) in a document.
fn trace_document(code: i32, counterexample: serde_json::Value) -> serde_json::Value {
    document(
        "trace",
        serde_json::json!({"verdict": verdict_of(code), "exit_code": code, "counterexample": counterexample}),
    )
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn a_word_is_quoted_for_the_shell_only_when_it_must_be() {
        assert_eq!(quoted("kernels/psum--no-capacity.py"), "kernels/psum--no-capacity.py");
        assert_eq!(quoted("my kernels/a.py"), "'my kernels/a.py'");
        assert_eq!(quoted("it's.py"), "'it'\\''s.py'");
        assert_eq!(quoted("$(rm -rf x).py"), "'$(rm -rf x).py'");
        assert_eq!(quoted(""), "''");
    }
}
