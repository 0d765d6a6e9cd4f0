//! The hardware assumptions (`--dma-order`, `--dma-landing`) in the model: which ones a
//! bug requires and a proof relies on, for the catalogue (the findings table of docs/dsl.md), a
//! half wait and the shape of JAX's shipped all-gather.

use semcheck::assumptions::{proof_basis, requirements, Assumption};
use semcheck::checker::{explore, Budget, Config, Verdict};
use semcheck::model::dsl::{trace, Dma, KernelBuilder};
use semcheck::model::ir::{Kernel, MemorySpace};
use semcheck::model::{
    compile, Atom, DeviceId, DmaLanding, DmaOrder, Expectation, Expected, Mesh, Notation, Program, Rule, Semantics,
    Spec,
};

fn semantics(order: DmaOrder, landing: DmaLanding) -> Semantics {
    Semantics { dma_order: order, dma_landing: landing }
}

fn program_of(kernel: &Kernel, spec: &Spec, n: usize, semantics: Semantics) -> Program {
    compile(kernel, &Mesh::ring(n).unwrap(), spec, 1).unwrap().with_semantics(semantics).unwrap()
}

/// The findings table of docs/dsl.md: (protocol, mutant, the first word of its `requires` cell),
/// for every row that names a mutant.
fn readme_requires() -> Vec<(String, String, String)> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/dsl.md")).unwrap();
    let table = readme.split("| protocol | correct version | mutant | finding | requires |").nth(1).expect("the table");
    let mut protocol = String::new();
    let mut rows = Vec::new();
    for line in table.lines().skip(2).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if !cells[1].is_empty() {
            protocol = cells[1].to_string();
        }
        if cells[3].is_empty() {
            continue;
        }
        let word = cells[5].split([':', ' ']).next().unwrap_or_default().trim_matches('`');
        rows.push((protocol.clone(), cells[3].to_string(), word.to_string()));
    }
    rows
}

/// What every catalogue mutant's bug needs, at the smallest mesh where it breaks, measured
/// by re-checking under the stronger options, is what the findings table of docs/dsl.md says
/// (`-` for a mutant that breaks nowhere).
#[test]
fn the_readme_says_what_each_catalogue_mutant_requires() {
    let rows = readme_requires();
    let mut seen = 0;
    for p in semcheck::protocols::catalogue() {
        for m in p.mutants {
            let (.., said) = rows
                .iter()
                .find(|(pn, mn, _)| pn == p.name && mn == m.name)
                .unwrap_or_else(|| panic!("{}/{} is missing from the findings table of docs/dsl.md", p.name, m.name));
            let Some(n) = m.manifests_from else {
                assert_eq!(said, "-", "{}/{} breaks nowhere", p.name, m.name);
                continue;
            };
            let case = semcheck::catalogue_case(p.name, Some(m.name), n).unwrap();
            let program = semcheck::program(&case).unwrap();
            let Verdict::Violation(cex) = explore(&program, &Config::default()).verdict else {
                panic!("{case}: no violation")
            };
            let needs = requirements(&program, &cex, &Config::default());
            assert!(needs.undecided.is_empty() && needs.requires_one_of.is_empty(), "{case}");
            let measured = if needs.requires.is_empty() { "nothing".to_string() } else { needs.names().join(", ") };
            assert_eq!(said, &measured, "{case}: {:?}", needs.lines(n));
            seen += 1;
        }
    }
    assert_eq!(seen, rows.iter().filter(|(.., said)| said != "-").count());
}

/// Seed 000 §2.5's all_gather with one receive semaphore: the corruption needs a later DMA
/// of a pair to overtake an earlier one, and the counterexample shows where.
#[test]
fn shared_recv_sem_needs_dma_reordering() {
    let case = semcheck::catalogue_case("all_gather", Some("shared-recv-sem"), 3).unwrap();
    let program = semcheck::program(&case).unwrap();
    let Verdict::Violation(cex) = explore(&program, &Config::default()).verdict else { panic!("no violation") };
    assert_eq!(cex.violation.rule, Rule::Race);
    let needs = requirements(&program, &cex, &Config::default());
    assert_eq!(needs.names(), vec!["dma-reorder"]);
    assert_eq!(needs.rechecks.len(), 1);
    assert_eq!(needs.rechecks[0].outcome.verdict, Verdict::Proved);
    let witness = &needs.witnesses[0];
    assert_eq!(witness.assumption, Assumption::DmaReorder);
    assert!(witness.detail.contains("a later DMA d1->d2 lands before an earlier one"), "{}", witness.detail);
    // The witness names a real event of the schedule: a landing that overtakes.
    assert!(cex.schedule[witness.event - 1].is_landing());
}

