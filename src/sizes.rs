//! Checking a ring kernel for every ring size of a range (`check --sizes 2..256`).
//!
//! Each size `N` is decided by one of two methods:
//!
//! * **exact exploration** of the whole `N`-ring, while it is cheap (within
//!   [`SizesConfig::exact`]; once one size exceeds it, larger sizes are not tried);
//! * above that, the **window method** of [`semcheck_model::window`]: the local rules
//!   (race, outside-kernel, semaphore-leak) on windows of `2K+1` devices, one per class
//!   of identical windows (one in all for a rotation-symmetric kernel), the rest of the
//!   ring replaced by environment tokens; then, when they hold, the global rules
//!   (deadlock, wrong-result, the final barrier semaphore) from one run of the whole
//!   ring ([`semcheck_checker::single_run`]), which the confluence theorem of the same
//!   docs makes decisive. A window violation is retried with a wider window (up to
//!   [`SizesConfig::max_radius`]), then searched for on the real ring
//!   ([`semcheck_checker::focused`]): found, it is a bug with a concrete counterexample;
//!   not found, the size is *not proved*, and the violation is reported as possibly
//!   spurious, never as a bug.
//!
//! The window method's conditions are checked on each size's compiled program, never
//! assumed: a one-axis (ring) mesh, no memory shared between devices, the default
//! hardware assumptions, and that nothing outside a window talks to its center (the
//! window radius covers the communication radius). A size that fails them is decided by
//! exact exploration only, within [`SizesConfig::exact`]; beyond it the size is *not
//! proved*, and the report says why.

use std::time::Instant;

use semcheck_checker::focused::{focused_search, follow_window, Environment};
use semcheck_checker::single_run::run_to_end;
use semcheck_checker::window::{explore_window, WindowVerdict};
use semcheck_checker::{explore, Budget, Config, Counterexample, Reduction, Stats, Verdict};
use semcheck_model::window::{
    check_conditions, communication_radius, defaults_cover, ring_distance, window_classes, Inapplicable,
};
use semcheck_model::{Case, DeviceId, ModelError, Program, Semantics, StepOutcome};
use serde::Serialize;

/// Budgets and limits of a multi-size check.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SizesConfig {
    /// The budget of exact exploration at one size (small: the window method is sound at
    /// every size and cheaper per size once the ring is a few dozen devices; exact
    /// exploration is for the smallest sizes, where its counterexamples are the shortest).
    /// The first size it does not decide,
    /// and every larger one, goes to the window method (or, for a kernel outside the
    /// window method's conditions, is not proved).
    pub exact: Budget,
    /// The budget of one window exploration.
    pub window: Budget,
    /// The budget of a second, unreduced exploration of a window that reached a
    /// violation: the reduced graph of a nearly correct kernel is close to one path that
    /// meets the violation late, while the full graph, breadth-first, usually has a far
    /// shorter execution to it (the counterexample then shown).
    pub short_window: Budget,
    /// The largest window radius tried (a window violation at radius `K` is retried at
    /// `K + 1`, up to this).
    pub max_radius: usize,
    /// The budget of one focused search for a concrete counterexample.
    pub confirm: Budget,
    /// How many devices beyond the window the focused search may add on each side.
    pub confirm_extra: usize,
}

impl Default for SizesConfig {
    fn default() -> SizesConfig {
        SizesConfig {
            exact: Budget { max_states: Some(20_000), max_seconds: Some(10.0), max_memory_bytes: Some(4 << 30) },
            window: Budget { max_states: Some(100_000_000), max_seconds: None, max_memory_bytes: Some(8 << 30) },
            short_window: Budget { max_states: Some(200_000), max_seconds: Some(5.0), max_memory_bytes: Some(1 << 30) },
            max_radius: 2,
            confirm: Budget { max_states: Some(2_000_000), max_seconds: Some(60.0), max_memory_bytes: Some(4 << 30) },
            confirm_extra: 3,
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
        /// Why the window method does not apply, when exact exploration was the only
        /// method (`None`: exact exploration was cheap and decided).
        fallback: Option<String>,
        /// The explorer's counters.
        stats: Stats,
    },
    /// Windows for the local rules, one run for the global rules.
    Window(WindowMethod),
}

/// How the window method decided one size.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WindowMethod {
    /// The radius of the last windows explored (devices within it of the center are
    /// tracked).
    pub radius: usize,
    /// Devices per window.
    pub tracked: usize,
    /// The classes of identical windows (one explored per class): 1 when every device's
    /// window is the same up to renaming (rotation symmetry).
    pub classes: usize,
    /// Window states and seconds, summed over the classes and radii tried.
    pub window_stats: Stats,
    /// Radii whose windows reported a violation before this one (possibly spurious).
    pub escalated_from: Vec<usize>,
    /// The run of the whole ring: events (absent when the local rules did not hold).
    pub run_events: Option<u64>,
    /// Seconds of the run.
    pub run_seconds: Option<f64>,
    /// The focused search that confirmed a window violation.
    pub confirmed_by: Option<Confirmation>,
    /// The window violation, in the kernel's words, when it was not confirmed.
    pub window_violation: Option<Vec<String>>,
}

