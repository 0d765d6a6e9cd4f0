//! `semcheck check TARGET`: the cases one target names (one per mesh size), on the chosen
//! engine.

use semcheck::assumptions::{requirements, Requirements};
use semcheck::checker::{explore, Verdict};
use semcheck::ModelError;
use serde_json::json;
use serde_json::Value;

use super::args::CheckArgs;
use super::report::Checked;
use super::shuttle::EngineArg;
use super::{emit, EXIT_INCOMPLETE, EXIT_PROVED, EXIT_VIOLATION};

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
    let cases = args.case.cases(2)?;
    let mut checked = Vec::new();
    for case in cases {
        let program = semcheck::program(&case)?;
        let outcome = match args.engine.engine {
            EngineArg::Explore => explore(&program, &args.explore.config()),
            EngineArg::Shuttle => super::shuttle::run(args, &case, &program)?,
        };
        let needs = match (&outcome.verdict, args.engine.engine) {
            (Verdict::Violation(cex), EngineArg::Explore) => Some(requirements(&program, cex, &args.explore.config())),
            _ => None,
        };
        let c = Checked { case, program, outcome };
        if !args.json {
            emit(&with_requirements_text(c.text(), needs.as_ref(), c.case.devices));
        }
        checked.push((c, needs));
    }
    let code = worst(checked.iter().map(|(c, _)| &c.outcome.verdict));
    if args.json {
        let value = match checked.as_slice() {
            [(one, needs)] => {
                let mut v = with_requirements_json(one.json(), needs.as_ref());
                v["peak_rss_bytes"] = json!(super::bench::peak_rss_bytes());
                v
            }
            many => json!({
                "verdict": match code { EXIT_VIOLATION => "violation", EXIT_INCOMPLETE => "incomplete", _ => "proved" },
                "cases": many.iter().map(|(c, needs)| with_requirements_json(c.json(), needs.as_ref())).collect::<Vec<_>>(),
            }),
        };
        emit(&format!("{}\n", serde_json::to_string_pretty(&value).expect("JSON of plain data")));
    }
    Ok(code)
}

/// A case's text followed by what its violation requires (`requires dma-reorder: ...`).
fn with_requirements_text(mut text: String, needs: Option<&Requirements>, devices: usize) -> String {
    for line in needs.map(|n| n.lines(devices)).unwrap_or_default() {
        text.push_str(&format!("  {line}\n"));
    }
    text
}

/// A case's JSON with `requires` (the behaviours its violation needs; `null` when no
/// violation was analysed) and `assumptions` (the re-checks behind it).
fn with_requirements_json(mut v: Value, needs: Option<&Requirements>) -> Value {
    v["requires"] = needs.map_or(Value::Null, |n| json!(n.names()));
    v["assumptions"] = needs.map_or(Value::Null, Requirements::json);
    v
}
