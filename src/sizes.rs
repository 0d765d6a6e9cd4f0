//! Checking a ring kernel for every ring size of a range (`check --sizes 2..256`).
//!
//! Each size `N` is decided by one of two methods:
//!
//! * **exact exploration** of the whole `N`-ring, while it is cheap (within
//!   [`SizesConfig::exact`]; once one size exceeds it, larger sizes are not tried);
//! * above that, the **window method** of [`semcheck_model::window`]: the local rules
//!   (race, outside-kernel, semaphore-leak) on a window of `2K+1` devices around one
//!   device, the rest of the ring replaced by environment tokens; then, when they hold,
//!   the global rules (deadlock, wrong-result, the final barrier semaphore) from one run
//!   of the whole ring ([`semcheck_checker::single_run`]), which the confluence theorem of
//!   the same docs makes decisive. A window violation is retried with a wider window (up
//!   to [`SizesConfig::max_radius`]), then searched for on the real ring
//!   ([`semcheck_checker::focused`]): found, it is a bug with a concrete counterexample;
//!   not found, the size is *not proved*, and the violation is reported as possibly
//!   spurious, never as a bug.
//!
//! The window method's conditions are checked on each size's compiled program, never
//! assumed: a one-axis (ring) mesh, no memory shared between devices, the default
//! hardware assumptions, and that nothing outside a window talks to its center (the
//! window radius covers the communication radius). A size that fails them is explored
//! exactly, whatever it costs, and the report says why.

use std::time::Instant;

use semcheck_checker::counterexample::{run_events, Namer};
use semcheck_checker::focused::focused_search;
use semcheck_checker::single_run::run_to_end;
use semcheck_checker::window::{explore_window, WindowVerdict};
use semcheck_checker::{explore, Budget, Config, Counterexample, Reduction, Stats, Verdict};
use semcheck_model::window::{check_conditions, ring_distance, Inapplicable, Window};
use semcheck_model::{Case, DeviceId, ModelError, Program};
use serde::Serialize;

/// Budgets and limits of a multi-size check.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SizesConfig {
    /// The budget of exact exploration at one size. The first size it does not decide,
    /// and every larger one, goes to the window method.
    pub exact: Budget,
    /// The budget of one window exploration.
    pub window: Budget,
    /// The largest window radius tried (a window violation at radius `K` is retried at
    /// `K + 1`, up to this).
    pub max_radius: usize,
    /// The budget of one focused search for a concrete counterexample.
    pub confirm: Budget,
    /// How many devices beyond the window the focused search may add on each side.
    pub confirm_extra: usize,
    /// The budget of exact exploration at a size the window method does not apply to.
    pub fallback: Budget,
}

impl Default for SizesConfig {
    fn default() -> SizesConfig {
        SizesConfig {
            exact: Budget { max_states: Some(2_000_000), max_seconds: Some(60.0), max_memory_bytes: Some(4 << 30) },
            window: Budget { max_states: Some(100_000_000), max_seconds: None, max_memory_bytes: Some(8 << 30) },
            max_radius: 2,
            confirm: Budget { max_states: Some(2_000_000), max_seconds: Some(60.0), max_memory_bytes: Some(4 << 30) },
            confirm_extra: 3,
            fallback: Budget { max_states: None, max_seconds: None, max_memory_bytes: Some(8 << 30) },
        }
    }
}

/// What was decided at one size.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum SizeVerdict {
    /// Every rule holds on every execution of the `N`-ring.
    Proved,
    /// A rule is broken on the real `N`-ring: here is the schedule.
    Violation {
        /// The counterexample (raw model events of the `N`-ring's program).
        counterexample: Counterexample,
    },
    /// Nothing decided: why.
    NotProved {
        /// In words (a possibly spurious window violation, a budget).
        reason: String,
    },
}

