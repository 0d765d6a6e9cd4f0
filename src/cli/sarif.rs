//! SARIF 2.1.0 (the OASIS standard code-scanning tools and editors read): one `result` per
//! violation, located at the line of the event that broke the rule, with every event of
//! the counterexample as a related location and as a thread-flow step (one step per event,
//! in schedule order; the explanation's events `essential`, the others `important`), the rule, the mesh size and what the violation requires of the
//! hardware in the message. Cases that could not be checked, or were not decided within
//! their budget, are tool notifications (the run is then not `executionSuccessful`).

use std::path::Path;

use semcheck::model::ir::Loc;
use semcheck::model::Rule;
use semcheck::{Case, ModelError};
use serde_json::{json, Value};

use semcheck::checker::Verdict;

use super::report::Checked;
use super::shown::ViolationView;
use super::sizes::FirstViolation;

/// The SARIF `$schema` URI.
const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// A SARIF log of checked cases and of cases that could not be checked.
pub(crate) fn log<'a>(
    checked: impl IntoIterator<Item = &'a Checked>,
    errors: impl IntoIterator<Item = (&'a Case, &'a ModelError)>,
    no_kernel: &[std::path::PathBuf],
) -> Value {
    let mut results = Vec::new();
    let mut notifications: Vec<Value> = no_kernel
        .iter()
        .map(|p| {
            json!({
                "level": "note",
                "message": {"text": format!("{} calls no Pallas kernel: nothing to check there", p.display())},
            })
        })
        .collect();
    for c in checked {
        match &c.outcome.verdict {
            Verdict::Violation(cex) => {
                // The violation the shown schedule breaks: the same devices and cells as
                // the text and `--json` reports of the same case.
                let shown = c.shown_violation().unwrap_or(&cex.violation);
                results.push(result(&Violated {
                    case: &c.case,
                    kernel: &c.program.kernel,
                    requires: c.requires(),
                    rule: shown.rule,
                    message: shown.message.clone(),
                    view: c.violation_view(),
                }));
            }
            Verdict::Incomplete { detail, .. } => notifications.push(json!({
                "level": "warning",
                "message": {"text": format!("{}: not proved: {detail}", c.case)},
            })),
            Verdict::Proved => {}
        }
    }
    for (case, e) in errors {
        notifications.push(match e.kind() {
            // A budget or Ctrl-C stopped its export: undecided, as an incomplete check.
            semcheck::ErrorKind::Stopped => json!({
                "level": "warning",
                "message": {"text": format!("{case}: not proved: {e}")},
            }),
            _ => json!({
                "level": "error",
                "message": {"text": format!("{case}: not checked: {e}")},
            }),
        });
    }
    document(results, notifications)
}

/// The SARIF log of `check --sizes` of `case` (at its smallest size): the first size's
/// counterexample `first` as the one result, the other sizes that break the rule in its
/// message (`broken`: every size with a violation); the sizes not proved (`not_proved`: a
/// range of sizes and why) as warning notifications.
pub(crate) fn sizes_log(
    case: &Case,
    first: Option<&FirstViolation>,
    broken: &str,
    not_proved: &[(String, String)],
) -> Value {
    let mut results = Vec::new();
    if let Some(f) = first {
        let mut at = case.clone();
        at.devices = f.devices;
        let (c, shown) = (f.counterexample, &f.shown);
        results.push(result(&Violated {
            case: &at,
            kernel: &f.program.kernel,
            // Not re-checked under the other assumptions.
            requires: None,
            rule: shown.violation(c).rule,
            message: format!("{} (the smallest size that breaks it; {broken} break it)", shown.message(c)),
            view: shown.view(&f.program, c),
        }));
    }
    let notifications = not_proved
        .iter()
        .map(|(sizes, why)| {
            json!({"level": "warning", "message": {"text": format!("{} {sizes}: not proved: {why}", case.source)}})
        })
        .collect();
    document(results, notifications)
}

/// The log of one run: its results and its notifications (the run is
/// `executionSuccessful` when they are only notes).
fn document(results: Vec<Value>, notifications: Vec<Value>) -> Value {
    let rules: Vec<Value> = Rule::ALL
        .iter()
        .map(|r| {
            json!({
                "id": r.name(),
                "name": r.name(),
                "shortDescription": {"text": r.description()},
                "defaultConfiguration": {"level": "error"},
            })
        })
        .collect();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "semcheck",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "invocations": [{
                // A note (a file with no kernel) is no failure; an unchecked or
                // incomplete case is.
                "executionSuccessful": notifications.iter().all(|n| n["level"] == "note"),
                "toolExecutionNotifications": notifications,
            }],
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    })
}

