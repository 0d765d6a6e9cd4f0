//! The threaded runtime under loom, at N = 2 (loom's limit is 5 threads: main, 2 devices
//! and their 2 DMA engines). Run with
//! `cargo test --release --features loom --test loom`.
//!
//! A case runs exhaustively (no preemption bound) unless the table says otherwise; a
//! bounded case is labelled so in its output and in docs/engines.md, with the measured limit.
#![cfg(feature = "loom")]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use semcheck::checker::runtime::checks::{from_tool_panic, panic_message, Sink};
use semcheck::checker::runtime::{os, DmaMode, RunConfig};
use semcheck::corpus::{cases, Engine, Expect};
use semcheck::model::Violation;

/// How loom explores a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bound {
    /// Every interleaving (no preemption bound).
    #[allow(
        dead_code,
        reason = "no case finishes unbounded yet (see `bound_of`); kept so one that does is labelled exhaustive"
    )]
    Exhaustive,
    /// At most this many preemptions per execution, explored to the end.
    Preemptions(usize),
    /// At most this many preemptions per execution, and stopped after this many seconds:
    /// a partial run that can find bugs but covers only part of even the bounded space.
    Partial(usize, u64),
}

/// The explicit per-case bounds, measured on 2 shared cores (docs/engines.md, "Loom"): no case
/// finishes without a preemption bound (ppermute alone runs past 2 million executions in
/// 120 s), so each runs with a bound measured to finish (larger ones were not all
/// measured; tc_exchange at bound 2 did not finish in 60 s), and psum and psum_scatter,
/// which do not finish even at bound 1 (psum: 6 million executions in 500 s), run
/// partially at bound 1 for 20 s.
fn bound_of(protocol: &str, mutant: Option<&str>) -> Bound {
    match (protocol, mutant) {
        ("ppermute", None) | ("producer_consumer", None) => Bound::Preemptions(2),
        ("all_gather", _) | ("tc_exchange", None) => Bound::Preemptions(1),
        ("psum", None | Some("single-barrier")) | ("psum_scatter", None | Some("no-capacity")) => Bound::Partial(1, 20),
        // Mutants: loom stops at the first violation (all found within 1 s).
        _ => Bound::Preemptions(1),
    }
}

/// Wall-clock cap of one case: if it is reached the case is reported as cut, never as
/// exhaustive.
fn case_cap() -> Duration {
    let secs = std::env::var("SEMCHECK_LOOM_CAP_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(120);
    Duration::from_secs(secs)
}

struct Outcome {
    violation: Option<Violation>,
    executions: usize,
    seconds: f64,
    cut: bool,
}

fn run_loom(protocol: &str, mutant: Option<&str>, repeat: u32, bound: Bound, config: RunConfig) -> Outcome {
    let program = Arc::new(semcheck::catalogue_program(protocol, mutant, 2, repeat).unwrap());
    let sink = Arc::new(Sink::default());
    let count = Arc::new(AtomicUsize::new(0));
    let mut builder = loom::model::Builder::new();
    // `LOOM_MAX_PREEMPTIONS` (read by `Builder::new`) overrides the table, for measuring.
    if std::env::var_os("LOOM_MAX_PREEMPTIONS").is_none() {
        builder.preemption_bound = match bound {
            Bound::Exhaustive => None,
            Bound::Preemptions(k) | Bound::Partial(k, _) => Some(k),
        };
    }
    let cap = match bound {
        Bound::Partial(_, secs) => Duration::from_secs(secs),
        _ => case_cap(),
    };
    builder.max_duration = Some(cap);
    builder.max_branches = 100_000;
    let (s, c) = (sink.clone(), count.clone());
    let start = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| {
        builder.check(move || {
            c.fetch_add(1, Ordering::SeqCst);
            s.reset();
            os::run_into(&program, &config, &s);
        })
    }));
    let seconds = start.elapsed().as_secs_f64();
    let violation = match result {
        Ok(()) => None,
        Err(payload) => {
            let msg = panic_message(payload.as_ref());
            Some(sink.take().or_else(|| from_tool_panic("loom", &msg)).unwrap_or_else(|| panic!("loom: {msg}")))
        }
    };
    Outcome {
        cut: violation.is_none() && seconds >= cap.as_secs_f64(),
        violation,
        executions: count.load(Ordering::SeqCst),
        seconds,
    }
}

