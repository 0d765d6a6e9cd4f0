//! One report of a check, whichever engine ran: the text a person reads and the JSON a
//! script reads (the same keys for every engine, with a top-level `verdict`).

use semcheck::assumptions::{proof_basis_unless, requirements_unless, ProofBasis, Requirements};
use std::sync::OnceLock;

use semcheck::checker::{Config, EngineRun, Outcome, Reduction, Stop, StopReason, Strategy, Symmetry, Verdict};
use semcheck::model::Violation;
use semcheck::{Case, Program, Source};
use serde_json::{json, Value};

use super::shown::{Shown, ViolationView};

/// A checked case: what was checked, the program it compiled to, the outcome, and for the
/// explorer's verdicts, which hardware assumptions a violation requires or a proof relies
/// on.
pub(crate) struct Checked {
    pub(crate) case: Case,
    pub(crate) program: Program,
    pub(crate) outcome: Outcome,
    pub(crate) needs: Option<Requirements>,
    pub(crate) basis: Option<ProofBasis>,
    /// A violation's counterexample as every command shows it (minimised, canonical
    /// rotation, explained), computed once.
    shown: OnceLock<Option<Shown>>,
    /// Seconds spent importing and compiling the kernel (its export apart), when measured.
    pub(crate) compile_seconds: Option<f64>,
    /// Seconds spent re-checking under other hardware assumptions (`requires`,
    /// `relies_on`), when there were re-checks.
    pub(crate) recheck_seconds: Option<f64>,
}

impl Checked {
    /// A case checked by an engine other than the explorer (nothing is re-checked).
    pub(crate) fn sampled(case: Case, program: Program, outcome: Outcome) -> Checked {
        Checked {
            case,
            program,
            outcome,
            needs: None,
            basis: None,
            shown: OnceLock::new(),
            compile_seconds: None,
            recheck_seconds: None,
        }
    }

    /// The same, with the seconds its compiling took.
    pub(crate) fn compiled_in(mut self, seconds: f64) -> Checked {
        self.compile_seconds = Some(seconds);
        self
    }

    /// A case the explorer checked with `config`: a violation is re-checked, with the same
    /// configuration, under the stronger choice of each option, a proof under the weaker
    /// choice of each option that rules out something that can happen in the kernel (see
    /// [`semcheck::assumptions`]).
    pub(crate) fn explored(case: Case, program: Program, outcome: Outcome, config: &Config) -> Checked {
        Checked::explored_unless(case, program, outcome, config, None)
    }

    /// [`Checked::explored`], the re-checks under the other hardware assumptions also
    /// stopped by `stop` (the case's budget, Ctrl-C): a re-check it stops is undecided,
    /// and the verdict found stands.
    pub(crate) fn explored_unless(
        case: Case,
        program: Program,
        outcome: Outcome,
        config: &Config,
        stop: Option<&Stop>,
    ) -> Checked {
        let start = std::time::Instant::now();
        let needs = match &outcome.verdict {
            Verdict::Violation(cex) => Some(requirements_unless(&program, cex, config, stop)),
            _ => None,
        };
        let basis = matches!(outcome.verdict, Verdict::Proved).then(|| proof_basis_unless(&program, config, stop));
        let recheck_seconds = (needs.is_some() || basis.is_some()).then(|| start.elapsed().as_secs_f64());
        Checked { case, program, outcome, needs, basis, shown: OnceLock::new(), compile_seconds: None, recheck_seconds }
    }

    /// The requirements as reported: their witnesses numbered as the shown schedule's events
    /// (the engine's own schedule when the shown one does not replay).
    fn shown_needs(&self) -> Option<Requirements> {
        let needs = self.needs.as_ref()?;
        Some(match self.shown().and_then(Shown::found) {
            Some(found) => needs.located_in(&self.program, &found.run),
            None => needs.clone(),
        })
    }

