//! Running mutants: which edits of a kernel the checker notices, and which
//! synchronisation a kernel could do without.
//!
//! [`check_mutants`] compiles each [`Mutation`] of a kernel for the original's mesh,
//! repeat count, specification and assumptions, and explores it with the caller's
//! configuration (whose budget applies per mutant), on several threads. Each mutant ends
//! as one [`Fate`]:
//!
//! * **killed**: a rule is broken, with the shortest counterexample's length;
//! * **survived**: proved at this mesh size: the edited statement is not needed there,
//!   or the edit is equivalent (`equivalent` says when the mutant compiles to exactly the
//!   original's operations);
//! * **rejected**: the mutant does not compile (an index off the buffer, a device off the
//!   mesh), with the reason: such a mistake never reaches a run;
//! * **incomplete**: the budget stopped it; it is never counted as survived.
//!
//! [`redundant_sync`] runs the deletion of every synchronising statement
//! ([`mutate::is_sync`]) at several mesh sizes: a deletion proved at every size is a
//! candidate for removal.
//!
//! ```
//! use semcheck::model::mutate::{mutations, Operator};
//! use semcheck::mutate::{check_mutants, Fate};
//! use semcheck::Config;
//!
//! let base = semcheck::catalogue_program("ppermute", None, 2, 1).unwrap();
//! let deletions = mutations(&base.ir, &[Operator::Delete]);
//! let results = check_mutants(&base, &deletions, &Config::default(), 2);
//! // Dropping `dma.wait()` leaves the DMA outstanding at exit.
//! assert!(results.iter().all(|r| matches!(r.fate, Fate::Killed { .. })));
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use semcheck_checker::{explore, Config, Stats, Strategy, Verdict};
use semcheck_model::ir::{Loc, StmtId};
use semcheck_model::mutate::{self, same_operations, Mutation, MutationUnits, Operator};
use semcheck_model::{compile, stmt_text, Program, Rule};
use serde::Serialize;

/// What became of one mutant.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Fate {
    /// A rule is broken.
    Killed {
        /// The rule.
        rule: Rule,
        /// Events in the shortest counterexample (of the reduced graph).
        length: usize,
        /// The violation's message.
        message: String,
    },
    /// Proved at this mesh size.
    Survived {
        /// The mutant compiles to exactly the original's operations (at this size the
        /// edit changes nothing that runs).
        equivalent: bool,
    },
    /// The mutant does not compile.
    Rejected {
        /// The compiler's reason.
        reason: String,
    },
    /// The budget stopped the exploration: nothing is known.
    Incomplete {
        /// How far it got.
        reason: String,
    },
}

impl Fate {
    /// `killed`, `survived`, `rejected` or `incomplete`.
    pub fn name(&self) -> &'static str {
        match self {
            Fate::Killed { .. } => "killed",
            Fate::Survived { .. } => "survived",
            Fate::Rejected { .. } => "rejected",
            Fate::Incomplete { .. } => "incomplete",
        }
    }

    /// The verdict of the mutant's own check: `violation`, `proved`, `rejected` (it does
    /// not compile) or `incomplete`.
    pub fn check_verdict(&self) -> &'static str {
        match self {
            Fate::Killed { .. } => "violation",
            Fate::Survived { .. } => "proved",
            Fate::Rejected { .. } => "rejected",
            Fate::Incomplete { .. } => "incomplete",
        }
    }
}

/// One mutant's edit and fate.
#[derive(Clone, Debug, Serialize)]
pub struct MutantResult {
    /// The operator.
    pub operator: Operator,
    /// The edited statement's pre-order number in the original kernel.
    pub stmt: StmtId,
    /// The edited statement's source location, when the front end knows it.
    pub location: Option<Loc>,
    /// The edited statement in the kernel's words.
    pub statement: String,
    /// The whole edit in the kernel's words.
    pub edit: String,
    /// What changed in the statement (empty for a deletion or duplication).
    pub detail: String,
    /// What became of it.
    #[serde(flatten)]
    pub fate: Fate,
    /// The exploration's counters (zero for a rejected mutant).
    pub stats: Stats,
}

