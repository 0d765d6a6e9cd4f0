//! One small kernel per rule of the model (`semcheck_model` crate docs), each checked for the rule and for a message that
//! names what broke.

use semcheck::checker::{explore, Config, Verdict};
use semcheck::model::dsl::{trace, KernelBuilder};
use semcheck::model::ir::MemorySpace;
use semcheck::model::{compile, Atom, DeviceId, Expectation, Expected, Mesh, Notation, Rule, Spec};

fn check(n: usize, spec: Spec, body: impl FnOnce(&KernelBuilder)) -> Verdict {
    let kernel = trace("k", body).unwrap();
    let program = compile(&kernel, &Mesh::ring(n).unwrap(), &spec, 1).unwrap();
    explore(&program, &Config::default()).verdict
}

fn no_spec() -> Spec {
    Spec { notation: Notation::Plain, outputs: vec![] }
}

/// Every device's `o` must hold its own first input, once.
fn own_input_in_o() -> Spec {
    let outputs = (0..2)
        .map(|d| Expectation {
            device: DeviceId(d),
            buffer: "o".into(),
            index: vec![],
            value: Expected::Sum(vec![Atom::first_input(d, 0, 0)]),
        })
        .collect();
    Spec { notation: Notation::Plain, outputs }
}

fn violation(v: Verdict) -> (Rule, String) {
    match v {
        Verdict::Violation(c) => (c.violation.rule, c.violation.message),
        other => panic!("expected a violation, got {other:?}"),
    }
}

#[test]
fn deadlock_names_who_waits_on_what() {
    let (rule, msg) = violation(check(2, no_spec(), |k| {
        let sem = k.regular_semaphore("never_signalled");
        k.semaphore_wait(&sem, 1);
    }));
    assert_eq!(rule, Rule::Deadlock);
    assert!(msg.contains("never_signalled >= 1 (it is 0)"), "{msg}");
    assert!(msg.contains("no remaining operation"), "{msg}");
}

#[test]
fn deadlock_on_a_cycle_names_the_signallers() {
    // Each device waits for its neighbour's signal before sending its own.
    let (rule, msg) = violation(check(2, no_spec(), |k| {
        let sem = k.regular_semaphore("go");
        k.semaphore_wait(&sem, 1);
        k.semaphore_signal(&sem, 1, (k.axis_index("x") + 1) % 2);
    }));
    assert_eq!(rule, Rule::Deadlock);
    assert!(msg.contains("could still be incremented by `d1 signal go +1 -> d0`"), "{msg}");
}

#[test]
fn semaphore_left_non_zero_at_exit_is_a_leak() {
    let (rule, msg) = violation(check(2, no_spec(), |k| {
        let sem = k.regular_semaphore("extra");
        k.semaphore_signal(&sem, 2, None);
        k.semaphore_wait(&sem, 1);
    }));
    assert_eq!(rule, Rule::SemaphoreLeak);
    assert!(msg.contains("extra is 1 at exit"), "{msg}");
}

#[test]
fn dma_outstanding_at_exit_is_a_leak() {
    let (rule, msg) = violation(check(2, no_spec(), |k| {
        let x = k.input("x", MemorySpace::Vmem, &[]);
        let y = k.scratch("y", MemorySpace::Vmem, &[]);
        let sem = k.dma_semaphore("sem");
        k.make_async_copy(&x, &y, &sem).start(); // never waited
    }));
    assert_eq!(rule, Rule::SemaphoreLeak);
    assert!(msg.contains("while its DMA") && msg.contains("not done"), "{msg}");
}

#[test]
fn local_access_during_a_dma_is_a_race() {
    let (rule, msg) = violation(check(2, no_spec(), |k| {
        let x = k.input("x", MemorySpace::Vmem, &[]);
        let mut y = k.scratch("y", MemorySpace::Vmem, &[]);
        let sem = k.dma_semaphore("sem");
        let dma = k.make_async_copy(&x, &y, &sem);
        dma.start();
        y += &x; // before dma.wait()
        dma.wait();
    }));
    assert_eq!(rule, Rule::Race);
    assert!(msg.contains("race on d0 y") && msg.contains("y += x") && msg.contains("start local_copy x -> y"), "{msg}");
}