/// A violation whose schedule never uses what a stronger option rules out is re-checked by
/// running that schedule under the option (nothing explored): the run it reports breaks the
/// same rule under the stronger semantics, checked here by running it again. A schedule
/// that does use it (shared-recv-sem's overtaking landing) is explored as before.
#[test]
fn a_schedule_that_runs_under_the_stronger_option_decides_its_recheck() {
    use semcheck::checker::counterexample::{run_events, Namer};
    let mut replayed = 0;
    for p in semcheck::protocols::catalogue() {
        for m in p.mutants {
            let Some(n) = m.manifests_from else { continue };
            let case = semcheck::catalogue_case(p.name, Some(m.name), n).unwrap();
            let program = semcheck::program(&case).unwrap();
            let Verdict::Violation(cex) = explore(&program, &Config::default()).verdict else { continue };
            for r in requirements(&program, &cex, &Config::default()).rechecks.iter().filter(|r| r.replayed) {
                let Verdict::Violation(found) = &r.outcome.verdict else {
                    panic!("{case}: a replayed re-check proves")
                };
                assert_eq!(found.violation.rule, cex.violation.rule, "{case}");
                let strong = program.clone().with_semantics(r.semantics).unwrap();
                let run = run_events(&Namer::new(&strong), &found.schedule).expect("it runs under the stronger option");
                assert_eq!(run.ending.violation().map(|v| v.rule), Some(cex.violation.rule), "{case}");
                replayed += 1;
            }
        }
    }
    assert!(replayed > 0, "no catalogue mutant's re-check was decided by its own schedule");
    let case = semcheck::catalogue_case("all_gather", Some("shared-recv-sem"), 3).unwrap();
    let program = semcheck::program(&case).unwrap();
    let Verdict::Violation(cex) = explore(&program, &Config::default()).verdict else { panic!("no violation") };
    let needs = requirements(&program, &cex, &Config::default());
    assert!(!needs.rechecks[0].replayed && needs.rechecks[0].outcome.verdict == Verdict::Proved);
}

/// A re-check the budget stops says so, and claims nothing.
#[test]
fn an_incomplete_recheck_decides_nothing() {
    let case = semcheck::catalogue_case("all_gather", Some("shared-recv-sem"), 3).unwrap();
    let program = semcheck::program(&case).unwrap();
    // Enough to find the violation (46 states), not to prove the pair-fifo kernel (75).
    let config = Config { budget: Budget { max_states: Some(60), ..Budget::default() }, ..Config::default() };
    let Verdict::Violation(cex) = explore(&program, &config).verdict else { panic!("no violation") };
    let needs = requirements(&program, &cex, &config);
    assert!(needs.requires.is_empty());
    assert_eq!(needs.undecided, vec![Assumption::DmaReorder]);
    let text = needs.lines(3).join("\n");
    assert!(text.contains("unknown for dma-reorder") && text.contains("incomplete"), "{text}");
    assert!(!text.contains(": proved"), "{text}");
}

/// One device copies a two-cell buffer to its right neighbour; the neighbour waits for one
/// cell's worth of bytes (a descriptor of half the copy) and reads that half, then waits for
/// the rest. Safe only if the copy lands whole.
fn half_read() -> Kernel {
    trace("half_read", |k: &KernelBuilder| {
        let x = k.input("x", MemorySpace::Vmem, &[2]);
        let y = k.scratch("y", MemorySpace::Vmem, &[2]);
        let o = k.output("o", MemorySpace::Vmem, &[]);
        let (send, recv) = (k.dma_semaphore("send"), k.dma_semaphore("recv"));
        let right = (k.axis_index("x") + 1) % 2;
        let whole = k.make_async_remote_copy(&x, &y, &send, &recv, right.clone());
        whole.start();
        whole.wait_send();
        k.make_async_remote_copy(&x.at(0), &y.at(0), &send, &recv, right.clone()).wait_recv();
        o.assign(y.at(0));
        k.make_async_remote_copy(&x.at(1), &y.at(1), &send, &recv, right).wait_recv();
    })
    .unwrap()
}

