//! Output for machines: every `--json` document is one versioned object with the same
//! top-level keys for every command shape (`docs/schema/semcheck-output-v1.schema.json`, which the
//! tests validate every document against), and `--format sarif` writes SARIF 2.1.0
//! ([`sarif`](super::sarif)).

use clap::{Args, ValueEnum};
use serde_json::{json, Map, Value};

use super::{emit, EXIT_INCOMPLETE, EXIT_PROVED, EXIT_USAGE, EXIT_VIOLATION};

/// The JSON Schema of the documents (`docs/schema/semcheck-output-v1.schema.json`), which
/// `semcheck schema` prints: an installed semcheck carries it.
pub(crate) const SCHEMA: &str = include_str!("../../docs/schema/semcheck-output-v1.schema.json");

/// The version of the JSON documents' schema: bumped when a key is removed or changes
/// meaning (adding keys does not bump it).
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// What a command prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutputFormat {
    /// Text for people.
    Text,
    /// One JSON document (its JSON Schema: `semcheck schema`).
    Json,
    /// SARIF 2.1.0, for code-scanning tools and editors: one result per violation, at
    /// its line.
    Sarif,
}

/// `--format` and its shorthand `--json`.
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct OutputArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub(crate) format: OutputFormat,
    /// Print JSON: the same as `--format json`.
    #[arg(long, conflicts_with = "format")]
    pub(crate) json: bool,
}

impl OutputArgs {
    /// The chosen format.
    pub(crate) fn format(&self) -> OutputFormat {
        if self.json {
            OutputFormat::Json
        } else {
            self.format
        }
    }

    /// Whether the output is for a machine (no text report, no progress line).
    pub(crate) fn machine(&self) -> bool {
        self.format() != OutputFormat::Text
    }
}

/// The verdict word of an exit code.
pub(crate) fn verdict_of(code: i32) -> &'static str {
    match code {
        EXIT_PROVED => "proved",
        EXIT_VIOLATION => "violation",
        EXIT_INCOMPLETE => "incomplete",
        _ => "error",
    }
}

/// A document: the keys every document starts with, then `body`'s.
pub(crate) fn document(command: &str, body: Value) -> Value {
    let mut out = Map::new();
    out.insert("schema_version".into(), json!(SCHEMA_VERSION));
    out.insert("command".into(), json!(command));
    out.insert("semcheck_version".into(), json!(env!("CARGO_PKG_VERSION")));
    match body {
        Value::Object(rest) => out.extend(rest),
        other => {
            out.insert("result".into(), other);
        }
    }
    Value::Object(out)
}

/// A command's result as a document: its verdict, exit code, cases and summary. For
/// `trace` and `replay` (a budget or a signal stopped them: the watchdog's report) also
/// `counterexample`, `null`, which every document of theirs has.
pub(crate) fn results(command: &str, code: i32, cases: Vec<Value>, summary: Value) -> Value {
    let mut doc = document(
        command,
        json!({
            "verdict": verdict_of(code),
            "exit_code": code,
            "error": Value::Null,
            "cases": cases,
            "summary": summary,
        }),
    );
    if matches!(command, "trace" | "replay") {
        doc["counterexample"] = Value::Null;
    }
    doc
}

/// The document of a command that could not run: usage, input or environment errors.
pub(crate) fn error_document(command: &str, error: &str) -> Value {
    document(
        command,
        json!({
            "verdict": "error",
            "exit_code": EXIT_USAGE,
            "error": {"message": error},
            "cases": [],
            "summary": Value::Null,
        }),
    )
}

/// The one case of a document another `semcheck` process printed (for the commands that
/// run cases in processes of their own), with the process's peak memory.
pub(crate) fn only_case(mut doc: Value) -> Value {
    let peak = doc["summary"]["peak_rss_bytes"].take();
    let mut case = match doc.get_mut("cases").and_then(Value::as_array_mut) {
        Some(cases) if !cases.is_empty() => cases.swap_remove(0),
        _ => json!({"verdict": doc["verdict"].take(), "error": doc["error"].take()}),
    };
    if case.get("peak_rss_bytes").is_none() {
        case["peak_rss_bytes"] = peak;
    }
    case
}

/// Reports an error in the machine format asked for, if any: a JSON error document, or a
/// SARIF log whose run failed with the error as its notification.
pub(crate) fn emit_error(format: Option<OutputFormat>, command: &str, error: &str) {
    match format {
        Some(OutputFormat::Json) => emit_document(&error_document(command, error)),
        Some(OutputFormat::Sarif) => emit_document(&super::sarif::failed(error)),
        Some(OutputFormat::Text) | None => {}
    }
}

/// Prints a document.
pub(crate) fn emit_document(doc: &Value) {
    emit(&format!("{}\n", serde_json::to_string_pretty(doc).expect("JSON of plain data")));
}

/// Whether the raw command line asks for machine output (`--json`, `--format json`,
/// `--format sarif`), and which: used to report errors found before (or while) the
/// arguments are parsed as a document rather than as text.
pub(crate) fn requested_format(args: &[String]) -> Option<OutputFormat> {
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--" => return None,
            "--json" => return Some(OutputFormat::Json),
            "--format" => match it.peek().map(|s| s.as_str()) {
                Some("json") => return Some(OutputFormat::Json),
                Some("sarif") => return Some(OutputFormat::Sarif),
                _ => {}
            },
            "--format=json" => return Some(OutputFormat::Json),
            "--format=sarif" => return Some(OutputFormat::Sarif),
            _ => {}
        }
    }
    None
}

/// The subcommand a raw command line names (the first word that is not a flag), for the
/// `command` of an error document.
pub(crate) fn requested_command(args: &[String]) -> String {
    args.iter().find(|a| !a.starts_with('-')).cloned().unwrap_or_else(|| "semcheck".to_string())
}
