//! One report of a check, whichever engine ran: the text a person reads and the JSON a
//! script reads (the same keys for every engine, with a top-level `verdict`).

use semcheck::assumptions::{proof_basis_unless, requirements_unless, ProofBasis, Requirements};
use std::sync::OnceLock;

use semcheck::checker::counterexample::{counterexample, explain, notes, Ending, Explanation, Found, Namer, Role};
use semcheck::checker::{Config, EngineRun, Outcome, Reduction, Stop, StopReason, Strategy, Symmetry, Verdict};
use semcheck::model::ir::Loc;
use semcheck::model::Violation;
use semcheck::{Case, Program, Source};
use serde_json::{json, Value};

/// A checked case: what was checked, the program it compiled to, the outcome, and for the
/// explorer's verdicts, which hardware assumptions a violation requires or a proof relies
/// on.
pub(crate) struct Checked {
    pub(crate) case: Case,
    pub(crate) program: Program,
    pub(crate) outcome: Outcome,
    pub(crate) needs: Option<Requirements>,
    pub(crate) basis: Option<ProofBasis>,
    /// The counterexample as every command shows it (minimised, canonical rotation),
    /// computed once.
    found: OnceLock<Option<Result<Found, String>>>,
    /// Seconds spent importing and compiling the kernel (its export apart), when measured.
    pub(crate) compile_seconds: Option<f64>,
    /// Seconds spent re-checking under other hardware assumptions (`requires`,
    /// `relies_on`), when there were re-checks.
    pub(crate) recheck_seconds: Option<f64>,
}

/// One event of a counterexample, for machines.
pub(crate) struct EventView {
    /// 1-based position in the schedule.
    pub(crate) index: usize,
    /// The device it happens on.
    pub(crate) device: u16,
    /// Its name (`d1 (0) wait recv_sem 4096`).
    pub(crate) text: String,
    /// Why it could happen when it did, where that is worth saying.
    pub(crate) note: Option<String>,
    /// The kernel source line it comes from.
    pub(crate) loc: Option<Loc>,
}

impl EventView {
    /// The event's JSON object (`file`/`line` null when it has no source line).
    pub(crate) fn json(&self) -> Value {
        json!({
            "index": self.index,
            "device": self.device,
            "text": self.text,
            "note": self.note,
            "file": self.loc.as_ref().map(|l| l.file.clone()),
            "line": self.loc.as_ref().map(|l| l.line),
        })
    }
}

/// A violation with its schedule's events located in the kernel's source.
pub(crate) struct ViolationView {
    /// The events, in order.
    pub(crate) events: Vec<EventView>,
    /// The 1-based index of the event that broke the rule (`None` for a deadlock: no
    /// event breaks it, the schedule ends with every device blocked).
    pub(crate) breaking: Option<usize>,
    /// Where the violation is reported: the breaking event's line, else (a deadlock, a
    /// leak found at exit) the line of the last located event of the devices involved.
    pub(crate) location: Option<Loc>,
    /// The few events without which the violation does not happen.
    pub(crate) explanation: Explanation,
}

/// How event names read, printed under every schedule a person reads.
pub(crate) const LEGEND: &str = "\
(dN: device N; (i) or (i,j): the grid index; #k: the k-th invocation (with --repeat);
 [k of n]: the k-th of n identical operations in one grid step; `sem a -> b`: the
 semaphore's value before and after, DMA semaphores counting bytes)";

impl Checked {
    /// A case checked by an engine other than the explorer (nothing is re-checked).
    pub(crate) fn sampled(case: Case, program: Program, outcome: Outcome) -> Checked {
        Checked {
            case,
            program,
            outcome,
            needs: None,
            basis: None,
            found: OnceLock::new(),
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
        Checked { case, program, outcome, needs, basis, found: OnceLock::new(), compile_seconds: None, recheck_seconds }
    }

    /// The requirements as reported: their witnesses numbered as the shown schedule's events
    /// (the engine's own schedule when the shown one does not replay).
    fn shown_needs(&self) -> Option<Requirements> {
        let needs = self.needs.as_ref()?;
        Some(match self.found() {
            Some(Ok(found)) => needs.located_in(&self.program, &found.run),
            _ => needs.clone(),
        })
    }

    /// The names of the behaviours the violation requires (empty: none), `None` when no
    /// violation was analysed.
    pub(crate) fn requires(&self) -> Option<Vec<&'static str>> {
        self.needs.as_ref().map(Requirements::names)
    }