/// The search that found a window violation on the real ring.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Confirmation {
    /// How it was found.
    #[serde(flatten)]
    pub search: Search,
    /// Devices that interleave freely (the window's devices, when following the window).
    pub active: usize,
    /// States of the search (events, when following the window).
    pub states: u64,
}

/// A search for a window violation on the real ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "search", rename_all = "kebab-case")]
pub enum Search {
    /// The window's own violating execution, replayed with the real environment
    /// ([`semcheck_checker::focused::follow_window`]).
    FollowWindow,
    /// A focused search: every interleaving of the active devices, the others scheduled
    /// by `environment`.
    Focused {
        /// How the other devices were scheduled.
        environment: Environment,
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

/// Decides one compiled ring program: exact exploration if `exact_cheap` (cleared when
/// it does not decide within [`SizesConfig::exact`]), else the window method. A program
/// outside the window method's conditions that exact exploration does not decide within
/// its budget is *not proved* at that size, with both reasons.
pub fn check_program(program: &Program, config: &SizesConfig, exact_cheap: &mut bool) -> SizeResult {
    let start = Instant::now();
    if *exact_cheap {
        let outcome = explore(program, &Config { budget: config.exact, ..Config::default() });
        let verdict = match outcome.verdict {
            Verdict::Proved => SizeVerdict::Proved,
            Verdict::Violation(c) => SizeVerdict::Violation { counterexample: c },
            Verdict::Incomplete { detail, .. } => {
                *exact_cheap = false;
                let undecided = (format!("exact exploration {detail}"), outcome.stats);
                return decide_by_window(program, config, Some(undecided), start);
            }
        };
        let method = Method::Exact { fallback: None, stats: outcome.stats };
        let seconds = start.elapsed().as_secs_f64();
        return SizeResult { devices: program.num_devices(), verdict, method, checked: Vec::new(), seconds };
    }
    decide_by_window(program, config, None, start)
}

/// The window method at one size; `undecided` is why exact exploration did not decide it
/// (and its counts), if it was tried.
fn decide_by_window(
    program: &Program,
    config: &SizesConfig,
    undecided: Option<(String, Stats)>,
    start: Instant,
) -> SizeResult {
    let n = program.num_devices();
    let (verdict, method, checked) = match window_method(program, config) {
        Ok(decided) => decided,
        Err(why) => {
            let (detail, stats) = undecided.unwrap_or_else(|| {
                let detail = "exact exploration was not tried (it did not decide a smaller size within its budget)";
                (detail.to_string(), Stats::default())
            });
            let reason = format!("the window method does not apply ({why}); {detail}");
            (SizeVerdict::NotProved { reason }, Method::Exact { fallback: Some(why.to_string()), stats }, Vec::new())
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

/// The window method at one size, or why it does not apply. Under assumptions other than
/// the defaults that allow no execution the defaults do not (Theorem S of the window
/// docs), the method runs under the defaults: a proof carries over, a violation only if
/// its schedule replays under the assumptions asked for.
fn window_method(program: &Program, config: &SizesConfig) -> Result<(SizeVerdict, Method, Vec<String>), Inapplicable> {
    if program.semantics.is_default() {
        return window_method_on_defaults(program, config);
    }
    defaults_cover(program)?;
    let asked = program.semantics;
    let base = program.clone().with_semantics(Semantics::default()).map_err(|e| Inapplicable::new(e.to_string()))?;
    let (verdict, method, mut checked) = window_method_on_defaults(&base, config)?;
    checked.push(format!(
        "{asked} allows only executions the default assumptions allow (same checks, same final states): the window method runs under the defaults, and a proof there is one here"
    ));
    let verdict = match verdict {
        SizeVerdict::Violation { counterexample } if !replays(program, &counterexample) => SizeVerdict::NotProved {
            reason: format!(
                "a violation under the default assumptions ({}) whose schedule is not one under {asked}: the window method does not decide this size under {asked}",
                counterexample.violation
            ),
        },
        other => other,
    };
    Ok((verdict, method, checked))
}

/// The window method on a program under the default assumptions.
fn window_method_on_defaults(
    program: &Program,
    config: &SizesConfig,
) -> Result<(SizeVerdict, Method, Vec<String>), Inapplicable> {
    check_conditions(program)?;
    let n = program.num_devices();
    let r = communication_radius(program);
    let mut checked = vec![
        "ring mesh (one axis), no memory shared between devices, default hardware assumptions".to_string(),
        format!("communication radius {r}: no device signals or copies to one farther than {r} around the ring"),
    ];
    let first = r.max(1);
    if first > config.max_radius {
        return Err(Inapplicable::new(format!(
            "the communication radius is {r}, more than the largest window radius {}",
            config.max_radius
        )));
    }
    let mut how = WindowMethod::default();
    let mut last_violation: Option<(DeviceId, Vec<String>)> = None;
    for radius in first..=config.max_radius {
        let classes = window_classes(program, radius)?;
        how.radius = radius;
        how.tracked = classes[0].window.tracked().len();
        how.classes = classes.len();
        let symmetry = match classes.len() {
            1 => format!(
                "the windows of radius {radius} around every device are identical up to renaming (rotation symmetry of the windows): one explored per size"
            ),
            k => format!(
                "the windows of radius {radius} fall into {k} classes of identical windows at N = {n}: one explored per class"
            ),
        };
        if !checked.contains(&symmetry) {
            checked.push(symmetry);
        }
        let mut violation = None;
        for class in &classes {
            let outcome = explore_window(&class.window, Reduction::PartialOrder, &config.window);
            add(&mut how.window_stats, &outcome.stats);
            match outcome.verdict {
                WindowVerdict::Proved => {}
                WindowVerdict::Violation { names, violation: v, schedule } => {
                    // The window's own execution, on the real ring: found, it is a bug.
                    // A shorter one from the unreduced window graph, if it has one within
                    // its small budget, is tried first.
                    let short = explore_window(&class.window, Reduction::None, &config.short_window);
                    add(&mut how.window_stats, &short.stats);
                    let shorter = match short.verdict {
                        WindowVerdict::Violation { schedule: s, .. } if s.len() < schedule.len() => Some(s),
                        _ => None,
                    };
                    for schedule in shorter.iter().chain([&schedule]) {
                        let followed = follow_window(&class.window, schedule);
                        add(&mut how.window_stats, &followed.stats);
                        if let Some(cex) = followed.counterexample.filter(|cex| replays(program, cex)) {
                            how.escalated_from.push(radius);
                            how.confirmed_by = Some(Confirmation {
                                search: Search::FollowWindow,
                                active: how.tracked,
                                states: followed.stats.transitions,
                            });
                            return Ok((SizeVerdict::Violation { counterexample: cex }, Method::Window(how), checked));
                        }
                    }
                    let mut lines = vec![v.to_string()];
                    lines.extend(names);
                    violation = Some((class.window.center(), lines));
                    break;
                }
                WindowVerdict::Incomplete { detail, .. } => {
                    return Ok((SizeVerdict::NotProved { reason: detail }, Method::Window(how), checked));
                }
            }
        }
        let Some(v) = violation else {
            // The local rules hold everywhere: one run decides the global ones.
            let run = run_to_end(program);
            how.run_events = Some(run.events);
            how.run_seconds = Some(run.seconds);
            let verdict = match run.verdict {
                Verdict::Proved => SizeVerdict::Proved,
                Verdict::Violation(c) => SizeVerdict::Violation { counterexample: c },
                Verdict::Incomplete { detail, .. } => SizeVerdict::NotProved { reason: detail },
            };
            return Ok((verdict, Method::Window(how), checked));
        };
        how.escalated_from.push(radius);
        last_violation = Some(v);
    }
    // Every radius tried reports a violation: look for it on the real ring.
    let (center, lines) = last_violation.expect("a violation at the last radius");
    let top = how.radius;
    let mut widest = 0;
    for q in 1..=top + config.confirm_extra {
        let active: Vec<DeviceId> = program.mesh.devices().filter(|&d| ring_distance(d, center, n) <= q).collect();
        widest = active.len();
        // A small active set with the rest following lazily, or running ahead, finds
        // violations that need a slow device among fast ones; the rest held back (only
        // beyond the window, so that the window's devices can move) finds those that
        // need a slow environment.
        let environments: &[Environment] = if q > top {
            &[Environment::Lazy, Environment::Eager, Environment::Held]
        } else {
            &[Environment::Lazy, Environment::Eager]
        };
        for &environment in environments {
            let found = focused_search(program, &active, environment, &config.confirm);
            add(&mut how.window_stats, &found.stats);
            if let Some(cex) = found.counterexample.filter(|cex| replays(program, cex)) {
                how.confirmed_by = Some(Confirmation {
                    search: Search::Focused { environment },
                    active: active.len(),
                    states: found.stats.states,
                });
                return Ok((SizeVerdict::Violation { counterexample: cex }, Method::Window(how), checked));
            }
        }
        if active.len() == n {
            break;
        }
    }
    let reason = format!(
        "window violation at every radius up to {top}, possibly spurious (not found on the real ring by searches in which up to {widest} devices interleave, the others held back or running ahead): {}",
        lines[0]
    );
    how.window_violation = Some(lines);
    Ok((SizeVerdict::NotProved { reason }, Method::Window(how), checked))
}

/// Whether a focused search's schedule breaks the same rule on the unmodified program:
/// every event enabled in turn, the last one (and only it) breaking the rule. (A plain
/// replay: naming a schedule of a big ring keeps far more than its states.)
fn replays(program: &Program, cex: &Counterexample) -> bool {
    let mut values = program.values.clone();
    let mut state = program.initial_state();
    let last = cex.schedule.len().saturating_sub(1);
    for (i, &event) in cex.schedule.iter().enumerate() {
        if !program.is_enabled(&state, event) {
            return false;
        }
        match program.advance(&mut state, event, &mut values) {
            StepOutcome::Next if i < last => {}
            StepOutcome::Next => return false,
            StepOutcome::Violation(v) => return i == last && v.rule == cex.violation.rule,
        }
    }
    false
}

/// The results of every size of a range, in order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizesReport {
    /// One result per size.
    pub sizes: Vec<SizeResult>,
    /// The configuration.
    pub config: SizesConfig,
    /// Wall-clock seconds of the whole range (less than the sum of the sizes' seconds:
    /// sizes are compiled while others are checked).
    pub seconds: f64,
    /// The error that ended the range at a size, if one did (a kernel that cannot be
    /// compiled from some size on): `sizes` holds the sizes decided before it. Not part
    /// of the JSON document (a command reports the error as its error).
    #[serde(skip)]
    pub error: Option<SizeError>,
}

/// An error that ended a range of sizes.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeError {
    /// The size at which it happened.
    pub devices: usize,
    /// The error.
    pub error: ModelError,
}

impl SizesReport {
    /// 0 when every size is proved, 1 when some size has a violation, else 3 (an error
    /// that ended the range is the caller's to report: see [`SizesReport::error`]).
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
/// [`SizesConfig::exact`]). A size whose program cannot be built (for a kernel file, a
/// device id off the mesh from some size on) ends the range: the report keeps the sizes
/// decided before it and the error ([`SizesReport::error`]).
///
/// The next sizes are compiled (for a kernel file: traced by JAX) on other threads, one
/// per core, each a size ahead, while this one is checked; a size's `seconds` count its
/// compiling and its checking.
pub fn check_sizes(
    case: &Case,
    sizes: &[usize],
    config: &SizesConfig,
    exact_cheap: &mut bool,
    mut each: impl FnMut(&SizeResult),
) -> SizesReport {
    let started = Instant::now();
    let mut out = Vec::with_capacity(sizes.len());
    let mut error = None;
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(sizes.len()).max(1);
    std::thread::scope(|scope| {
        // Compiler `w` compiles sizes `w`, `w + workers`, ...; each waits with at most one
        // compiled size, and they are taken in order.
        let compiled: Vec<_> = (0..workers)
            .map(|w| {
                let (send, receive) = std::sync::mpsc::sync_channel(1);
                scope.spawn(move || {
                    for &n in sizes.iter().skip(w).step_by(workers) {
                        let start = Instant::now();
                        let program = crate::program(&Case { devices: n, ..case.clone() });
                        let failed = program.is_err();
                        if send.send((program, start.elapsed().as_secs_f64())).is_err() || failed {
                            return;
                        }
                    }
                });
                receive
            })
            .collect();
        for (i, &n) in sizes.iter().enumerate() {
            let (program, compile_seconds) = compiled[i % workers].recv().expect("a compiler sends every size in turn");
            let program = match program {
                Ok(p) => p,
                Err(e) => {
                    error = Some(SizeError { devices: n, error: e });
                    break;
                }
            };
            let start = Instant::now();
            let mut result = check_program(&program, config, exact_cheap);
            result.seconds = compile_seconds + start.elapsed().as_secs_f64();
            each(&result);
            out.push(result);
        }
        // Dropping the receivers ends the compilers at their next size.
        drop(compiled);
    });
    SizesReport { sizes: out, config: *config, seconds: started.elapsed().as_secs_f64(), error }
}