impl SizeVerdict {
    /// `proved`, `violation` or `not-proved`.
    pub fn name(&self) -> &'static str {
        match self {
            SizeVerdict::Proved => "proved",
            SizeVerdict::Violation { .. } => "violation",
            SizeVerdict::NotProved { .. } => "not-proved",
        }
    }
}

/// How one size was decided.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "method", rename_all = "kebab-case")]
pub enum Method {
    /// Exhaustive exploration of the whole ring.
    Exact {
        /// Why the window method was not used (`None`: exact exploration was cheap).
        fallback: Option<String>,
        /// The explorer's counters.
        stats: Stats,
    },
    /// Windows for the local rules, one run for the global rules.
    Window {
        /// The radius of the windows that decided (devices within it of the center are
        /// tracked).
        radius: usize,
        /// Devices per window.
        tracked: usize,
        /// The centers: one when the kernel is rotation-symmetric, every device otherwise.
        centers: usize,
        /// Window states and seconds, summed over centers and radii tried.
        window_stats: Stats,
        /// Radii whose windows reported a violation before this one (possibly spurious).
        escalated_from: Vec<usize>,
        /// The run of the whole ring: events, seconds (absent when the local rules did
        /// not hold).
        run_events: Option<u64>,
        /// Seconds of the run.
        run_seconds: Option<f64>,
        /// The focused search that confirmed a window violation: active devices and states.
        confirmed_by: Option<(usize, u64)>,
        /// The window violation that was not confirmed, in the kernel's words.
        window_violation: Option<Vec<String>>,
    },
}

/// One size's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeResult {
    /// The ring size.
    pub devices: usize,
    /// What was decided.
    #[serde(flatten)]
    pub verdict: SizeVerdict,
    /// How.
    #[serde(flatten)]
    pub method: Method,
    /// What was verified about the compiled program (for the window method).
    pub checked: Vec<String>,
    /// Wall-clock seconds for this size, compilation included.
    pub seconds: f64,
}

/// Whether rotation symmetry makes one window center enough, and why (not).
fn centers(program: &Program) -> (Vec<DeviceId>, String) {
    // TEMPORARY: rotation symmetry comes from model/src/ring.rs (branch `scale`), which has
    // not landed on main yet. Until then every device is a center, which needs no symmetry.
    let _ = program;
    (
        program.mesh.devices().collect(),
        "rotation symmetry not checked (ring detection not available yet): one window per device".into(),
    )
}

/// The largest ring distance between a device and one it signals or writes.
// TEMPORARY, like `centers`: `ring::Ring::radius` replaces it once ring.rs lands.
fn radius(program: &Program) -> usize {
    let n = program.num_devices();
    let mut r = 0;
    for (d, dp) in program.devices.iter().enumerate() {
        for op in &dp.ops {
            if let semcheck_model::program::Op::Signal { target, .. }
            | semcheck_model::program::Op::RemoteDma { target, .. } = *op
            {
                r = r.max(ring_distance(DeviceId(d as u16), target, n));
            }
        }
    }
    r
}

/// Decides one size of `case`; `exact_cheap` says whether exact exploration is still to
/// be tried, and is cleared when it stops deciding.
pub fn check_size(case: &Case, config: &SizesConfig, exact_cheap: &mut bool) -> Result<SizeResult, ModelError> {
    let start = Instant::now();
    let program = crate::program(case)?;
    let mut result = check_program(&program, config, exact_cheap);
    result.seconds = start.elapsed().as_secs_f64();
    Ok(result)
}