    /// The counterexample's schedule executed on the model, minimised and rotated to its
    /// canonical devices (what `trace` and `replay` show of the same case), or why it does
    /// not replay. Computed once.
    fn found(&self) -> Option<&Result<Found, String>> {
        self.found
            .get_or_init(|| {
                let Verdict::Violation(c) = &self.outcome.verdict else { return None };
                if c.schedule.is_empty() {
                    return None;
                }
                Some(
                    counterexample(&self.program, c, true)
                        .map_err(|e| format!("(the schedule does not replay at event {}: {})", e.index + 1, e.wanted)),
                )
            })
            .as_ref()
    }

    /// The violation as the shown schedule breaks it (the engine's own when there is no
    /// schedule): the same devices and cells for `check`, `trace` and `replay`.
    pub(crate) fn shown_violation(&self) -> Option<&Violation> {
        let Verdict::Violation(c) = &self.outcome.verdict else { return None };
        match self.found() {
            Some(Ok(f)) => f.run.ending.violation().or(Some(&c.violation)),
            _ => Some(&c.violation),
        }
    }

    /// The counterexample's events with their source lines (`None` without a violation
    /// or when the schedule does not replay).
    pub(crate) fn violation_view(&self) -> Option<ViolationView> {
        let found = self.found()?.as_ref().ok()?;
        let run = &found.run;
        let violation = self.shown_violation()?;
        let namer = Namer::new(&self.program);
        let (notes, _) = notes(&self.program, run);
        let events: Vec<EventView> = run
            .events
            .iter()
            .enumerate()
            .map(|(i, &e)| EventView {
                index: i + 1,
                device: namer.device_of(e).0,
                text: run.names[i].clone(),
                note: notes[i].clone(),
                loc: namer.event_loc(&run.states[i], e).cloned(),
            })
            .collect();
        let breaking = match &run.ending {
            Ending::Violation { at, .. } => Some(at + 1),
            _ => None,
        };
        let involved = |e: &&EventView| violation.devices.iter().any(|d| d.0 == e.device);
        let located = |e: &&EventView| e.loc.is_some();
        let upto = breaking.unwrap_or(events.len());
        let location = breaking
            .and_then(|b| events[b - 1].loc.clone())
            .or_else(|| events[..upto].iter().rev().filter(involved).find(located).and_then(|e| e.loc.clone()))
            .or_else(|| events[..upto].iter().rev().find(located).and_then(|e| e.loc.clone()));
        Some(ViolationView { events, breaking, location, explanation: explain(&self.program, run) })
    }