/// `f` applied to every item on `threads` threads (at least one), results in item order.
pub fn parallel_map<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let threads = threads.clamp(1, items.len().max(1));
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { return out };
                        out.push((i, f(item)));
                    }
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// The number of threads to run mutants on by default: the machine's parallelism.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Explores a mutant with `config`; if a budget (states, time or memory, not an
/// interrupt) stops a breadth-first exploration, explores it again depth-first with the
/// same budget, and that outcome counts if it decides. A breadth-first search must
/// exhaust every state up to the depth of the shortest violation: a deletion that lets
/// many copies be in flight at once (tokamax's fused EP MoE without the wait of a scale
/// window that shares its semaphore with the token rows: the next tile's row wait passes
/// with rows still landing, every subset of them a state) stopped after 173,000 states
/// at N = 2 with its race 227 events deep, which a depth-first search reaches in 755
/// states. A violation found so is as real, its counterexample just not the shortest;
/// a mutant the first exploration decides is reported exactly as before.
fn explore_mutant(program: &Program, config: &Config) -> semcheck_checker::Outcome {
    let outcome = explore(program, config);
    let budget_stopped = matches!(outcome.verdict, Verdict::Incomplete { reason, .. } if reason.is_budget());
    if !budget_stopped || config.strategy == Strategy::Dfs {
        return outcome;
    }
    let deep = explore(program, &Config { strategy: Strategy::Dfs, ..*config });
    match deep.verdict {
        Verdict::Incomplete { .. } => outcome,
        _ => deep,
    }
}

/// Compiles and explores one mutant of `base`'s kernel (breadth-first, then depth-first when a budget stops it).
pub fn check_mutant(base: &Program, mutation: &Mutation, config: &Config) -> MutantResult {
    let original = base.ir.statement(mutation.stmt);
    let compiled = compile(&mutation.kernel, &base.mesh, &base.spec, base.repeat)
        .and_then(|program| program.with_semantics(base.semantics));
    let (fate, stats) = match compiled {
        Err(e) => (Fate::Rejected { reason: e.to_string() }, Stats::default()),
        Ok(program) => {
            let outcome = explore_mutant(&program, config);
            let fate = match outcome.verdict {
                Verdict::Proved => Fate::Survived { equivalent: same_operations(base, &program) },
                Verdict::Violation(c) => {
                    Fate::Killed { rule: c.violation.rule, length: c.schedule.len(), message: c.violation.message }
                }
                Verdict::Incomplete { detail, .. } => Fate::Incomplete { reason: detail },
            };
            (fate, outcome.stats)
        }
    };
    MutantResult {
        operator: mutation.operator,
        stmt: mutation.stmt,
        location: original.and_then(|s| s.loc.clone()),
        statement: original.map_or_else(String::new, |s| stmt_text::statement(&base.ir, s)),
        edit: mutation.edit.clone(),
        detail: mutation.detail.clone(),
        fate,
        stats,
    }
}

/// Every mutation of `base`'s kernel checked, on `threads` threads, in the mutations'
/// order.
pub fn check_mutants(base: &Program, mutations: &[Mutation], config: &Config, threads: usize) -> Vec<MutantResult> {
    parallel_map(mutations, threads, |m| check_mutant(base, m, config))
}

/// The kill matrix: every mutant `operators` make of `base`'s kernel checked, on `threads`
/// threads, in the order of [`mutate::mutations`]. Each thread makes one statement's
/// mutants at a time ([`MutationUnits`]), so memory holds a few copies of the kernel,
/// not one per mutant.
pub fn kill_matrix(base: &Program, operators: &[Operator], config: &Config, threads: usize) -> Vec<MutantResult> {
    let units = MutationUnits::new(&base.ir, operators);
    let indices: Vec<usize> = (0..units.len()).collect();
    let per_unit = parallel_map(&indices, threads, |&unit| {
        units.make(unit).iter().map(|m| check_mutant(base, m, config)).collect::<Vec<_>>()
    });
    per_unit.into_iter().flatten().collect()
}

/// The evidence for one mesh size of a deletion's fate.
#[derive(Clone, Debug, Serialize)]
pub struct AtSize {
    /// The mesh size.
    pub devices: usize,
    /// The deletion's fate at that size.
    #[serde(flatten)]
    pub fate: Fate,
    /// Its exploration's counters.
    pub stats: Stats,
}

/// The deletion of one synchronising statement, or of one semaphore's every signal and
/// wait, at every mesh size asked for.
#[derive(Clone, Debug, Serialize)]
pub struct SyncDeletion {
    /// [`Operator::Delete`] or [`Operator::DeleteSemaphore`].
    pub operator: Operator,
    /// The edit in the kernel's words (at the first size).
    pub edit: String,
    /// The statements a semaphore deletion removes (empty for one statement's deletion).
    pub detail: String,
    /// The statement's pre-order number (the semaphore's first use).
    pub stmt: StmtId,
    /// Its source location.
    pub location: Option<Loc>,
    /// The statement in the kernel's words (at the first size).
    pub statement: String,
    /// The fate of its deletion at each size, smallest first; a size where the kernel has
    /// no such statement is absent.
    pub evidence: Vec<AtSize>,
}

impl SyncDeletion {
    /// Whether the deletion stays proved at every size asked for (`sizes`): a candidate
    /// for removal.
    pub fn removable(&self, sizes: usize) -> bool {
        self.evidence.len() == sizes && self.evidence.iter().all(|e| matches!(e.fate, Fate::Survived { .. }))
    }

