//! Every collective of the seeds is proved at small sizes, and every mutant is caught by
//! exploring it, with one of the rules it is expected to break.

use semcheck::checker::{explore, Config, Verdict};
use semcheck::protocols::{catalogue, MeshKind};
use semcheck::Rule;

fn verdict(protocol: &str, mutant: Option<&str>, devices: usize, repeat: u32) -> Verdict {
    let program = semcheck::catalogue_program(protocol, mutant, devices, repeat).unwrap();
    explore(&program, &Config::default()).verdict
}

fn rule(v: &Verdict) -> Option<Rule> {
    match v {
        Verdict::Violation(c) => Some(c.violation.rule),
        _ => None,
    }
}

#[test]
fn correct_collectives_are_proved_at_small_sizes() {
    for (protocol, sizes) in [
        ("ppermute", &[2, 3, 4][..]),
        ("all_gather", &[2, 3, 4]),
        ("psum", &[2, 3, 4]),
        ("psum_scatter", &[2, 3]),
        ("tc_exchange", &[2]),
        ("producer_consumer", &[2]),
    ] {
        for &n in sizes {
            assert_eq!(verdict(protocol, None, n, 1), Verdict::Proved, "{protocol} at N={n}");
        }
    }
}

#[test]
fn correct_collectives_are_proved_when_invoked_twice() {
    for protocol in ["ppermute", "all_gather", "psum", "psum_scatter", "tc_exchange", "producer_consumer"] {
        assert_eq!(verdict(protocol, None, 2, 2), Verdict::Proved, "{protocol} repeat 2");
    }
}

#[test]
fn every_mutant_with_an_expected_rule_is_caught_with_it() {
    for p in catalogue() {
        for m in p.mutants.iter().filter(|m| !m.expected.is_empty()) {
            let from = m.manifests_from.expect("a mutant with an expected rule manifests somewhere");
            let sizes: Vec<usize> = if p.mesh_kind == MeshKind::Ring { (2..=from).collect() } else { vec![2] };
            // Below `manifests_from` it is proved; at it, it breaks one of its rules.
            for &n in &sizes[..sizes.len() - 1] {
                assert_eq!(verdict(p.name, Some(m.name), n, m.repeat), Verdict::Proved, "{} {} N={n}", p.name, m.name);
            }
            let n = *sizes.last().unwrap();
            let found = rule(&verdict(p.name, Some(m.name), n, m.repeat));
            let found = found.unwrap_or_else(|| panic!("{} --mutant {} not caught at N={n}", p.name, m.name));
            assert!(
                m.expected.contains(&found),
                "{} --mutant {} broke {found}, expected one of {:?}",
                p.name,
                m.name,
                m.expected
            );
        }
    }
}

#[test]
fn shared_recv_sem_needs_three_devices() {
    // With N = 2 the grid has a single step: one DMA per device, nothing to confuse.
    assert_eq!(verdict("all_gather", Some("shared-recv-sem"), 2, 1), Verdict::Proved);
    let v = verdict("all_gather", Some("shared-recv-sem"), 3, 1);
    assert!(matches!(rule(&v), Some(Rule::Race | Rule::WrongResult)), "{v:?}");
}

#[test]
fn counterexamples_name_what_broke() {
    let Verdict::Violation(c) = verdict("psum", Some("no-capacity"), 2, 1) else { panic!("not caught") };
    assert_eq!(c.violation.rule, Rule::Race);
    assert!(c.violation.message.contains("hbm_buf"), "{}", c.violation.message);
    assert!(c.violation.message.contains("in-flight DMA"), "{}", c.violation.message);
    assert!(!c.schedule.is_empty());
    let Verdict::Violation(c) = verdict("psum", Some("no-barrier"), 2, 1) else { panic!("not caught") };
    assert_eq!(c.violation.rule, Rule::OutsideKernel);
    assert!(c.violation.message.contains("has not entered"), "{}", c.violation.message);
}

#[test]
fn bfs_returns_a_shortest_counterexample() {
    // psum without a barrier: d0 enters, runs its prologue to the first DMA start, and the
    // DMA lands in d1 before d1 enters. With POR the reduced graph's shortest is returned;
    // without reduction it is the shortest of all schedules.
    let program = semcheck::catalogue_program("psum", Some("no-barrier"), 2, 1).unwrap();
    let config = Config { reduction: semcheck::checker::Reduction::None, ..Config::default() };
    let Verdict::Violation(c) = explore(&program, &config).verdict else { panic!("not caught") };
    // enter, o_ref = zeros, vmem_recv = zeros, start remote_copy, received.
    assert_eq!(c.schedule.len(), 5, "{:#?}", c.schedule);
    let dfs = Config { strategy: semcheck::checker::Strategy::Dfs, ..config };
    let Verdict::Violation(d) = explore(&program, &dfs).verdict else { panic!("not caught by DFS") };
    assert!(d.schedule.len() >= c.schedule.len());
}

#[test]
fn reduction_keeps_verdicts_and_shrinks_the_graph() {
    for (protocol, mutant, n) in
        [("psum", None, 3), ("all_gather", Some("shared-recv-sem"), 3), ("psum_scatter", None, 2)]
    {
        let program = semcheck::catalogue_program(protocol, mutant, n, 1).unwrap();
        let full = explore(&program, &Config { reduction: semcheck::checker::Reduction::None, ..Config::default() });
        let reduced = explore(&program, &Config::default());
        assert_eq!(full.verdict.name(), reduced.verdict.name(), "{protocol} {mutant:?}");
        assert_eq!(rule(&full.verdict), rule(&reduced.verdict));
        if full.verdict == Verdict::Proved {
            assert!(
                reduced.stats.states < full.stats.states,
                "{protocol}: {} vs {}",
                reduced.stats.states,
                full.stats.states
            );
        }
    }
}
