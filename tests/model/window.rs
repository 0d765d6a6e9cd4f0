//! The window/confluence method (`check --sizes`) against exact exploration.
//!
//! * every ring catalogue case (protocol, mutant, its repeat count) at every size up to
//!   10 (exact exploration, partial-order reduced, finishes on each), and 100+ random single-edit mutants of the seed
//!   kernels (`semcheck_model::mutate`) at N = 5, 6: the method never proves what exact
//!   exploration breaks, never reports a violation exact exploration does not have, and
//!   there is no false alarm (a size the method cannot prove although exact exploration
//!   does);
//! * confluence, empirically: every exact proof has exactly one final state, and the one
//!   run of the whole ring agrees with it;
//! * the window's simulation lemma, directly: random executions of the real ring,
//!   projected onto a window (environment tokens fired lazily), replay in the window,
//!   and the window reports a local violation at its center exactly when the real step
//!   breaks one there;
//! * the window's reduction against the full window graph, and classes of identical
//!   windows on a kernel that special-cases a device;
//!
//! The command line's `check --sizes` is tested in `tests/cli/sizes.rs`.
//!
//! The slow sweep at the end (ignored; run by hand) takes every case to N = 16:
//! `cargo test --release --test model window::slow -- --ignored --nocapture`.

use semcheck::checker::single_run::run_to_end;
use semcheck::checker::window::{explore_window, WindowVerdict};
use semcheck::checker::{explore, Budget, Config, Reduction, Verdict};
use semcheck::model::ir::SemKind;
use semcheck::model::mutate::{mutations, Operator};
use semcheck::model::program::Op;
use semcheck::model::window::{ring_distance, window_classes, Window, WindowEvent};
use semcheck::model::{compile, DeviceId, Event, Program, Rule, StepOutcome, Violation};
use semcheck::protocols::{catalogue, find, MeshKind, Mutant};
use semcheck::sizes::{check_program, SizeVerdict, SizesConfig};

/// Budgets small enough for CI: a case that needs more is skipped, not decided.
fn config() -> SizesConfig {
    let b = |states| Budget { max_states: Some(states), max_seconds: None, max_memory_bytes: None };
    SizesConfig { exact: b(0), window: b(3_000_000), confirm: b(1_000_000), ..SizesConfig::default() }
}

fn exact(program: &Program, max_states: u64) -> Option<semcheck::checker::Outcome> {
    let budget = Budget { max_states: Some(max_states), ..Budget::default() };
    let outcome = explore(program, &Config { budget, ..Config::default() });
    (!matches!(outcome.verdict, Verdict::Incomplete { .. })).then_some(outcome)
}

/// How the method's verdict compares with exact exploration's.
#[derive(Debug, Default)]
struct Tally {
    agree_proved: usize,
    agree_violation: usize,
    /// Exact proves, the method says "not proved" (possibly spurious window violation).
    false_alarms: Vec<String>,
    /// Exact breaks a rule, the method reports an unconfirmed window violation.
    unconfirmed: Vec<String>,
    skipped: usize,
}

impl Tally {
    fn compare(&mut self, label: &str, program: &Program) {
        self.compare_with(label, program, 2, 1_500_000)
    }

    /// Compares with windows of radius up to `max_radius`, skipping the case when exact
    /// exploration needs more than `max_states`.
    fn compare_with(&mut self, label: &str, program: &Program, max_radius: usize, max_states: u64) {
        let Some(exact) = exact(program, max_states) else {
            self.skipped += 1;
            return;
        };
        let method = check_program(program, &SizesConfig { max_radius, ..config() }, &mut false);
        match (&exact.verdict, &method.verdict) {
            (Verdict::Proved, SizeVerdict::Proved) => self.agree_proved += 1,
            (Verdict::Violation(_), SizeVerdict::Violation { counterexample }) => {
                // A violation the method reports is real: it replays on the real ring.
                let namer = semcheck::checker::counterexample::Namer::new(program);
                let run = semcheck::checker::counterexample::run_events(&namer, &counterexample.schedule)
                    .unwrap_or_else(|e| panic!("{label}: the method's counterexample does not replay: {e:?}"));
                assert!(run.ending.violation().is_some(), "{label}: the method's counterexample breaks no rule");
                self.agree_violation += 1;
            }
            (Verdict::Violation(c), SizeVerdict::Proved) => {
                panic!("{label}: UNSOUND: the method proves it, exact exploration finds {}", c.violation)
            }
            (Verdict::Proved, SizeVerdict::Violation { counterexample }) => {
                panic!("{label}: the method reports {} but exact exploration proves it", counterexample.violation)
            }
            (Verdict::Proved, SizeVerdict::NotProved { reason }) => {
                self.false_alarms.push(format!("{label}: {reason}"))
            }
            (Verdict::Violation(c), SizeVerdict::NotProved { reason }) => {
                self.unconfirmed.push(format!("{label}: exact {}; method: {reason}", c.violation.rule))
            }
            (_, _) => self.skipped += 1,
        }
        if let Verdict::Proved = exact.verdict {
            // Confluence, empirically: one final state, and the one run agrees.
            assert_eq!(exact.stats.finished_states, 1, "{label}: an exact proof with several final states");
            assert_eq!(run_to_end(program).verdict, Verdict::Proved, "{label}: the one run disagrees with exact");
        }
    }
}