    /// The names of the behaviours the violation requires (empty: none), `None` when no
    /// violation was analysed.
    pub(crate) fn requires(&self) -> Option<Vec<&'static str>> {
        self.needs.as_ref().map(Requirements::names)
    }

    /// The violation's counterexample as every command shows it (`None` without a
    /// violation). Computed once.
    fn shown(&self) -> Option<&Shown> {
        self.shown
            .get_or_init(|| match &self.outcome.verdict {
                Verdict::Violation(c) => Some(Shown::of(&self.program, c)),
                _ => None,
            })
            .as_ref()
    }

    /// The violation as the shown schedule breaks it (the engine's own when there is no
    /// schedule): the same devices and cells for `check`, `trace` and `replay`.
    pub(crate) fn shown_violation(&self) -> Option<&Violation> {
        let Verdict::Violation(c) = &self.outcome.verdict else { return None };
        self.shown().map(|s| s.violation(c))
    }

    /// The counterexample's events with their source lines (`None` without a violation
    /// or when the schedule does not replay).
    pub(crate) fn violation_view(&self) -> Option<ViolationView<'_>> {
        let Verdict::Violation(c) = &self.outcome.verdict else { return None };
        self.shown()?.view(&self.program, c)
    }

    /// The JSON object of the case.
    pub(crate) fn json(&self) -> Value {
        let s = &self.outcome.stats;
        let export = match &self.case.source {
            Source::Python { path, .. } => semcheck::frontend::export_cost(path, self.case.devices),
            _ => None,
        };
        let violation = match (&self.outcome.verdict, self.shown()) {
            (Verdict::Violation(c), Some(shown)) => shown.json(&self.program, c),
            _ => Value::Null,
        };
        let incomplete = match &self.outcome.verdict {
            Verdict::Incomplete { reason, detail } => json!({"reason": reason, "detail": detail}),
            _ => Value::Null,
        };
        let (kernel, defined, prefetch, frontend, script_args) = match &self.case.source {
            Source::Python { path, kernel, .. } => (
                kernel.clone(),
                semcheck::frontend::kernel_location(path, self.case.devices, kernel.as_deref())
                    .map(|(file, line, function)| json!({"file": file, "line": line, "function": function})),
                semcheck::frontend::kernel_prefetch(path, self.case.devices, kernel.as_deref()),
                semcheck::frontend::frontend_json(path, self.case.devices),
                semcheck::frontend::script_args_of(path, self.case.devices),
            ),
            _ => (None, None, None, None, None),
        };
        let mut v = case_json(&self.case);
        let more = json!({
            "kind": "case",
            "kernel": kernel.unwrap_or_else(|| self.program.kernel.clone()),
            "kernel_defined_at": defined,
            "program_kernels": self.program.has_several_kernels().then(|| self.program.kernels.clone()),
            "frontend": frontend,
            "script_args": script_args,
            "prefetch": prefetch,
            "verdict": self.outcome.verdict.name(),
            "violation": violation,
            "incomplete": incomplete,
            "states": s.states,
            "transitions": s.transitions,
            "max_depth": s.max_depth,
            "executions": s.executions,
            "seconds": s.seconds,
            "export_seconds": export.and_then(|(seconds, _)| seconds),
            "export_peak_rss_bytes": export.and_then(|(_, bytes)| bytes),
            "compile_seconds": self.compile_seconds,
            "recheck_seconds": self.recheck_seconds,
            "memory_bytes": s.memory_bytes,
            "symmetry": s.symmetry,
            "threads": s.threads,
            "engine": self.outcome.run,
            "coverage": self.coverage_json(),
            "requires": self.requires(),
            "relies_on": self.basis.as_ref().map(ProofBasis::names),
            "assumptions": match (&self.shown_needs(), &self.basis) {
                (Some(needs), _) => needs.json(),
                (None, Some(basis)) => basis.json(),
                (None, None) => Value::Null,
            },
        });
        v.as_object_mut().expect("an object").extend(more.as_object().expect("an object").clone());
        v
    }

    /// The JSON object of a case that could not be checked (`verdict: error`).
    pub(crate) fn error_json(case: &Case, error: &semcheck::ModelError) -> Value {
        let mut v = case_json(case);
        let more = json!({"kind": "case", "kernel": case_kernel(case), "verdict": "error", "error": error.to_string()});
        v.as_object_mut().expect("an object").extend(more.as_object().expect("an object").clone());
        v
    }

    /// The JSON object of a case whose export a budget or Ctrl-C stopped (`reason`):
    /// what the watchdog prints of a stopped command, with the case's source.
    pub(crate) fn stopped_json(case: &Case, error: &semcheck::ModelError, reason: StopReason) -> Value {
        let mut v = case_json(case);
        let more = json!({
            "kind": "stopped",
            "case": case.to_string(),
            "kernel": case_kernel(case),
            "verdict": "incomplete",
            "incomplete": {"reason": reason, "detail": error.to_string()},
            "states": 0,
        });
        v.as_object_mut().expect("an object").extend(more.as_object().expect("an object").clone());
        v
    }

    /// How the explorer treated rotations: the number it stored states modulo, or why it
    /// stored every state as it is.
    fn symmetry_text(&self, config: &Config) -> String {
        match (self.outcome.stats.symmetry, config.symmetry) {
            (k, _) if k > 1 => format!("rotation symmetry: one state per orbit of {k} rotations"),
            (_, Symmetry::Off) => "no symmetry reduction".to_string(),
            (_, Symmetry::Auto) => match semcheck::checker::rotation_symmetry(&self.program, config) {
                Err(why) => format!("no symmetry reduction: {why}"),
                Ok(_) => "no symmetry reduction".to_string(),
            },
        }
    }

    /// Which statements never executed, or why this outcome cannot say.
    fn coverage_json(&self) -> Value {
        match semcheck::coverage::never_executed(&self.program, &self.outcome) {
            Ok(missed) => json!({
                "exhaustive": true,
                "never_executed": missed.iter().map(|u| json!({
                    "stmt": u.stmt.0,
                    "location": u.location.as_ref().map(|l| format!("{}:{}", l.file, l.line)),
                    "statement": u.label,
                })).collect::<Vec<_>>(),
            }),
            Err(why) => json!({"exhaustive": false, "note": why}),
        }
    }

    /// A warning per statement a proof never executed ("vacuous at N = 2"), or why the
    /// outcome cannot say (an incomplete run); nothing after a violation.
    fn coverage_text(&self) -> String {
        match semcheck::coverage::never_executed(&self.program, &self.outcome) {
            Ok(missed) => missed
                .iter()
                .map(|u| format!("  warning: vacuous at N = {}: never executed: {}\n", self.case.devices, u.label))
                .collect(),
            Err(why) if !matches!(self.outcome.verdict, Verdict::Violation(_)) => {
                format!("  coverage: not computed: {why}\n")
            }
            Err(_) => String::new(),
        }
    }

    /// The case as text for a person: a violation with its explanation.
    pub(crate) fn text(&self) -> String {
        self.text_with(false)
    }

    /// The case as text for a person; with `schedule`, a violation's whole schedule too.
    pub(crate) fn text_with(&self, schedule: bool) -> String {
        let mut out = String::new();
        let s = &self.outcome.stats;
        let how = match &self.outcome.run {
            EngineRun::Explore(config) => format!(
                "the explorer ({}, {}, {}, {} thread{}): {} {}, {} transitions, depth {}, {:.2} s, {:.1} MiB",
                match config.strategy {
                    Strategy::Bfs => "breadth-first",
                    Strategy::Dfs => "depth-first",
                },
                match config.reduction {
                    Reduction::PartialOrder => "partial-order reduction",
                    Reduction::None => "no reduction",
                },
                self.symmetry_text(config),
                s.threads,
                if s.threads == 1 { "" } else { "s" },
                s.states,
                if s.symmetry > 1 { "states (orbits)" } else { "states" },
                s.transitions,
                s.max_depth,
                s.seconds,
                s.memory_bytes as f64 / (1 << 20) as f64,
            ),
            other => format!("{}: {} executions, {:.2} s", describe_engine(other), s.executions, s.seconds),
        };
        let head = self.case.to_string();
        match &self.outcome.verdict {
            Verdict::Proved => {
                out.push_str(&format!("{head}: PROVED\n  every reachable state explored, no rule broken; {how}\n"));
                for line in self.basis.iter().flat_map(|b| b.lines(self.case.devices)) {
                    out.push_str(&format!("  {line}\n"));
                }
                out.push_str(&self.coverage_text());
            }
            Verdict::Incomplete { detail, reason } => {
                out.push_str(&format!("{head}: INCOMPLETE\n  {detail}\n  {how}\n"));
                if let (true, EngineRun::Explore(Config { strategy: Strategy::Bfs, .. })) =
                    (reason.is_budget(), &self.outcome.run)
                {
                    out.push_str(
                        "  breadth-first search stores every state up to the depth of the shortest violation: \
                         `--strategy dfs` may reach a deep one in far fewer states (its counterexample need not \
                         be the shortest; stopped too, it proves nothing either)\n",
                    );
                }
                out.push_str(&self.coverage_text());
            }
            Verdict::Violation(c) => {
                let shown = self.shown().expect("a violation is shown");
                out.push_str(&format!("{head}: VIOLATION ({})\n  {}\n", shown.violation(c).rule, shown.message(c)));
                out.push_str(&shown.text(&self.program, schedule));
                if let Some(e) = &c.engine_schedule {
                    out.push_str(&format!("  engine schedule: {e}\n"));
                }
                out.push_str(&format!("  found by {how}\n"));
                for line in self.shown_needs().iter().flat_map(|n| n.lines(self.case.devices)) {
                    out.push_str(&format!("  {line}\n"));
                }
                if let Some(command) = super::trace::html_command(&self.case) {
                    out.push_str(&format!("  drawn as a page: {command}\n"));
                }
            }
        }
        out
    }
}

