//! One story per case: the counterexample rotated so that the violation involves the
//! lowest devices.
//!
//! On a rotation-symmetric ring the explorer stores one state per orbit of the rotations,
//! so which rotation of a bug it reports depends on the order it met the states in, and
//! the minimiser, which cuts the run at the first event that breaks the rule, can end on
//! the mirror image of the explorer's violation (`d1 hbm_buf[0]` for one, `d0 hbm_buf[0]`
//! for the other). Rotating a schedule by any `k` gives another schedule of the same
//! program ([`Rotation::event`](semcheck_model::ring::Rotation::event)) that breaks the same rule on the rotated devices and
//! cells, so every command picks the same one: the rotation whose violation names the
//! smallest devices (in the violation's own order: the device that breaks the rule first),
//! ties broken by the devices of the events in order.

use semcheck_model::ring::Ring;
use semcheck_model::Event;
use tracing::debug;

use super::names::Namer;
use super::run::{run_events, TracedRun};

/// `run` rotated so that its violation involves the lowest devices; `run` itself when the
/// program has no rotation symmetry or the run breaks no rule.
pub fn canonical(namer: &Namer<'_>, run: TracedRun) -> TracedRun {
    let program = namer.program();
    let Some(violation) = run.ending.violation() else { return run };
    let Ok(ring) = Ring::of(program) else { return run };
    let Ok(g) = ring.rotation() else { return run };
    let n = ring.size();
    let key = |k: usize| {
        let r = g.pow(program, k);
        let devices: Vec<u16> = violation.devices.iter().map(|&d| r.device(d).0).collect();
        let lanes: Vec<u16> = run.events.iter().map(|&e| namer.device_of(r.event(e)).0).collect();
        (devices, lanes)
    };
    let Some(best) = (0..n).min_by_key(|&k| key(k)) else { return run };
    if best == 0 {
        return run;
    }
    let r = g.pow(program, best);
    let rotated: Vec<Event> = run.events.iter().map(|&e| r.event(e)).collect();
    match run_events(namer, &rotated) {
        Ok(turned) if turned.ending.violation().map(|v| v.rule) == Some(violation.rule) => {
            debug!(steps = r.steps(), "counterexample rotated to its canonical devices");
            turned
        }
        // A rotation of a schedule is a schedule; if it were not, keep the one we have.
        _ => run,
    }
}
