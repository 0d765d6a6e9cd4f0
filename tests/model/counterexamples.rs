//! Counterexamples of the explorer: minimised, named, replayed and rendered.

use semcheck::checker::counterexample::{
    counterexample, engine_name, lockstep, render, run_names, Format, Found, Namer,
};
use semcheck::checker::{explore, Config, Strategy, Verdict};
use semcheck::Program;

fn found(protocol: &str, mutant: &str, n: usize, strategy: Strategy) -> (Program, Found) {
    let case = semcheck::catalogue_case(protocol, Some(mutant), n).unwrap();
    let program = semcheck::program(&case).unwrap();
    let config = Config { strategy, ..Config::default() };
    let Verdict::Violation(cex) = explore(&program, &config).verdict else {
        panic!("{protocol} {mutant}: no violation")
    };
    let f = counterexample(&program, &cex, true).unwrap();
    assert_eq!(f.run.ending.violation().unwrap().rule, cex.violation.rule);
    (program, f)
}

#[test]
fn the_minimiser_shortens_a_depth_first_counterexample_and_keeps_the_rule() {
    let (_, dfs) = found("psum", "no-capacity", 3, Strategy::Dfs);
    let (_, bfs) = found("psum", "no-capacity", 3, Strategy::Bfs);
    assert!(dfs.run.events.len() < dfs.before, "{} -> {}", dfs.before, dfs.run.events.len());
    assert!(bfs.run.events.len() <= bfs.before);
}

#[test]
fn a_minimised_run_is_one_minimal() {
    let (program, f) = found("all_gather", "shared-recv-sem", 3, Strategy::Bfs);
    let namer = Namer::new(&program);
    let rule = f.run.ending.violation().unwrap().rule;
    for i in 0..f.run.names.len() {
        let mut shorter = f.run.names.clone();
        shorter.remove(i);
        let still = run_names(&namer, &shorter).ok().and_then(|r| r.ending.violation().map(|v| v.rule));
        assert_ne!(still, Some(rule), "event {} could still be dropped", i + 1);
    }
}

#[test]
fn names_are_unique_among_enabled_events() {
    let program = semcheck::catalogue_program("psum_scatter", None, 2, 1).unwrap();
    let namer = Namer::new(&program);
    let sim = lockstep(&program).unwrap();
    assert!(!sim.events.is_empty());
    let mut state = program.initial_state();
    let mut values = program.values.clone();
    let (mut enabled, mut next) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        enabled.clear();
        program.enabled(&state, &mut enabled);
        let Some(&first) = enabled.last() else { break };
        let mut names: Vec<String> = enabled.iter().map(|&e| namer.event(&state, e)).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "two enabled events share a name");
        assert!(matches!(program.step(&state, first, &mut values, &mut next), semcheck_model::StepOutcome::Next));
        std::mem::swap(&mut state, &mut next);
    }
}

#[test]
fn the_lockstep_run_of_a_mutant_that_needs_run_ahead_is_clean() {
    // Lock step never runs ahead, so the no-capacity mutant behaves like psum there.
    let program = semcheck::catalogue_program("psum", Some("no-capacity"), 4, 1).unwrap();
    let sim = lockstep(&program).unwrap();
    let correct = semcheck::catalogue_program("psum", None, 4, 1).unwrap();
    let sim2 = lockstep(&correct).unwrap();
    let names: Vec<_> = sim.checkpoints.iter().map(|c| c.name.clone()).collect();
    assert_eq!(names, sim2.checkpoints.iter().map(|c| c.name.clone()).collect::<Vec<_>>());
    assert_eq!(names, ["initial", "prologue", "(0)", "(1)", "(2)", "(3)"]);
}

#[test]
fn every_rendering_of_a_counterexample_mentions_the_rule() {
    let (program, f) = found("psum", "no-capacity", 2, Strategy::Bfs);
    let case = semcheck::catalogue_case("psum", Some("no-capacity"), 2).unwrap();
    let file = f.trace_file(&case, &engine_name(&Config::default()));
    for format in [Format::Text, Format::Table, Format::Mermaid, Format::Dot, Format::Json] {
        let out = render(format, &program, &file.header, &f.run);
        assert!(out.contains("race"), "{format:?}");
    }
    let mermaid = render(Format::Mermaid, &program, &file.header, &f.run);
    assert!(mermaid.starts_with("sequenceDiagram\n"));
    assert!(!mermaid.lines().skip(1).any(|l| l.contains(';')), "`;` ends a Mermaid statement");
    let dot = render(Format::Dot, &program, &file.header, &f.run);
    assert!(dot.starts_with("digraph {") && dot.contains("fillcolor"));
    let json: serde_json::Value = serde_json::from_str(&render(Format::Json, &program, &file.header, &f.run)).unwrap();
    assert_eq!(json["events"].as_array().unwrap().len(), f.run.events.len());
}

/// The explanation a person needs for all_gather's shared receive semaphore: the step-0
/// `wait_recv` of some device is satisfied by the bytes of a *step-1* DMA, and the race
/// names the DMA whose start is an event of the schedule.
#[test]
fn notes_point_at_the_dma_that_satisfied_a_wait_and_at_the_racing_dma() {
    use semcheck::checker::counterexample::notes;
    let (program, f) = found("all_gather", "shared-recv-sem", 3, Strategy::Bfs);
    let (per_event, about) = notes(&program, &f.run);
    let about = about.expect("the race names a DMA started in the schedule");
    let started: usize = about.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(f.run.names[started - 1].contains("start remote_copy"), "{about}: {}", f.run.names[started - 1]);
    let fooled = f.run.names.iter().zip(&per_event).any(|(name, note)| {
        let Some(note) = note else { return false };
        let from: usize = note.rsplit(' ').next().unwrap().parse().unwrap();
        name.contains("(0) wait recv_sem")
            && f.run.names[from - 1].contains("dma [d")
            && f.run.names[from - 1].contains("(1) start")
    });
    assert!(
        fooled,
        "no step-0 wait_recv satisfied by a step-1 DMA:\n{:#?}",
        f.run.names.iter().zip(&per_event).collect::<Vec<_>>()
    );
}
