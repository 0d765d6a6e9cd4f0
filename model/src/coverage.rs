//! Statement coverage: which statements of a kernel never executed on any device in a
//! check. A proof says nothing about a statement that never ran: at N = 2 a statement
//! under `@pl.when(step == 1)` of a one-step grid is never compiled at all, and a bug in
//! it reads "proved".
//!
//! Programs are straight-line (every `when` is resolved at compile time) and every step
//! advances one device's pc by exactly one operation, so an exploration that reached pc
//! `p` on a device executed that device's operations `0..p`. An exhaustive exploration
//! with no violation reaches pc = program length on every device: its graph is finite and
//! acyclic (every event advances a pc or a DMA), every state that is not final has an
//! explored successor (a state with none would be a deadlock), so some explored
//! execution runs every device to its end. Its coverage is therefore
//! [`Coverage::exhaustive`]: what compiled is what ran, and a statement never ran exactly
//! when it compiled to no operation on any device in any invocation. For an exploration
//! that stopped early, pass the pcs it reached to [`Coverage::reached`].

use crate::ir::{Stmt, StmtId};
use crate::program::Program;

/// The statements that never executed, as maximal subtrees: a `when` whose body never
/// ran is listed once, not with each statement of its body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// The statements (in pre-order) none of whose operations executed on any device.
    pub never_executed: Vec<StmtId>,
}

impl Coverage {
    /// The coverage of an exploration that executed, on each device `d`, the operations
    /// before pc `reached[d]` (a device missing from `reached` executed nothing).
    pub fn reached(program: &Program, reached: &[u32]) -> Coverage {
        let kernel = &program.ir;
        let mut ran = vec![false; kernel.statements().len()];
        for (d, dp) in program.devices.iter().enumerate() {
            let upto = (reached.get(d).copied().unwrap_or(0) as usize).min(dp.info.len());
            let quiet = dp.quiet.iter().filter(|(pc, _)| *pc as usize <= upto).map(|(_, id)| Some(*id));
            for id in dp.info[..upto].iter().map(|info| info.stmt).chain(quiet).flatten() {
                if let Some(r) = ran.get_mut(id.0 as usize) {
                    *r = true;
                }
            }
        }
        let mut never_executed = Vec::new();
        let mut next = 0u32;
        for stmt in &kernel.body {
            collect(stmt, &mut next, &ran, &mut never_executed);
        }
        Coverage { never_executed }
    }

    /// The coverage of an exhaustive exploration that found no violation: every compiled
    /// operation ran (see the module documentation for why).
    pub fn exhaustive(program: &Program) -> Coverage {
        let ends: Vec<u32> = program.devices.iter().map(|d| d.ops.len() as u32).collect();
        Coverage::reached(program, &ends)
    }

    /// Whether every statement executed somewhere.
    pub fn is_complete(&self) -> bool {
        self.never_executed.is_empty()
    }
}

/// Whether the subtree at `*next` ran anything; lists it if not, else its children that
/// did not. Advances `*next` past the subtree.
fn collect(stmt: &Stmt, next: &mut u32, ran: &[bool], out: &mut Vec<StmtId>) -> bool {
    let id = StmtId(*next);
    let first = *next as usize;
    let last = first + stmt.subtree_len() as usize;
    if !ran[first..last].iter().any(|&r| r) {
        out.push(id);
        *next += stmt.subtree_len();
        return false;
    }
    *next += 1;
    for child in stmt.children() {
        collect(child, next, ran, out);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsl::trace;
    use crate::ir::Kernel;
    use crate::{compile, Mesh, Spec};

    /// A ring kernel whose grid has N - 1 steps; step 1 signals and waits (so it exists
    /// from N = 3 on).
    fn late(n: usize) -> Kernel {
        trace("late", |k| {
            k.grid(&[n - 1]);
            let sem = k.regular_semaphore("sem");
            let step = k.program_id(0);
            k.semaphore_signal(&sem, 1, None::<crate::expr::Expr>);
            k.semaphore_wait(&sem, 1);
            k.when(step.equals(1), |k| {
                k.semaphore_signal(&sem, 1, None::<crate::expr::Expr>);
                k.semaphore_wait(&sem, 1);
            });
        })
        .unwrap()
    }

    fn coverage(n: usize, reached: Option<&[u32]>) -> Coverage {
        let spec = Spec::plain(vec![]);
        let program = compile(&late(n), &Mesh::ring(n).unwrap(), &spec, 1).unwrap();
        match reached {
            Some(r) => Coverage::reached(&program, r),
            None => Coverage::exhaustive(&program),
        }
    }

    #[test]
    fn a_when_that_never_runs_is_listed_once() {
        assert_eq!(coverage(2, None).never_executed, [StmtId(2)]);
        assert!(coverage(3, None).is_complete());
    }

    #[test]
    fn an_early_stop_lists_what_it_did_not_reach() {
        // Device 0's pc 0 is `enter`, pc 1 the first signal, pc 2 the first wait (the
        // kernel does not communicate, so there is no implicit entry barrier).
        assert_eq!(coverage(3, Some(&[2, 0, 0])).never_executed, [StmtId(1), StmtId(2)]);
        assert_eq!(coverage(3, Some(&[])).never_executed, [StmtId(0), StmtId(1), StmtId(2)]);
    }
}
