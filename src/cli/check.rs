//! `semcheck check TARGET`: the cases one target names (one per mesh size), on the chosen
//! engine.

use semcheck::checker::{explore_with, Verdict};
use semcheck::ModelError;
use serde_json::json;

use super::args::CheckArgs;
use super::report::Checked;
use super::shuttle::EngineArg;
use super::watch::{style, watch};
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
    if let Some(sizes) = &args.sizes {
        return super::sizes::run(args, sizes);
    }
    let cases = args.case.cases(2, style(args.json))?;
    let mut checked = Vec::new();
    let w = watch();
    for case in cases {
        if w.interrupted() {
            break;
        }
        w.case(&case.to_string(), style(args.json));
        w.doing("compiling the kernel", false);
        let program = semcheck::program(&case)?;
        let c = match args.engine.engine {
            EngineArg::Explore => {
                let config = args.explore.config();
                w.doing("exploring", true);
                let outcome = explore_with(&program, &config, w.control());
                w.doing("re-checking under the other hardware assumptions", false);
                Checked::explored(case, program, outcome, &config)
            }
            EngineArg::Shuttle => {
                // The campaign keeps the time budget itself and reports how many iterations
                // ran; the watchdog only ends it if it does not stop within its grace period.
                w.doing("running the shuttle campaign", true);
                let outcome = super::shuttle::run(args, &case, &program)?;
                Checked::sampled(case, program, outcome)
            }
        };
        w.idle();
        if !args.json {
            emit(&c.text());
        }
        checked.push(c);
    }
    let code = worst(checked.iter().map(|c| &c.outcome.verdict));
    if args.json {
        let value = match checked.as_slice() {
            [one] => {
                let mut v = one.json();
                v["peak_rss_bytes"] = json!(super::bench::peak_rss_bytes());
                v
            }
            many => json!({
                "verdict": match code { EXIT_VIOLATION => "violation", EXIT_INCOMPLETE => "incomplete", _ => "proved" },
                "cases": many.iter().map(Checked::json).collect::<Vec<_>>(),
            }),
        };
        emit(&format!("{}\n", serde_json::to_string_pretty(&value).expect("JSON of plain data")));
    }
    Ok(code)
}
