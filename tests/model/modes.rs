//! Every exploration mode on one program: the differential check shared by
//! `reduction_soundness.rs` and `reduction_random.rs`.
//!
//! Full exploration is the reference. Partial-order reduction, rotation symmetry and both
//! together must give the same verdict, and on a proved program find every final state
//! (symmetry: every orbit of final states); symmetry without partial-order reduction must
//! find a counterexample as short as the shortest one; the partial-order modes run on two
//! threads must give exactly the outcome of their one-thread run (verdict, counterexample,
//! counts; without the reduction the parallel code path is the same, only slower); and
//! every counterexample must replay, event by event, on the program itself.

use semcheck::checker::counterexample::{run_events, Namer};
use semcheck::checker::{explore, Budget, Config, Outcome, Reduction, Symmetry, Threads, Verdict};
use semcheck::model::Program;

/// What the modes found: the reference verdict's name, the rule it breaks, and whether the
/// program was rotation-symmetric; `None` when full exploration ran out of budget.
pub struct Agreement {
    pub verdict: &'static str,
    pub rule: Option<semcheck::model::Rule>,
    pub symmetric: bool,
}

fn run(program: &Program, budget: Budget, reduction: Reduction, symmetry: Symmetry, threads: u16) -> Outcome {
    let config = Config { reduction, symmetry, threads: Threads::Exactly(threads), budget, ..Config::default() };
    explore(program, &config)
}

/// Runs every mode and returns the first disagreement.
pub fn agree(program: &Program, budget: Budget) -> Result<Option<Agreement>, String> {
    let full = run(program, budget, Reduction::None, Symmetry::Off, 1);
    if matches!(full.verdict, Verdict::Incomplete { .. }) {
        return Ok(None);
    }
    let mut symmetric = false;
    // Final states found, per symmetry mode, by the run without partial-order reduction.
    let mut finals = full.stats.finished_states;
    for (reduction, symmetry) in [
        (Reduction::PartialOrder, Symmetry::Off),
        (Reduction::None, Symmetry::Auto),
        (Reduction::PartialOrder, Symmetry::Auto),
    ] {
        let mode = format!("{reduction:?} symmetry={symmetry:?}");
        let one = run(program, budget, reduction, symmetry, 1);
        symmetric |= one.stats.symmetry > 1;
        if one.verdict.name() != full.verdict.name() {
            return Err(format!("{mode}: {:?}\nbut full exploration: {:?}", one.verdict, full.verdict));
        }
        // Stubborn sets keep every terminal state, and symmetry one per orbit of them: on a
        // proved program the final states (orbits) found must all be found.
        if reduction == Reduction::None {
            finals = one.stats.finished_states;
        } else if one.verdict == Verdict::Proved && one.stats.finished_states != finals {
            return Err(format!(
                "{mode}: {} final states, but {finals} without partial-order reduction",
                one.stats.finished_states
            ));
        }
        if let Verdict::Violation(cex) = &one.verdict {
            check_replay(program, &mode, cex)?;
            // Rotations preserve depth: one orbit per state, the same shortest schedule length.
            if let (Reduction::None, Verdict::Violation(shortest)) = (reduction, &full.verdict) {
                if cex.schedule.len() != shortest.schedule.len() {
                    return Err(format!(
                        "{mode}: a counterexample of {} events, but the shortest has {}",
                        cex.schedule.len(),
                        shortest.schedule.len()
                    ));
                }
            }
        }
        if reduction == Reduction::None {
            continue;
        }
        let two = run(program, budget, reduction, symmetry, 2);
        let counts = |o: &Outcome| (o.stats.states, o.stats.transitions, o.stats.finished_states, o.stats.max_depth);
        if two.verdict != one.verdict || counts(&two) != counts(&one) {
            return Err(format!(
                "{mode}: two threads {:?} {:?}\nbut one thread {:?} {:?}",
                counts(&two),
                two.verdict,
                counts(&one),
                one.verdict
            ));
        }
    }
    let rule = full.verdict.violation().map(|v| v.rule);
    Ok(Some(Agreement { verdict: full.verdict.name(), rule, symmetric }))
}

fn check_replay(program: &Program, mode: &str, cex: &semcheck::checker::Counterexample) -> Result<(), String> {
    let replayed =
        run_events(&Namer::new(program), &cex.schedule).map_err(|e| format!("{mode}: does not replay: {e:?}"))?;
    let rule = replayed.ending.violation().map(|v| v.rule);
    if rule != Some(cex.violation.rule) {
        return Err(format!("{mode}: replays to {rule:?}, not {}", cex.violation.rule));
    }
    Ok(())
}