#[test]
fn silent_corruption_is_a_wrong_result_in_the_seed_notation() {
    // Each device adds its own input twice; the spec wants it once.
    let (rule, msg) = violation(check(2, own_input_in_o(), |k| {
        let x = k.input("x", MemorySpace::Vmem, &[]);
        let mut o = k.output("o", MemorySpace::Vmem, &[]);
        o.assign(&x);
        o += &x;
    }));
    assert_eq!(rule, Rule::WrongResult);
    assert!(msg.contains("o = x0+x0") && msg.contains("says x0"), "{msg}");
}

#[test]
fn two_inputs_hold_different_values() {
    // The output should be the first input; the kernel copies the second. Both inputs hold
    // one cell per device, so only the input an atom comes from tells them apart.
    let (rule, msg) = violation(check(2, own_input_in_o(), |k| {
        let _x = k.input("x", MemorySpace::Vmem, &[]);
        let y = k.input("y", MemorySpace::Vmem, &[]);
        let o = k.output("o", MemorySpace::Vmem, &[]);
        o.assign(&y);
    }));
    assert_eq!(rule, Rule::WrongResult);
    assert!(msg.contains("o = y0") && msg.contains("says x0"), "{msg}");
}

#[test]
fn a_landing_after_the_target_left_is_outside_the_kernel() {
    // d0 sends to d1 with skip_device_barrier (no implicit barrier) and nobody waits for it on
    // d1, which may exit before the bytes land.
    let (rule, msg) = violation(check(2, no_spec(), |k| {
        k.skip_device_barrier();
        let x = k.input("x", MemorySpace::Hbm, &[]);
        let y = k.scratch("y", MemorySpace::Hbm, &[]);
        let send = k.dma_semaphore("send");
        let recv = k.dma_semaphore("recv");
        k.when(k.axis_index("x").equals(0), |k| {
            k.make_async_remote_copy(&x, &y, &send, &recv, 1i64).start();
            k.make_async_remote_copy(&x, &y, &send, &recv, 1i64).wait_send();
        });
    }));
    assert_eq!(rule, Rule::OutsideKernel);
    assert!(msg.contains("lands in d1"), "{msg}");
}

#[test]
fn a_signal_before_the_target_entered_is_outside_the_kernel() {
    let (rule, msg) = violation(check(2, no_spec(), |k| {
        k.skip_device_barrier();
        let sem = k.regular_semaphore("early");
        let other = (k.axis_index("x") + 1) % 2;
        k.semaphore_signal(&sem, 1, other);
        k.semaphore_wait(&sem, 1);
    }));
    assert_eq!(rule, Rule::OutsideKernel);
    assert!(msg.contains("signals early") && msg.contains("has not entered invocation 0"), "{msg}");
}

#[test]
fn the_barrier_semaphore_may_be_signalled_before_entry_but_must_end_at_zero() {
    // Signalling a peer's barrier semaphore before it entered is what it is for.
    let ok = check(2, no_spec(), |k| {
        k.collective_id(0);
        let b = k.get_barrier_semaphore();
        k.semaphore_signal(&b, 1, (k.axis_index("x") + 1) % 2);
        k.semaphore_wait(&b, 1);
    });
    assert_eq!(ok, Verdict::Proved);
    // Over-signalled, it is left non-zero once everyone has finished.
    let (rule, msg) = violation(check(2, no_spec(), |k| {
        k.collective_id(0);
        let b = k.get_barrier_semaphore();
        k.semaphore_signal(&b, 2, (k.axis_index("x") + 1) % 2);
        k.semaphore_wait(&b, 1);
    }));
    assert_eq!(rule, Rule::SemaphoreLeak);
    assert!(msg.contains("barrier is 1 after the last invocation"), "{msg}");
}