/// The ring protocols of one kernel: a window refuses a program of several kernels
/// (`split_ppermute`; see `a_window_refuses_a_program_of_several_kernels`).
fn ring_protocols() -> impl Iterator<Item = &'static semcheck::protocols::Protocol> {
    catalogue().iter().filter(|p| p.mesh_kind == MeshKind::Ring && !p.kernel(2, None).is_ok_and(|k| k.is_program()))
}

#[test]
fn a_window_refuses_a_program_of_several_kernels() {
    let program = semcheck::catalogue_program("split_ppermute", None, 4, 1).unwrap();
    let Err(e) = Window::new(&program, DeviceId(0), 1) else { panic!("a window of a program of several kernels") };
    assert!(format!("{e:?}").contains("program of several kernels"), "{e:?}");
}

/// Every ring catalogue case (protocol, mutant, its repeat count) at N = 2..=`top`,
/// with windows of radius up to 2 and, separately, of radius 1 only. Exact exploration
/// (partial-order reduced) finishes on every one of them; the method must agree with it,
/// and with radius up to 2 there must be no false alarm. The false alarms of radius 1
/// alone are printed (docs/sizes.md).
fn sweep_catalogue(top: usize) {
    for max_radius in [2, 1] {
        let mut tally = Tally::default();
        for p in ring_protocols() {
            let variants: Vec<Option<&Mutant>> = std::iter::once(None).chain(p.mutants.iter().map(Some)).collect();
            for m in variants {
                let repeat = semcheck::protocols::Protocol::default_repeat(m);
                for n in 2..=top {
                    let program = p.program(n, m, repeat).unwrap();
                    let label = format!("{}/{} N={n} repeat {repeat}", p.name, m.map_or("-", |m| m.name));
                    tally.compare_with(&label, &program, max_radius, 8_000_000);
                }
            }
        }
        println!("max radius {max_radius}: {tally:#?}");
        assert_eq!(tally.skipped, 0, "{tally:?}");
        assert!(tally.agree_proved > 20 && tally.agree_violation > 20, "{tally:?}");
        assert_eq!(tally.unconfirmed, Vec::<String>::new(), "unconfirmed violations on the catalogue");
        if max_radius == 2 {
            assert_eq!(tally.false_alarms, Vec::<String>::new(), "false alarms on the catalogue");
        }
    }
}

/// Every ring catalogue case up to N = 10 ([`sweep_catalogue`]); the slow sweep goes to 16.
#[test]
fn catalogue_cases_agree_with_exact_exploration() {
    sweep_catalogue(10);
}

// --- random single-edit mutants --------------------------------------------------------