/// Decides one compiled ring program: exact exploration if `exact_cheap` (cleared when
/// it does not decide within [`SizesConfig::exact`]), else the window method, else
/// (when the window method does not apply) exact exploration without a budget.
pub fn check_program(program: &Program, config: &SizesConfig, exact_cheap: &mut bool) -> SizeResult {
    let start = Instant::now();
    let n = program.num_devices();
    let exact = |budget: Budget| {
        let outcome = explore(program, &Config { budget, ..Config::default() });
        let verdict = match outcome.verdict {
            Verdict::Proved => SizeVerdict::Proved,
            Verdict::Violation(c) => SizeVerdict::Violation { counterexample: c },
            Verdict::Incomplete { detail, .. } => SizeVerdict::NotProved { reason: detail },
        };
        (verdict, outcome.stats)
    };
    if *exact_cheap {
        let (verdict, stats) = exact(config.exact);
        if !matches!(verdict, SizeVerdict::NotProved { .. }) {
            let method = Method::Exact { fallback: None, stats };
            return SizeResult {
                devices: n,
                verdict,
                method,
                checked: Vec::new(),
                seconds: start.elapsed().as_secs_f64(),
            };
        }
        *exact_cheap = false;
    }
    let (verdict, method, checked) = match window_method(program, config) {
        Ok(decided) => decided,
        Err(why) => {
            let (verdict, stats) = exact(config.fallback);
            (verdict, Method::Exact { fallback: Some(why.to_string()), stats }, Vec::new())
        }
    };
    SizeResult { devices: n, verdict, method, checked, seconds: start.elapsed().as_secs_f64() }
}

fn add(total: &mut Stats, s: &Stats) {
    total.states += s.states;
    total.transitions += s.transitions;
    total.max_depth = total.max_depth.max(s.max_depth);
    total.seconds += s.seconds;
    total.memory_bytes = total.memory_bytes.max(s.memory_bytes);
}

/// The window method at one size, or why it does not apply.
fn window_method(program: &Program, config: &SizesConfig) -> Result<(SizeVerdict, Method, Vec<String>), Inapplicable> {
    check_conditions(program)?;
    let n = program.num_devices();
    let r = radius(program);
    let (centers, symmetry) = centers(program);
    let checked = vec![
        "ring mesh (one axis), no memory shared between devices, default hardware assumptions".to_string(),
        symmetry,
        format!("communication radius {r}"),
    ];
    let first = r.max(1);
    if first > config.max_radius {
        return Err(Inapplicable::new(format!(
            "the communication radius is {r}, more than the largest window radius {}",
            config.max_radius
        )));
    }
    let mut stats = Stats::default();
    let mut escalated_from = Vec::new();
    let mut last_violation: Option<(DeviceId, Vec<String>)> = None;
    for radius in first..=config.max_radius {
        let mut violation = None;
        let mut tracked = 0;
        for &center in &centers {
            let window = Window::new(program, center, radius)?;
            tracked = window.tracked().len();
            let outcome = explore_window(&window, Reduction::PartialOrder, &config.window);
            add(&mut stats, &outcome.stats);
            match outcome.verdict {
                WindowVerdict::Proved => {}
                WindowVerdict::Violation { names, violation: v, .. } => {
                    let mut lines = vec![v.to_string()];
                    lines.extend(names);
                    violation = Some((center, lines));
                    break;
                }
                WindowVerdict::Incomplete { detail, .. } => {
                    let method = window_result(radius, tracked, centers.len(), stats, escalated_from, None, None, None);
                    return Ok((SizeVerdict::NotProved { reason: detail }, method, checked));
                }
            }
        }
        match violation {
            None => {
                let run = run_to_end(program);
                let verdict = match run.verdict {
                    Verdict::Proved => SizeVerdict::Proved,
                    Verdict::Violation(c) => SizeVerdict::Violation { counterexample: c },
                    Verdict::Incomplete { detail, .. } => SizeVerdict::NotProved { reason: detail },
                };
                let method = window_result(
                    radius,
                    tracked,
                    centers.len(),
                    stats,
                    escalated_from,
                    Some((run.events, run.seconds)),
                    None,
                    None,
                );
                return Ok((verdict, method, checked));
            }
            Some(v) => {
                escalated_from.push(radius);
                last_violation = Some(v);
            }
        }
    }
    // Every radius tried reports a violation: look for it on the real ring.
    let (center, lines) = last_violation.expect("a violation at the last radius");
    let top = *escalated_from.last().expect("a radius was tried");
    let mut confirmed = None;
    for extra in 1..=config.confirm_extra {
        let q = top + extra;
        let active: Vec<DeviceId> = program.mesh.devices().filter(|&d| ring_distance(d, center, n) <= q).collect();
        let found = focused_search(program, &active, &config.confirm);
        add(&mut stats, &found.stats);
        if let Some(cex) = found.counterexample {
            if replays(program, &cex) {
                confirmed = Some((cex, active.len(), found.stats.states));
                break;
            }
        }
        if active.len() == n {
            break;
        }
    }
    let tracked = 2 * top + 1;
    Ok(match confirmed {
        Some((cex, active, states)) => {
            let method = window_result(
                top,
                tracked.min(n),
                centers.len(),
                stats,
                escalated_from,
                None,
                Some((active, states)),
                None,
            );
            (SizeVerdict::Violation { counterexample: cex }, method, checked)
        }
        None => {
            let reason = format!(
                "window violation at every radius up to {top}, possibly spurious (not found on the real ring with up to {} devices moving): {}",
                (2 * (top + config.confirm_extra) + 1).min(n),
                lines[0]
            );
            let method =
                window_result(top, tracked.min(n), centers.len(), stats, escalated_from, None, None, Some(lines));
            (SizeVerdict::NotProved { reason }, method, checked)
        }
    })
}