/// An engine's configuration in words.
pub(crate) fn describe_engine(run: &EngineRun) -> String {
    match run {
        EngineRun::Explore(_) => "the explorer".to_string(),
        EngineRun::Shuttle { scheduler, iterations, seed } => {
            format!("shuttle's {scheduler} scheduler (seed {seed}, at most {iterations} iterations)")
        }
        EngineRun::Loom { preemption_bound: Some(b) } => format!("loom (preemption bound {b})"),
        EngineRun::Loom { preemption_bound: None } => "loom (no preemption bound)".to_string(),
        EngineRun::Stress { runs, seed, .. } => format!("stress on OS threads ({runs} runs from seed {seed})"),
    }
}

/// What every case's JSON object says of the case itself: where its kernel comes from,
/// the mesh size, the repeat count and the assumptions.
fn case_json(case: &Case) -> Value {
    json!({
        "source": case.source,
        "protocol": case.source.protocol(),
        "mutant": case.source.mutant(),
        "file": match &case.source {
            Source::Python { path, .. } => Some(path.display().to_string()),
            _ => None,
        },
        "devices": case.devices,
        "repeat": case.repeat,
        "semantics": case.semantics,
    })
}

/// The kernel (or program) of a case that could not be checked: the one `--kernel` named,
/// else the one its file's document says is checked, if the document was read.
fn case_kernel(case: &Case) -> Option<String> {
    match &case.source {
        Source::Python { kernel: Some(k), .. } => Some(k.clone()),
        Source::Python { path, kernel: None, .. } => semcheck::frontend::chosen_name(path, case.devices, None),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use semcheck::checker::{explore, Config};
    use semcheck::model::dsl::trace;
    use semcheck::model::{compile, Mesh, Spec};

    /// A kernel whose grid has N - 1 steps and whose handshake runs at step 1.
    fn checked(n: usize) -> Checked {
        let kernel = trace("late", |k| {
            k.grid(&[n - 1]);
            let ready = k.regular_semaphore("ready");
            let right = (k.axis_index("x") + 1) % n;
            k.when(k.program_id(0).equals(1), |k| {
                k.semaphore_signal(&ready, 1, &right);
                k.semaphore_wait(&ready, 1);
            });
        })
        .unwrap();
        let spec = Spec::plain(vec![]);
        let program = compile(&kernel, &Mesh::ring(n).unwrap(), &spec, 1).unwrap();
        let outcome = explore(&program, &Config::default());
        Checked::sampled(Case::new(Source::Dsl { name: "late".into() }, n), program, outcome)
    }

    #[test]
    fn a_proof_that_never_ran_a_statement_warns() {
        let two = checked(2);
        let text = two.text();
        assert!(text.contains("PROVED"), "{text}");
        let warning = text.lines().find(|l| l.contains("warning")).unwrap_or_else(|| panic!("{text}"));
        assert!(warning.starts_with("  warning: vacuous at N = 2: never executed: report.rs:"), "{warning}");
        assert!(warning.ends_with(" @pl.when(program_id(0) == 1)"), "{warning}");
        let json = two.json();
        assert_eq!(json["coverage"]["exhaustive"], true);
        assert_eq!(
            json["coverage"]["never_executed"][0]["statement"].as_str(),
            warning.split("never executed: ").nth(1)
        );

        let three = checked(3);
        assert!(!three.text().contains("warning"), "{}", three.text());
        assert_eq!(three.json()["coverage"]["never_executed"], serde_json::json!([]));
    }
}