/// A small deterministic generator (xorshift), so the sample is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Random single-edit mutants (every operator of `semcheck_model::mutate`) of the seed
/// ring kernels at N = 4..7 (sizes chosen so that exact exploration stays around 100
/// thousand states), each compared with exact exploration.
#[test]
fn random_single_edit_mutants_agree_with_exact_exploration() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut tally = Tally::default();
    let mut compared = 0;
    // (protocol, repeat, N, mutants drawn)
    let plan = [
        ("ppermute", 1, 6, 8),
        ("ppermute", 1, 7, 8),
        ("all_gather", 1, 6, 10),
        ("all_gather", 1, 7, 10),
        ("guarded_shift", 2, 6, 10),
        ("guarded_shift", 2, 7, 10),
        ("psum", 1, 5, 10),
        ("psum", 1, 6, 10),
        ("psum", 2, 5, 16),
        ("psum_scatter", 1, 4, 14),
        ("psum_scatter", 1, 5, 4),
    ];
    for (name, repeat, n, draws) in plan {
        let p = find(name).unwrap();
        let kernel = p.kernel(n, None).unwrap();
        let mut mutants = mutations(&kernel, &Operator::ALL);
        for _ in 0..draws {
            if mutants.is_empty() {
                break;
            }
            let m = mutants.swap_remove(rng.below(mutants.len()));
            let Ok(program) = compile(&m.kernel, &p.mesh(n).unwrap(), &p.spec(n), repeat) else { continue };
            compared += 1;
            tally.compare_with(&format!("{name} repeat {repeat} N={n} {}", m.edit), &program, 2, 250_000);
        }
    }
    println!("{compared} mutants: {tally:#?}");
    assert!(compared >= 100, "only {compared} mutants compiled");
    assert!(tally.skipped * 10 < compared, "too many skipped: {tally:?}");
    assert!(tally.agree_violation * 3 > compared, "too few mutants break a rule to mean anything: {tally:?}");
    // Every false alarm would be listed here, with the reason the window cannot rule it out.
    assert_eq!(tally.false_alarms, Vec::<String>::new(), "false alarms on mutants");
    assert_eq!(tally.unconfirmed, Vec::<String>::new(), "unconfirmed violations on mutants");
}

// --- the simulation lemma --------------------------------------------------------------

/// The location of a local violation: the device whose cell, semaphore or lifecycle it is
/// about; `None` for a global rule.
fn location(v: &Violation) -> Option<DeviceId> {
    match v.rule {
        Rule::OutsideKernel => v.devices.get(1).copied(),
        Rule::SemaphoreLeak if v.message.contains("after the last invocation") => None,
        Rule::SemaphoreLeak => v.devices.first().copied(),
        Rule::Race => {
            let rest = v.message.strip_prefix("race on d")?;
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok().map(DeviceId)
        }
        _ => None,
    }
}

/// A random execution of the real ring, up to its first violation (or its end).
fn random_run(program: &Program, rng: &mut Rng) -> (Vec<Event>, Option<Violation>) {
    let mut values = program.values.clone();
    let mut state = program.initial_state();
    let (mut next, mut enabled, mut events) = (Vec::new(), Vec::new(), Vec::new());
    loop {
        enabled.clear();
        program.enabled(&state, &mut enabled);
        if enabled.is_empty() {
            return (events, None);
        }
        let e = enabled[rng.below(enabled.len())];
        events.push(e);
        match program.step(&state, e, &mut values, &mut next) {
            StepOutcome::Next => std::mem::swap(&mut state, &mut next),
            StepOutcome::Violation(v) => return (events, Some(v)),
        }
    }
}

