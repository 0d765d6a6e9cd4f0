//! Fewer context switches: reorder the independent events of a schedule so that each
//! device runs as long as it can before another takes over, keeping the same violation.
//!
//! Every event has a lane, the device it happens on ([`Namer::device_of`]); events of one
//! lane keep their order (so a device's steps stay the same operations). The pass rebuilds
//! the schedule one event at a time: the next event of the lane that ran last if it is
//! enabled and breaks nothing, else the earliest (in the old order) next event of any lane
//! that is. The event that breaks the rule stays last. The result is kept only if every
//! event replays and it breaks the same rule with the same message (same devices, same
//! cells); otherwise the schedule stays as it was.

use semcheck_model::{Event, StepOutcome, ValueTable};

use super::names::Namer;
use super::run::{run_events, Ending, TracedRun};

/// The context switches of a schedule: consecutive events on different devices.
pub fn switches(namer: &Namer<'_>, events: &[Event]) -> usize {
    events.windows(2).filter(|w| namer.device_of(w[0]) != namer.device_of(w[1])).count()
}

/// `run` with each device's events grouped, or `None` when the regrouped schedule does
/// not break the same way (or has no fewer switches).
pub fn regroup(namer: &Namer<'_>, run: &TracedRun) -> Option<TracedRun> {
    let want = run.ending.violation()?;
    let program = namer.program();
    let n = run.events.len();
    // The breaking event stays last; a deadlock has none.
    let free = match run.ending {
        Ending::Violation { .. } => n.saturating_sub(1),
        _ => n,
    };
    let lane: Vec<usize> = run.events.iter().map(|&e| namer.device_of(e).index()).collect();
    let mut lanes: Vec<Vec<usize>> = vec![Vec::new(); program.num_devices()];
    for i in 0..free {
        lanes[lane[i]].push(i);
    }
    let mut next = vec![0usize; lanes.len()];
    let mut state = program.initial_state();
    let mut values = program.values.clone();
    let (mut enabled, mut after) = (Vec::new(), Vec::new());
    let mut order: Vec<Event> = Vec::with_capacity(n);
    let mut current: Option<usize> = None;
    while order.len() < free {
        enabled.clear();
        program.enabled(&state, &mut enabled);
        // Whether the next event of lane `l` can run now without breaking a rule (a try
        // interns what it computes in `values`: ids are never taken back, and the order
        // found is run again from the start).
        let try_lane = |l: usize, state: &[u32], values: &mut ValueTable, after: &mut Vec<u32>| -> bool {
            let Some(&i) = lanes[l].get(next[l]) else { return false };
            let e = run.events[i];
            if !enabled.contains(&e) {
                return false;
            }
            matches!(program.step(state, e, values, after), StepOutcome::Next)
        };
        let mut pick = current.filter(|&l| try_lane(l, &state, &mut values, &mut after));
        if pick.is_none() {
            let mut heads: Vec<(usize, usize)> =
                (0..lanes.len()).filter_map(|l| lanes[l].get(next[l]).map(|&i| (i, l))).collect();
            heads.sort_unstable();
            pick = heads.into_iter().map(|(_, l)| l).find(|&l| try_lane(l, &state, &mut values, &mut after));
        }
        let l = pick?;
        let e = run.events[lanes[l][next[l]]];
        match program.step(&state, e, &mut values, &mut after) {
            StepOutcome::Next => std::mem::swap(&mut state, &mut after),
            StepOutcome::Violation(_) => return None,
        }
        next[l] += 1;
        current = Some(l);
        order.push(e);
    }
    order.extend_from_slice(&run.events[free..]);
    if switches(namer, &order) >= switches(namer, &run.events) {
        return None;
    }
    run_events(namer, &order)
        .ok()
        .filter(|grouped| grouped.ending.violation().is_some_and(|v| v == want) && same_end(grouped, run))
}

/// Whether two runs end alike: the same breaking position (the last event) or both stuck.
fn same_end(a: &TracedRun, b: &TracedRun) -> bool {
    match (&a.ending, &b.ending) {
        (Ending::Violation { at: x, .. }, Ending::Violation { at: y, .. }) => x == y,
        (Ending::Deadlock(_), Ending::Deadlock(_)) => true,
        _ => false,
    }
}
