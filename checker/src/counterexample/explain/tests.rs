//! Explanations of small kernels: a race, a deadlock, a leak.

use super::*;
use crate::counterexample::counterexample;
use crate::counterexample::run::Ending;
use crate::{explore, Config, Verdict};
use semcheck_model::dsl::trace;
use semcheck_model::ir::MemorySpace;
use semcheck_model::{compile, Mesh, Rule, Spec};

/// A 2-ring kernel whose reader waits for the wrong semaphore's signal: the
/// neighbour signals `ready` right after starting its copy, before the copy lands.
fn early_signal() -> (Program, TracedRun) {
    let kernel = trace("early_signal", |k| {
        let x = k.input("x", MemorySpace::Vmem, &[]);
        let y = k.scratch("y", MemorySpace::Vmem, &[]);
        let o = k.output("o", MemorySpace::Vmem, &[]);
        let (send, recv) = (k.dma_semaphore("send"), k.dma_semaphore("recv"));
        let ready = k.regular_semaphore("ready");
        let right = (k.axis_index("x") + 1) % 2;
        let dma = k.make_async_remote_copy(&x, &y, &send, &recv, right.clone());
        dma.start();
        k.semaphore_signal(&ready, 1, right);
        k.semaphore_wait(&ready, 1);
        o.assign(&y);
        dma.wait_send();
        dma.wait_recv();
    })
    .unwrap();
    let spec = Spec::plain(vec![]);
    let program = compile(&kernel, &Mesh::ring(2).unwrap(), &spec, 1).unwrap();
    let Verdict::Violation(cex) = explore(&program, &Config::default()).verdict else { panic!("no race") };
    let found = counterexample(&program, &cex, true).unwrap();
    (program, found.run)
}

#[test]
fn a_race_is_the_access_the_dma_in_flight_and_the_wait_that_let_it_through() {
    let (program, run) = early_signal();
    let e = explain(&program, &run);
    let roles: Vec<Role> = e.points.iter().map(|p| p.role).collect();
    let last = e.points.last().unwrap();
    assert_eq!(last.role, Role::Read, "{e:#?}");
    assert_eq!(last.index, Some(run.events.len() - 1));
    assert!(roles.contains(&Role::DmaInFlight), "{e:#?}");
    // The wait on `ready` is the reader's gate, shown although only a signal satisfied it.
    let wait = e.points.iter().find(|p| p.role == Role::Wait).expect("the reader's wait");
    assert!(wait.text.contains("wait ready"), "{}", wait.text);
    let by = e.points.iter().find(|p| p.role == Role::SatisfiedBy).expect("what satisfied it");
    assert!(by.text.contains("signal ready"), "{}", by.text);
    assert!(e.points.len() <= MAX_POINTS);
}

/// The counterexample of a kernel on a 2-ring, minimised.
fn found(name: &str, body: impl Fn(&semcheck_model::dsl::KernelBuilder)) -> (Program, TracedRun) {
    let kernel = trace(name, |k| body(k)).unwrap();
    let spec = Spec::plain(vec![]);
    let program = compile(&kernel, &Mesh::ring(2).unwrap(), &spec, 1).unwrap();
    let Verdict::Violation(cex) = explore(&program, &Config::default()).verdict else { panic!("{name}: no violation") };
    let run = counterexample(&program, &cex, true).unwrap().run;
    (program, run)
}

#[test]
fn a_deadlock_is_every_stuck_device_and_why_nothing_moves() {
    // Each device waits for its neighbour's signal before sending its own: a cycle.
    let (program, run) = found("cycle", |k| {
        let first = k.regular_semaphore("first");
        let right = (k.axis_index("x") + 1) % 2;
        k.semaphore_wait(&first, 1);
        k.semaphore_signal(&first, 1, right);
    });
    assert!(matches!(run.ending, Ending::Deadlock(_)));
    let e = explain(&program, &run);
    let stuck: Vec<&Point> = e.points.iter().filter(|p| p.role == Role::Blocked).collect();
    assert_eq!(stuck.len(), 2, "{e:#?}");
    assert!(stuck.iter().all(|p| p.index.is_none() && p.text.contains("wait first 1")), "{e:#?}");
    assert!(stuck.iter().all(|p| p.note.as_deref().unwrap().contains("is stuck too")), "{e:#?}");

    // A wait nobody signals.
    let (program, run) = found("never", |k| {
        let never = k.regular_semaphore("never");
        k.semaphore_wait(&never, 1);
    });
    let e = explain(&program, &run);
    let stuck: Vec<&Point> = e.points.iter().filter(|p| p.role == Role::Blocked).collect();
    assert_eq!(stuck.len(), 2, "{e:#?}");
    assert!(stuck[0].note.as_deref().unwrap().contains("no remaining operation increments it"), "{e:#?}");
}

#[test]
fn a_leak_is_the_increment_no_wait_consumed() {
    // Every device signals itself twice and waits once.
    let (program, run) = found("leak", |k| {
        let s = k.regular_semaphore("s");
        k.semaphore_signal(&s, 1, None::<semcheck_model::expr::Expr>);
        k.semaphore_signal(&s, 1, None::<semcheck_model::expr::Expr>);
        k.semaphore_wait(&s, 1);
    });
    assert_eq!(run.ending.violation().unwrap().rule, Rule::SemaphoreLeak);
    let e = explain(&program, &run);
    let last = e.points.last().unwrap();
    assert_eq!((last.role, last.index), (Role::Breaks, Some(run.events.len() - 1)), "{e:#?}");
    assert!(last.note.as_deref().unwrap().contains("s is 1, not 0"), "{e:#?}");
    let left: Vec<&Point> = e.points.iter().filter(|p| p.role == Role::LeftOver).collect();
    assert_eq!(left.len(), 1, "{e:#?}");
    assert!(left[0].text.contains("signal s +1"), "{e:#?}");
}