#[test]
fn a_half_wait_is_proved_with_whole_landings_and_breaks_with_cells() {
    let spec = Spec { notation: Notation::Plain, outputs: vec![] };
    let whole = program_of(&half_read(), &spec, 2, semantics(DmaOrder::Any, DmaLanding::Whole));
    assert_eq!(explore(&whole, &Config::default()).verdict, Verdict::Proved);
    // The proof relies on whole landings, and says so.
    let basis = proof_basis(&whole, &Config::default());
    assert_eq!(basis.relies_on, vec![Assumption::PartialLanding]);
    assert!(basis.lines(2)[0].starts_with("proved only because --dma-landing whole rules out partial-landing"));
    let cells = program_of(&half_read(), &spec, 2, semantics(DmaOrder::Any, DmaLanding::Cells));
    let Verdict::Violation(cex) = explore(&cells, &Config::default()).verdict else { panic!("no violation") };
    assert_eq!(cex.violation.rule, Rule::Race, "{}", cex.violation);
    // It needs partial landing, not reordering (there is one DMA per pair).
    let needs = requirements(&cells, &cex, &Config::default());
    assert_eq!(needs.requires, vec![Assumption::PartialLanding], "{:?}", needs.lines(2));
    let witness = needs.witnesses.iter().find(|w| w.assumption == Assumption::PartialLanding).expect("a witness");
    assert!(witness.detail.contains("has landed 1 of its 2 cells"), "{}", witness.detail);
    // Under pair-fifo too: landing order between pairs is not the point.
    let fifo_cells = program_of(&half_read(), &spec, 2, semantics(DmaOrder::PairFifo, DmaLanding::Cells));
    assert!(matches!(explore(&fifo_cells, &Config::default()).verdict, Verdict::Violation(_)));
}

/// The shape of JAX's own shipped all-gather (`jax/experimental/pallas/ops/tpu/all_gather.py`,
/// `ag_kernel`): each shard is split in halves that travel left and right; each direction
/// reuses one send and one receive semaphore for every step, waiting for the previous
/// step's DMA before starting the next. Correct exactly when DMAs between a pair of
/// devices land in the order they were started.
fn jax_all_gather(n: usize) -> (Kernel, Spec) {
    let kernel = trace("jax_ag_kernel", |k: &KernelBuilder| {
        k.collective_id(0);
        let x = k.input("x_ref", MemorySpace::Hbm, &[2]);
        let o = k.output("o_ref", MemorySpace::Hbm, &[n, 2]);
        let send = k.dma_semaphores("send_sem", 2);
        let recv = k.dma_semaphores("recv_sem", 2);
        let me = k.axis_index("x");
        let left = (&me - 1 + n as i64) % n;
        let right = (&me + 1) % n;
        k.async_copy(&x, &o.at(&me), &recv.at(0)).wait();
        let barrier = k.get_barrier_semaphore();
        k.semaphore_signal(&barrier, 1, left.clone());
        k.semaphore_signal(&barrier, 1, right.clone());
        k.semaphore_wait(&barrier, 2);
        let (mut right_dma, mut left_dma): (Option<Dma>, Option<Dma>) = (None, None);
        for i in 0..n as i64 - 1 {
            let slot = (&me - i + n as i64) % n;
            if let Some(d) = right_dma.take() {
                d.wait();
            }
            let dma = k.make_async_remote_copy(&o.at((&slot, 1)), &o.at((&slot, 1)), &send.at(1), &recv.at(1), &right);
            dma.start();
            right_dma = Some(dma);
            let slot = (&me + i) % n;
            if let Some(d) = left_dma.take() {
                d.wait();
            }
            let dma = k.make_async_remote_copy(&o.at((&slot, 0)), &o.at((&slot, 0)), &send.at(0), &recv.at(0), &left);
            dma.start();
            left_dma = Some(dma);
        }
        right_dma.expect("n >= 2").wait();
        left_dma.expect("n >= 2").wait();
    })
    .unwrap();
    let mut outputs = Vec::new();
    for d in 0..n {
        for s in 0..n {
            for h in 0..2 {
                let atom = Atom::first_input(s as u16, h as u16, 0);
                outputs.push(Expectation {
                    device: DeviceId(d as u16),
                    buffer: "o_ref".into(),
                    index: vec![s, h],
                    value: Expected::Sum(vec![atom]),
                });
            }
        }
    }
    (kernel, Spec { notation: Notation::Plain, outputs })
}

#[test]
fn jax_shipped_all_gather_relies_on_pair_fifo() {
    // N = 4 is proved too (441,128 states under pair-fifo, about 4 s): too slow for CI.
    {
        let n = 3;
        let (kernel, spec) = jax_all_gather(n);
        let any = program_of(&kernel, &spec, n, Semantics::default());
        let Verdict::Violation(cex) = explore(&any, &Config::default()).verdict else {
            panic!("N={n}: proved under --dma-order any")
        };
        let needs = requirements(&any, &cex, &Config::default());
        assert_eq!(needs.requires, vec![Assumption::DmaReorder], "N={n}: {:?}", needs.lines(n));
        let fifo = program_of(&kernel, &spec, n, semantics(DmaOrder::PairFifo, DmaLanding::Whole));
        assert_eq!(explore(&fifo, &Config::default()).verdict, Verdict::Proved, "N={n}");
        assert_eq!(proof_basis(&fifo, &Config::default()).relies_on, vec![Assumption::DmaReorder], "N={n}");
    }
}