/// Replays a real execution in a window: tracked devices' events as they are, the
/// untracked devices' increments of tracked semaphores as pending tokens, fired (lazily)
/// just before the wait that needs them. Returns the window's violation at the last
/// event, if any; panics if a projected event is not enabled in the window or the window
/// breaks a rule before the real execution does.
fn project(program: &Program, window: &Window<'_>, events: &[Event]) -> Option<Violation> {
    let mut real = program.initial_state();
    let mut values = program.values.clone();
    let mut w = window.initial_state();
    let (mut rnext, mut wnext) = (Vec::new(), Vec::new());
    // Pending increments: (target, sem, inc, invocation tag).
    let mut pending: Vec<(DeviceId, semcheck::model::program::SemSlot, u32, Option<u32>)> = Vec::new();
    let tracked = |d: DeviceId| window.is_tracked(d);
    let tag = |sem, inv| (program.sem_kind(sem) != SemKind::Barrier).then_some(inv);
    let mut result = None;
    for (i, &e) in events.iter().enumerate() {
        let last = i + 1 == events.len();
        let mut projected = Vec::new();
        match e {
            Event::Step(d) if tracked(d) => {
                let pc = program.pc(&real, d);
                match program.devices[d.index()].ops[pc as usize] {
                    Op::Wait { sem, amount } => {
                        while window.sem_value(&w, sem) < amount {
                            let j = pending
                                .iter()
                                .position(|p| p.0 == d && p.1 == sem)
                                .unwrap_or_else(|| panic!("no pending token for the wait at event {i}"));
                            let (t, s, inc, inv) = pending.remove(j);
                            let class = window
                                .tokens()
                                .iter()
                                .position(|k| k.target == t && k.sem == s && k.inc == inc && k.invocation == inv)
                                .expect("a token class for every untracked increment");
                            let ev = WindowEvent::Token(class as u32);
                            assert!(window.is_enabled(&w, ev), "token not enabled at event {i}");
                            assert!(window.step(&w, ev, &mut wnext).is_none());
                            std::mem::swap(&mut w, &mut wnext);
                        }
                    }
                    Op::Enter => {
                        pending.retain(|p| p.0 != d || program.sem_kind(p.1) == SemKind::Barrier);
                    }
                    _ => {}
                }
                projected.push(WindowEvent::Step(d));
            }
            Event::Step(u) => {
                let pc = program.pc(&real, u);
                if let Op::Signal { target, sem, inc } = program.devices[u.index()].ops[pc as usize] {
                    if tracked(target) {
                        pending.push((target, sem, inc, tag(sem, program.invocation_of(u, pc))));
                    }
                }
            }
            Event::Sent(k) if tracked(k.issuer) => projected.push(WindowEvent::Sent(k)),
            Event::Done(k) if tracked(k.issuer) => projected.push(WindowEvent::Done(k)),
            Event::Received(k) => {
                let Op::RemoteDma { target, recv_sem, bytes, .. } = program.dma_op(k) else { unreachable!() };
                if tracked(k.issuer) && tracked(target) {
                    projected.push(WindowEvent::Received(k));
                } else if tracked(target) {
                    pending.push((target, recv_sem, bytes, Some(program.invocation_of(k.issuer, k.pc))));
                }
            }
            _ => {}
        }
        for ev in projected {
            assert!(window.is_enabled(&w, ev), "projected event {i} ({ev}) is not enabled in the window");
            if let Some(v) = window.step(&w, ev, &mut wnext) {
                assert!(last, "the window breaks a rule at event {i} before the real ring does: {v}");
                result = Some(v);
            }
            std::mem::swap(&mut w, &mut wnext);
        }
        if !last {
            assert_eq!(program.step(&real, e, &mut values, &mut rnext), StepOutcome::Next);
            std::mem::swap(&mut real, &mut rnext);
        }
    }
    result
}

#[test]
fn real_executions_replay_in_every_window() {
    let mut rng = Rng(0x0bad_cafe_1234_5678);
    let mut runs = 0;
    let mut caught = 0;
    for p in ring_protocols() {
        let variants: Vec<Option<&Mutant>> = std::iter::once(None).chain(p.mutants.iter().map(Some)).collect();
        for m in variants {
            let repeat = semcheck::protocols::Protocol::default_repeat(m);
            for n in [5, 7] {
                let program = p.program(n, m, repeat).unwrap();
                for _ in 0..40 {
                    let (events, violation) = random_run(&program, &mut rng);
                    runs += 1;
                    for radius in [1, 2] {
                        for center in program.mesh.devices() {
                            let window = Window::new(&program, center, radius).unwrap();
                            let found = project(&program, &window, &events);
                            let at_center = violation.as_ref().and_then(location) == Some(center);
                            if at_center {
                                assert!(
                                    found.is_some(),
                                    "{} N={n}: the window around {center} (radius {radius}) misses {}",
                                    p.name,
                                    violation.as_ref().unwrap()
                                );
                                caught += 1;
                            }
                            if found.is_some() {
                                assert!(violation.is_some(), "the window breaks a rule the real run does not");
                            }
                        }
                    }
                }
            }
        }
    }
    println!("{runs} random runs, {caught} local violations reproduced at the center");
    assert!(caught > 20, "too few violations to mean anything: {caught}");
}

// --- the window's reduction ------------------------------------------------------------