/// The log of a command that could not run: no result, the error as the run's
/// notification.
pub(crate) fn failed(error: &str) -> Value {
    unfinished("error", error)
}

/// The log of a command a budget or Ctrl-C ended before it decided anything more: no
/// result, what stopped it as the run's warning.
pub(crate) fn stopped(detail: &str) -> Value {
    unfinished("warning", detail)
}

fn unfinished(level: &str, text: &str) -> Value {
    let mut v = log(std::iter::empty(), std::iter::empty(), &[]);
    v["runs"][0]["invocations"][0] = json!({
        "executionSuccessful": false,
        "toolExecutionNotifications": [{"level": level, "message": {"text": text}}],
    });
    v
}

/// What one result says: a violation of `kernel` in `case` (its mesh size, repeat count
/// and assumptions), what it requires of the hardware where that was analysed, and the
/// shown counterexample's events.
struct Violated<'a> {
    case: &'a Case,
    kernel: &'a str,
    requires: Option<Vec<&'static str>>,
    rule: Rule,
    message: String,
    view: Option<ViolationView<'a>>,
}

/// One violation.
fn result(v: &Violated) -> Value {
    let Violated { case, kernel, requires, rule, message, view } = v;
    let rule = *rule;
    let needs = match requires {
        None => String::new(),
        Some(names) if names.is_empty() => "; it breaks under every hardware assumption".to_string(),
        Some(names) => format!("; it requires: {}", names.join(", ")),
    };
    let text = format!("{rule} at N = {} ({kernel}): {message}{needs}", case.devices);
    let mut out = json!({
        "ruleId": rule.name(),
        "ruleIndex": Rule::ALL.iter().position(|r| *r == rule).expect("every rule is listed"),
        "level": "error",
        "message": {"text": text},
        "properties": {
            "devices": case.devices,
            "repeat": case.repeat,
            "kernel": kernel,
            "requires": requires,
            "semantics": case.semantics,
        },
    });
    let Some(view) = view else { return out };
    if let Some(loc) = &view.location {
        out["locations"] = json!([location(loc, None)]);
    }
    let located: Vec<_> = view.events.iter().filter_map(|e| e.loc.as_ref().map(|l| (e, l))).collect();
    out["relatedLocations"] = located
        .iter()
        .map(|(e, l)| {
            let mut v = location(l, Some(&format!("event {}: {}", e.index, e.text)));
            v["id"] = json!(e.index);
            v
        })
        .collect();
    if !located.is_empty() {
        // The explanation's events are the essential steps; the rest of the schedule only
        // gets the devices there.
        let core = view.explanation.indices();
        let steps: Vec<Value> = located
            .iter()
            .map(|(e, l)| {
                json!({
                    "location": location(l, Some(&format!("d{}: {}", e.device, e.text))),
                    "executionOrder": e.index,
                    "importance": if Some(e.index) == view.breaking || core.contains(&(e.index - 1)) {
                        "essential"
                    } else {
                        "important"
                    },
                })
            })
            .collect();
        out["codeFlows"] = json!([{
            "message": {"text": format!("the schedule that breaks {rule} at N = {}", case.devices)},
            "threadFlows": [{"locations": steps}],
        }]);
    }
    out
}

/// A SARIF location of a source line (the file relative to the current directory when it
/// is under it, as code-scanning tools expect; else an absolute `file://` URI).
fn location(loc: &Loc, message: Option<&str>) -> Value {
    let mut v = json!({
        "physicalLocation": {
            "artifactLocation": {"uri": uri(&loc.file)},
            "region": {"startLine": loc.line},
        },
    });
    if let Some(m) = message {
        v["message"] = json!({"text": m});
    }
    v
}

/// The URI of a source file.
fn uri(file: &str) -> String {
    let path = Path::new(file);
    if path.is_absolute() {
        if let Some(rel) = std::env::current_dir().ok().and_then(|d| path.strip_prefix(d).ok().map(Path::to_path_buf)) {
            return encode(&rel.to_string_lossy());
        }
        return format!("file://{}", encode(file));
    }
    encode(file)
}

/// Percent-encodes the characters a URI path cannot hold as they are.
fn encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}