    /// The smallest size at which the deletion is killed, if any: the statement is needed.
    pub fn killed_at(&self) -> Option<&AtSize> {
        self.evidence.iter().find(|e| matches!(e.fate, Fate::Killed { .. }))
    }
}

/// Deletes each synchronising statement ([`mutate::is_sync`]), and each REGULAR or
/// barrier semaphore's every signal and wait, of each base program (one per mesh size, the
/// same kernel traced for each) and checks it, every size's deletions on `threads` threads
/// together. A deletion is matched across sizes by its operator and its statement's
/// source location (which names the calls it came through) and, among the deletions of
/// one size with both the same, by its place: the k-th at one size is the k-th at another,
/// so a trace whose statement count depends on the size (a loop over the devices
/// unrolled) still pairs them. A statement without a location (a DSL kernel) is matched
/// by its pre-order number.
pub fn redundant_sync(bases: &[Program], config: &Config, threads: usize) -> Vec<SyncDeletion> {
    let jobs: Vec<(usize, Mutation)> = bases
        .iter()
        .enumerate()
        .flat_map(|(i, b)| mutate::sync_deletions(&b.ir).into_iter().map(move |m| (i, m)))
        .collect();
    let results = parallel_map(&jobs, threads, |(i, m)| (*i, check_mutant(&bases[*i], m, config)));
    let mut out: Vec<SyncDeletion> = Vec::new();
    // The deletion of `out` per operator, location and place among those of one size.
    let mut found: HashMap<(Operator, Option<Loc>, usize), usize> = HashMap::new();
    let mut places: HashMap<(usize, Operator, Loc), usize> = HashMap::new();
    for (i, r) in results {
        let place = match &r.location {
            Some(loc) => {
                let place = places.entry((i, r.operator, loc.clone())).or_insert(0);
                *place += 1;
                *place - 1
            }
            None => r.stmt.0 as usize,
        };
        let key = (r.operator, r.location.clone(), place);
        let at = AtSize { devices: bases[i].num_devices(), fate: r.fate, stats: r.stats };
        match found.get(&key) {
            Some(&d) => out[d].evidence.push(at),
            None => {
                found.insert(key, out.len());
                out.push(SyncDeletion {
                    operator: r.operator,
                    edit: r.edit,
                    detail: r.detail,
                    stmt: r.stmt,
                    location: r.location,
                    statement: r.statement,
                    evidence: vec![at],
                });
            }
        }
    }
    for d in &mut out {
        d.evidence.sort_by_key(|e| e.devices);
    }
    out.sort_by_key(|d| (d.operator, d.stmt));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A breadth-first exploration a budget stops is done again depth-first, and a
    /// violation found so kills the mutant; a mutant the first exploration decides is
    /// reported exactly as its breadth-first exploration (same fate, same states).
    #[test]
    fn a_mutant_a_budget_stops_breadth_first_is_explored_again_depth_first() {
        use semcheck_checker::Strategy;
        let base = crate::program(&crate::Case::new(crate::Source::catalogue("psum_scatter", None), 3)).unwrap();
        let mut deeper = None;
        for m in mutate::sync_deletions(&base.ir) {
            let r = check_mutant(&base, &m, &Config::default());
            let Ok(p) = compile(&m.kernel, &base.mesh, &base.spec, base.repeat) else { continue };
            let bfs = explore(&p, &Config::default());
            assert_eq!(r.fate.check_verdict(), bfs.verdict.name(), "{:?}", m.stmt);
            assert_eq!(r.stats.states, bfs.stats.states, "{:?}", m.stmt);
            let dfs = explore(&p, &Config { strategy: Strategy::Dfs, ..Config::default() });
            if matches!(bfs.verdict, Verdict::Violation(_)) && dfs.stats.states * 2 < bfs.stats.states {
                deeper = Some((m, dfs.stats.states, bfs.stats.states));
            }
        }
        let (m, dfs, bfs) = deeper.expect("a deletion depth-first search kills in fewer states");
        let mut config = Config::default();
        config.budget.max_states = Some((dfs + bfs) / 2);
        let p = compile(&m.kernel, &base.mesh, &base.spec, base.repeat).unwrap();
        assert!(matches!(explore(&p, &config).verdict, Verdict::Incomplete { .. }));
        let r = check_mutant(&base, &m, &config);
        assert!(matches!(r.fate, Fate::Killed { .. }), "{:?}", r.fate);
        assert_eq!(r.stats.states, dfs);
    }

    #[test]
    fn parallel_map_keeps_the_order() {
        let items: Vec<u32> = (0..100).collect();
        assert_eq!(parallel_map(&items, 3, |x| x * 2), items.iter().map(|x| x * 2).collect::<Vec<_>>());
        assert!(parallel_map(&[] as &[u32], 2, |x| *x).is_empty());
    }
}