#[test]
fn window_reduction_agrees_with_the_full_window() {
    let budget = Budget { max_states: Some(50_000), ..Budget::default() };
    let mut compared = 0;
    for p in ring_protocols() {
        let variants: Vec<Option<&Mutant>> = std::iter::once(None).chain(p.mutants.iter().map(Some)).collect();
        for m in variants {
            let repeat = semcheck::protocols::Protocol::default_repeat(m);
            for n in [4, 6] {
                let program = p.program(n, m, repeat).unwrap();
                for radius in [1, 2] {
                    let window = Window::new(&program, DeviceId(0), radius).unwrap();
                    let full = explore_window(&window, Reduction::None, &budget);
                    if matches!(full.verdict, WindowVerdict::Incomplete { .. }) {
                        continue;
                    }
                    let reduced = explore_window(&window, Reduction::PartialOrder, &budget);
                    let kind = |v: &WindowVerdict| match v {
                        WindowVerdict::Proved => "proved",
                        WindowVerdict::Violation { .. } => "violation",
                        WindowVerdict::Incomplete { .. } => "incomplete",
                    };
                    assert_eq!(
                        kind(&full.verdict),
                        kind(&reduced.verdict),
                        "{}/{:?} N={n} radius {radius}",
                        p.name,
                        m.map(|m| m.name)
                    );
                    assert!(reduced.stats.states <= full.stats.states);
                    compared += 1;
                }
            }
        }
    }
    println!("{compared} windows compared");
    assert!(compared >= 25, "{compared}");
}

// --- confirming a window violation on the real ring ------------------------------------

/// Each way of looking for a window violation on the real ring finds a real one (the
/// counterexample replays on the unmodified program): following the window's own
/// execution, and focused searches with the environment lazy, eager or held back.
#[test]
fn window_violations_are_found_on_the_real_ring() {
    use semcheck::checker::focused::{focused_search, follow_window, Environment};
    let replays = |program: &Program, cex: &semcheck::checker::Counterexample| {
        let namer = semcheck::checker::counterexample::Namer::new(program);
        let run = semcheck::checker::counterexample::run_events(&namer, &cex.schedule).unwrap();
        run.ending.violation().is_some_and(|v| v.rule == cex.violation.rule)
    };
    let budget = Budget { max_states: Some(200_000), ..Budget::default() };
    let n = 9;
    let cases = [
        ("all_gather", "shared-recv-sem", 1, Environment::Lazy, 1),
        ("psum_scatter", "no-final-drain", 1, Environment::Eager, 1),
        ("guarded_shift", "single-barrier", 2, Environment::Held, 3),
    ];
    for (name, mutant, repeat, environment, q) in cases {
        let p = find(name).unwrap();
        let program = p.program(n, p.variant(Some(mutant)).unwrap(), repeat).unwrap();
        let window = Window::new(&program, DeviceId(0), 1).unwrap();
        let WindowVerdict::Violation { schedule, .. } =
            explore_window(&window, Reduction::PartialOrder, &budget).verdict
        else {
            panic!("{name}/{mutant}: the window should report a violation")
        };
        let followed = follow_window(&window, &schedule).counterexample.expect("following the window finds it");
        assert!(replays(&program, &followed), "{name}/{mutant}: {}", followed.violation);
        let active: Vec<DeviceId> = program.mesh.devices().filter(|&d| ring_distance(d, DeviceId(0), n) <= q).collect();
        let found = focused_search(&program, &active, environment, &budget);
        let cex = found.counterexample.unwrap_or_else(|| panic!("{name}/{mutant}: {environment:?} finds nothing"));
        assert!(replays(&program, &cex), "{name}/{mutant} {environment:?}: {}", cex.violation);
    }
}

// --- classes of identical windows -----------------------------------------------------

/// A right shift in which d0 alone also clears a scratch buffer, and (when `d0_waits` is
/// false) alone does not wait for its copy: the windows that contain d0 differ from the
/// others.
fn shift_with_special_d0(n: usize, d0_waits: bool) -> Program {
    use semcheck::model::dsl::{trace, zeros_like};
    use semcheck::model::ir::MemorySpace;
    use semcheck::model::{Atom, Expectation, Expected, Mesh, Notation, Spec};
    let kernel = trace("special_d0", |k| {
        let x_ref = k.input("x_ref", MemorySpace::Vmem, &[]);
        let y_ref = k.output("y_ref", MemorySpace::Vmem, &[]);
        let scratch = k.scratch("scratch", MemorySpace::Vmem, &[]);
        let send_sem = k.dma_semaphore("send_sem");
        let recv_sem = k.dma_semaphore("recv_sem");
        let me = k.axis_index("x");
        let dma = k.make_async_remote_copy(&x_ref, &y_ref, &send_sem, &recv_sem, (me.clone() + 1) % n);
        dma.start();
        k.when(me.clone().equals(0), |_| scratch.assign(zeros_like(&scratch)));
        if d0_waits {
            dma.wait();
        } else {
            k.when(me.not_equals(0), |_| dma.wait());
        }
    })
    .unwrap();
    let outputs = (0..n)
        .map(|d| Expectation {
            device: DeviceId(d as u16),
            buffer: "y_ref".to_string(),
            index: vec![],
            value: Expected::Sum(vec![Atom::first_input(((d + n - 1) % n) as u16, 0, 0)]),
        })
        .collect();
    let spec = Spec { notation: Notation::Plain, outputs };
    compile(&kernel, &Mesh::ring(n).unwrap(), &spec, 1).unwrap()
}