    /// The JSON object of the case.
    pub(crate) fn json(&self) -> Value {
        let s = &self.outcome.stats;
        let export = match &self.case.source {
            Source::Python { path, .. } => semcheck::frontend::export_cost(path, self.case.devices),
            _ => None,
        };
        let violation = match &self.outcome.verdict {
            Verdict::Violation(c) => {
                let view = self.violation_view();
                let shown = self.shown_violation().unwrap_or(&c.violation);
                let stats = match self.found() {
                    Some(Ok(f)) => f.stats,
                    _ => None,
                };
                json!({
                    "rule": shown.rule.name(),
                    "message": shown.message,
                    "devices": shown.devices.iter().map(|d| d.0).collect::<Vec<_>>(),
                    "events": view.as_ref().map(|v| v.events.iter().map(EventView::json).collect::<Vec<_>>()),
                    "breaking_event": view.as_ref().and_then(|v| v.breaking),
                    "location": view.as_ref().and_then(|v| v.location.as_ref()).map(|l| json!({"file": l.file, "line": l.line})),
                    "engine_schedule": c.engine_schedule,
                    "explanation": view.as_ref().map(|v| v.explanation.points.iter().map(semcheck::checker::counterexample::render::json::point).collect::<Vec<_>>()),
                    "minimized": stats.map(|s| json!({
                        "events_before": s.events_before,
                        "events_after": s.events_after,
                        "devices_dropped": s.devices_dropped,
                        "switches_before": s.switches_before,
                        "switches_after": s.switches_after,
                    })),
                })
            }
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
        let kernel = match &case.source {
            Source::Python { kernel, .. } => kernel.clone(),
            _ => None,
        };
        let more = json!({"kind": "case", "kernel": kernel, "verdict": "error", "error": error.to_string()});
        v.as_object_mut().expect("an object").extend(more.as_object().expect("an object").clone());
        v
    }

    /// The JSON object of a case whose export a budget or Ctrl-C stopped (`reason`):
    /// what the watchdog prints of a stopped command, with the case's source.
    pub(crate) fn stopped_json(case: &Case, error: &semcheck::ModelError, reason: StopReason) -> Value {
        let mut v = case_json(case);
        let kernel = match &case.source {
            Source::Python { kernel, .. } => kernel.clone(),
            _ => None,
        };
        let more = json!({
            "kind": "stopped",
            "case": case.to_string(),
            "kernel": kernel,
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
                let shown = self.shown_violation().unwrap_or(&c.violation);
                let found = self.found();
                let explanation = match found {
                    Some(Ok(found)) => Some(explain(&self.program, &found.run)),
                    _ => None,
                };
                let started = match (&explanation, shown.rule) {
                    (Some(e), semcheck::model::Rule::Race) => dma_started(e),
                    _ => String::new(),
                };
                out.push_str(&format!("{head}: VIOLATION ({})\n  {}{started}\n", shown.rule, shown.message));
                match (found, &explanation) {
                    (Some(Ok(found)), Some(e)) => out.push_str(&violation_text(&self.program, found, e, schedule)),
                    (Some(Err(e)), _) => out.push_str(&format!("  {e}\n")),
                    _ => {}
                }
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

/// ` (started at event 31)`: where the shown schedule started the in-flight DMA of a
/// race, which the headline names by its statement only (the same as the other access's
/// when both are one line of a loop); empty when the explanation does not say.
fn dma_started(explanation: &Explanation) -> String {
    match explanation.points.iter().find(|p| p.role == Role::DmaInFlight).and_then(|p| p.index) {
        Some(i) => format!(" (started at event {})", i + 1),
        None => String::new(),
    }
}

/// A violation's explanation, what minimising did, and with `schedule` every event.
fn violation_text(program: &Program, found: &Found, explanation: &Explanation, schedule: bool) -> String {
    let run = &found.run;
    let mut out = String::new();
    let shown = explanation.indices().len();
    out.push_str(&format!(
        "  why ({shown} of {} events{}):\n",
        run.names.len(),
        if schedule { "" } else { "; --schedule shows every one" }
    ));
    for line in explanation.lines() {
        out.push_str(&format!("  {line}\n"));
    }
    if let Some(sentence) = found.minimized_sentence() {
        out.push_str(&format!("  schedule: {sentence}\n"));
    }
    if schedule {
        let (notes, about) = notes(program, run);
        if let Some(about) = about {
            out.push_str(&format!("  ({about})\n"));
        }
        out.push_str(&format!("  schedule ({} events):\n", run.names.len()));
        for (i, name) in run.names.iter().enumerate() {
            match &notes[i] {
                Some(note) => out.push_str(&format!("  {:>4}. {name}   [{note}]\n", i + 1)),
                None => out.push_str(&format!("  {:>4}. {name}\n", i + 1)),
            }
        }
    }
    for line in LEGEND.lines() {
        out.push_str(&format!("  {line}\n"));
    }
    out
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