fn check(protocol: &str, mutant: Option<&str>) {
    let case = cases()
        .into_iter()
        .find(|c| c.protocol() == protocol && c.mutant() == mutant && c.case.devices == 2)
        .expect("a corpus case");
    assert!(case.skipped_by(Engine::Loom).is_none());
    let bound = match std::env::var("LOOM_MAX_PREEMPTIONS") {
        Ok(k) => Bound::Preemptions(k.parse().expect("LOOM_MAX_PREEMPTIONS is a number")),
        Err(_) => bound_of(protocol, mutant),
    };
    let o = run_loom(protocol, mutant, case.case.repeat, bound, RunConfig::loom());
    let label = match (bound, o.cut) {
        (Bound::Partial(k, secs), _) => format!("PARTIAL (preemption bound {k}, stopped after {secs} s)"),
        (_, true) => "CUT by the time cap".to_string(),
        (Bound::Exhaustive, false) => "exhaustive".to_string(),
        (Bound::Preemptions(k), false) => format!("bounded (preemption bound {k})"),
    };
    let what = o.violation.as_ref().map_or("no violation".to_string(), |v| format!("{}", v.rule));
    println!("loom {}: {what}; {} executions, {:.1} s, {label}", case.name(), o.executions, o.seconds);
    match (case.expect, &o.violation) {
        (Expect::Clean, None) => assert!(
            !o.cut || matches!(bound, Bound::Partial(..)),
            "{}: loom did not finish within {:?}",
            case.name(),
            case_cap()
        ),
        (Expect::Broken(rules), Some(v)) => assert!(rules.contains(&v.rule), "{}: {v}", case.name()),
        (expect, v) => panic!("{}: expected {expect:?}, loom found {v:?}", case.name()),
    }
}

#[test]
fn ppermute() {
    check("ppermute", None);
}

#[test]
fn all_gather() {
    check("all_gather", None);
}

#[test]
fn psum() {
    check("psum", None);
}

#[test]
fn psum_scatter() {
    check("psum_scatter", None);
}

#[test]
fn tc_exchange() {
    check("tc_exchange", None);
}

#[test]
fn producer_consumer() {
    check("producer_consumer", None);
}

#[test]
fn psum_no_capacity() {
    check("psum", Some("no-capacity"));
}

#[test]
fn psum_no_barrier() {
    check("psum", Some("no-barrier"));
}

#[test]
fn psum_single_barrier() {
    check("psum", Some("single-barrier"));
}

#[test]
fn psum_scatter_no_capacity() {
    check("psum_scatter", Some("no-capacity"));
}

#[test]
fn psum_scatter_no_barrier() {
    check("psum_scatter", Some("no-barrier"));
}

#[test]
fn psum_scatter_no_final_drain() {
    check("psum_scatter", Some("no-final-drain"));
}

#[test]
fn tc_exchange_no_barrier() {
    check("tc_exchange", Some("no-barrier"));
}

#[test]
fn producer_consumer_no_signal() {
    check("producer_consumer", Some("no-signal"));
}

#[test]
fn all_gather_shared_recv_sem() {
    check("all_gather", Some("shared-recv-sem"));
}

/// The limitation that chose `DmaMode::ByKind`: with one FIFO engine per issuing device, a
/// device's local copy always completes before its next remote copy, so the psum
/// run-ahead race is unreachable (the explorer and `ByKind` both find it). Measured at
/// 626,196 executions in 42 s; since the device on the calling thread got its scheduling
/// point before entering, the bounded search no longer finishes within the 120 s cap, so
/// it is run by hand (`-- --ignored`), not by CI.
#[test]
#[ignore = "longer than the loom suite's 120 s cap per case; run by hand with --ignored"]
fn per_issuer_engines_miss_psum_no_capacity() {
    let config = RunConfig { dma: DmaMode::PerIssuer, ..RunConfig::loom() };
    let o = run_loom("psum", Some("no-capacity"), 1, Bound::Preemptions(1), config);
    println!(
        "loom psum/no-capacity N=2 with per-issuer engines: {:?}; {} executions, {:.1} s",
        o.violation.as_ref().map(|v| v.rule),
        o.executions,
        o.seconds
    );
    assert!(!o.cut, "did not finish");
    assert!(o.violation.is_none(), "{:?}", o.violation);
}

/// Loom's own `UnsafeCell` causality check sees the psum run-ahead race even with the
/// runtime's race rule switched off (the race is then only noted, and the run goes on).
#[test]
fn loom_causality_check_catches_psum_no_capacity_by_itself() {
    let config = RunConfig { stop_on_race: false, ..RunConfig::loom() };
    let o = run_loom("psum", Some("no-capacity"), 1, Bound::Preemptions(1), config);
    let v = o.violation.expect("loom finds the race");
    println!("loom psum/no-capacity N=2 without the race rule: {v}; {} executions, {:.1} s", o.executions, o.seconds);
    assert!(v.rule == semcheck::Rule::Race && v.message.contains("loom detected it"), "{v}");
}
