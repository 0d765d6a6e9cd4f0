//! `semcheck check PROTOCOL`: one case.

use semcheck::checker::{explore, Config, Report, Verdict};
use semcheck::protocols::find;
use semcheck::ModelError;
use serde_json::{json, Value};

use super::args::CheckArgs;
use super::{EXIT_INCOMPLETE, EXIT_PROVED, EXIT_VIOLATION};

/// One checked (protocol, mutant, devices, repeat).
pub(crate) struct Case {
    pub(crate) protocol: String,
    pub(crate) mutant: Option<String>,
    pub(crate) devices: usize,
    pub(crate) repeat: u32,
    pub(crate) report: Report,
}

impl Case {
    /// Builds the program and explores it.
    pub(crate) fn check(
        protocol: &str,
        mutant: Option<&str>,
        devices: usize,
        repeat: Option<u32>,
        config: &Config,
    ) -> Result<Case, ModelError> {
        let p = find(protocol)?;
        let repeat = p.repeat_for(mutant, repeat)?;
        let program = p.program(devices, mutant, repeat)?;
        let report = explore(&program, config);
        Ok(Case { protocol: protocol.to_string(), mutant: mutant.map(str::to_string), devices, repeat, report })
    }

    /// The process exit code for this verdict.
    pub(crate) fn exit_code(&self) -> i32 {
        match self.report.verdict {
            Verdict::Proved => EXIT_PROVED,
            Verdict::Violation(_) => EXIT_VIOLATION,
            Verdict::Incomplete { .. } => EXIT_INCOMPLETE,
        }
    }

    /// The rule broken, if any.
    pub(crate) fn rule(&self) -> Option<semcheck::Rule> {
        match &self.report.verdict {
            Verdict::Violation(c) => Some(c.violation.rule),
            _ => None,
        }
    }

    /// The JSON object of the case.
    pub(crate) fn json(&self) -> Value {
        let s = &self.report.stats;
        let violation = match &self.report.verdict {
            Verdict::Violation(c) => json!({
                "rule": c.violation.rule.name(),
                "message": c.violation.message,
                "devices": c.violation.devices.iter().map(|d| d.0).collect::<Vec<_>>(),
                "trace": c.trace.iter().map(|t| t.description.as_str()).collect::<Vec<_>>(),
            }),
            _ => Value::Null,
        };
        let incomplete = match &self.report.verdict {
            Verdict::Incomplete { reason, detail } => json!({"reason": reason, "detail": detail}),
            _ => Value::Null,
        };
        json!({
            "protocol": self.protocol,
            "mutant": self.mutant,
            "devices": self.devices,
            "repeat": self.repeat,
            "verdict": self.report.verdict.name(),
            "violation": violation,
            "incomplete": incomplete,
            "states": s.states,
            "transitions": s.transitions,
            "max_depth": s.max_depth,
            "seconds": s.seconds,
            "memory_bytes": s.memory_bytes,
            "peak_rss_bytes": super::bench::peak_rss_bytes(),
            "strategy": self.report.config.strategy,
            "reduction": self.report.config.reduction,
        })
    }

    /// The case as text for a person.
    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        let mutant = self.mutant.as_deref().map_or(String::new(), |m| format!(" --mutant {m}"));
        let s = &self.report.stats;
        let how = format!(
            "{} states, {} transitions, depth {}, {:.2} s, {:.1} MiB ({:?}, {:?} reduction)",
            s.states,
            s.transitions,
            s.max_depth,
            s.seconds,
            s.memory_bytes as f64 / (1 << 20) as f64,
            self.report.config.strategy,
            self.report.config.reduction,
        );
        let head = format!("{}{mutant}, {} devices, repeat {}", self.protocol, self.devices, self.repeat);
        match &self.report.verdict {
            Verdict::Proved => {
                out.push_str(&format!("{head}: PROVED\n  every reachable state explored, no rule broken: {how}\n"));
            }
            Verdict::Incomplete { detail, .. } => {
                out.push_str(&format!("{head}: INCOMPLETE\n  {detail}\n"));
            }
            Verdict::Violation(c) => {
                out.push_str(&format!("{head}: VIOLATION ({})\n  {}\n", c.violation.rule, c.violation.message));
                out.push_str(&format!("  schedule ({} events):\n", c.trace.len()));
                for (i, t) in c.trace.iter().enumerate() {
                    out.push_str(&format!("  {:>4}. {}\n", i + 1, t.description));
                }
                out.push_str(&format!("  explored {how}\n"));
            }
        }
        out
    }
}

pub(crate) fn run(args: &CheckArgs) -> Result<i32, ModelError> {
    let case = Case::check(
        &args.case.protocol,
        args.case.mutant.as_deref(),
        args.case.devices as usize,
        args.case.repeat,
        &args.config(),
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&case.json()).expect("JSON of plain data"));
    } else {
        print!("{}", case.text());
    }
    Ok(case.exit_code())
}