/// A kernel that special-cases d0 has a few classes of windows (those containing d0, and
/// the rest), so a bug only d0 has is still found, and the correct kernel is proved.
#[test]
fn windows_that_contain_a_special_device_are_classes_of_their_own() {
    let n = 9;
    for radius in [1, 2] {
        let program = shift_with_special_d0(n, true);
        let classes = window_classes(&program, radius).unwrap();
        assert_eq!(
            classes.len(),
            2 * radius + 2,
            "radius {radius}: {:?}",
            classes.iter().map(|c| &c.members).collect::<Vec<_>>()
        );
        let generic = classes.iter().find(|c| c.members.len() > 1).expect("a class of the windows without d0");
        assert_eq!(generic.members.len(), n - (2 * radius + 1));
        assert!(!generic.members.iter().any(|&d| ring_distance(d, DeviceId(0), n) <= radius));
    }
    let mut tally = Tally::default();
    tally.compare("special d0, correct", &shift_with_special_d0(n, true));
    tally.compare("special d0, d0 does not wait", &shift_with_special_d0(n, false));
    assert_eq!((tally.agree_proved, tally.agree_violation), (1, 1), "{tally:?}");
    // Catalogue kernels are rotation-symmetric: one class.
    for p in ring_protocols() {
        let program = p.program(9, None, 1).unwrap();
        assert_eq!(window_classes(&program, 1).unwrap().len(), 1, "{}", p.name);
    }
}

// --- the lock-step run is not a maximal run --------------------------------------------

/// Device 0 waits at grid index 0 for a signal device 1 sends at grid index 1: correct
/// (exact exploration proves it), but stuck in lock step, where no device starts index 1
/// before every device has finished index 0. Theorem C therefore uses a maximal run, not
/// the lock-step one.
#[test]
fn the_lock_step_run_is_not_a_maximal_run() {
    use semcheck::checker::counterexample::{lockstep, LockstepError};
    use semcheck::model::dsl::trace;
    use semcheck::model::{Mesh, Notation, Spec};
    let kernel = trace("later_signal", |k| {
        k.grid(&[2]);
        let a = k.regular_semaphore("a");
        let own = k.regular_semaphore("own");
        let step = k.program_id(0);
        // Every device has operations at every grid index.
        k.semaphore_signal(&own, 1, None);
        k.semaphore_wait(&own, 1);
        let me = k.axis_index("x");
        k.when(step.clone().equals(0).and(me.clone().equals(0)), |k| k.semaphore_wait(&a, 1));
        k.when(step.equals(1).and(me.equals(1)), |k| k.semaphore_signal(&a, 1, 0i64));
    })
    .unwrap();
    let spec = Spec { notation: Notation::Plain, outputs: vec![] };
    let program = compile(&kernel, &Mesh::ring(2).unwrap(), &spec, 1).unwrap();
    assert_eq!(explore(&program, &Config::default()).verdict, Verdict::Proved);
    assert!(matches!(lockstep(&program), Err(LockstepError::Stuck { .. })), "lock step should be stuck");
    assert_eq!(run_to_end(&program).verdict, Verdict::Proved);
}

// --- the slow sweep (run by hand: `cargo test --test model window::slow -- --ignored --nocapture`)

/// [`sweep_catalogue`] up to N = 16.
#[test]
#[ignore = "slow: a minute or more; the CI-sized version is catalogue_cases_agree_with_exact_exploration"]
fn slow_sweep_catalogue_to_16() {
    sweep_catalogue(16);
}