#[allow(clippy::too_many_arguments)]
fn window_result(
    radius: usize,
    tracked: usize,
    centers: usize,
    window_stats: Stats,
    escalated_from: Vec<usize>,
    run: Option<(u64, f64)>,
    confirmed_by: Option<(usize, u64)>,
    window_violation: Option<Vec<String>>,
) -> Method {
    Method::Window {
        radius,
        tracked,
        centers,
        window_stats,
        escalated_from,
        run_events: run.map(|r| r.0),
        run_seconds: run.map(|r| r.1),
        confirmed_by,
        window_violation,
    }
}

/// Whether a focused search's schedule breaks the same rule on the unmodified program.
fn replays(program: &Program, cex: &Counterexample) -> bool {
    let namer = Namer::new(program);
    run_events(&namer, &cex.schedule)
        .is_ok_and(|run| run.ending.violation().is_some_and(|v| v.rule == cex.violation.rule))
}

/// The results of every size of a range, in order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizesReport {
    /// One result per size.
    pub sizes: Vec<SizeResult>,
    /// The configuration.
    pub config: SizesConfig,
}

impl SizesReport {
    /// 0 when every size is proved, 1 when some size has a violation, else 3.
    pub fn exit_code(&self) -> i32 {
        if self.sizes.iter().any(|s| matches!(s.verdict, SizeVerdict::Violation { .. })) {
            1
        } else if self.sizes.iter().all(|s| s.verdict == SizeVerdict::Proved) {
            0
        } else {
            3
        }
    }
}

/// Checks `case` (its kernel, repeat and assumptions) at every size of `sizes`, calling
/// `each` with every result as it comes. `exact_cheap`: whether to try exact exploration
/// first (it is cleared at the first size exact exploration does not decide within
/// [`SizesConfig::exact`]).
pub fn check_sizes(
    case: &Case,
    sizes: &[usize],
    config: &SizesConfig,
    exact_cheap: &mut bool,
    mut each: impl FnMut(&SizeResult),
) -> Result<SizesReport, ModelError> {
    let mut out = Vec::with_capacity(sizes.len());
    for &n in sizes {
        let mut c = case.clone();
        c.devices = n;
        let result = check_size(&c, config, exact_cheap)?;
        each(&result);
        out.push(result);
    }
    Ok(SizesReport { sizes: out, config: *config })
}
