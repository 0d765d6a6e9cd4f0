//! Which statements a check never executed: where a proof is vacuous.
//!
//! Only an exhaustive exploration that proved the case says which statements never run
//! (see [`semcheck_model::coverage`] for why its coverage is what compiled); any other
//! outcome gets the reason it cannot say.
//!
//! ```
//! use semcheck::coverage::{never_executed, Unexecuted};
//!
//! let case = semcheck::catalogue_case("psum", None, 2).unwrap();
//! let program = semcheck::program(&case).unwrap();
//! let outcome = semcheck::check(&case).unwrap();
//! let missed: Vec<Unexecuted> = never_executed(&program, &outcome).unwrap();
//! assert!(missed.is_empty());
//! ```

use semcheck_checker::{EngineRun, Outcome, Verdict};
use semcheck_model::coverage::Coverage;
use semcheck_model::ir::{Loc, StmtId};
use semcheck_model::{stmt_text, Program};
use serde::Serialize;

/// A statement that never executed on any device.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Unexecuted {
    /// Its pre-order number.
    pub stmt: StmtId,
    /// Its source location, when the front end knows it.
    pub location: Option<Loc>,
    /// The statement in the kernel's words (a block by its header: its whole body never
    /// ran).
    pub statement: String,
    /// Where it is and what it says, told apart from the kernel's other statements of the
    /// same source line ([`stmt_text::labels`]): `psum.py:57 remote.start()`.
    pub label: String,
}

/// The statements of `program` that `outcome` never executed, or why the outcome cannot
/// say (it is not an exhaustive exploration that proved the case).
pub fn never_executed(program: &Program, outcome: &Outcome) -> Result<Vec<Unexecuted>, &'static str> {
    if !matches!(outcome.run, EngineRun::Explore(_)) {
        return Err("only the exhaustive explorer says which statements never run; this engine samples schedules");
    }
    match outcome.verdict {
        Verdict::Proved => {}
        Verdict::Violation(_) => {
            return Err("the exploration stopped at the first violation, before every statement could run")
        }
        Verdict::Incomplete { .. } => {
            return Err("the exploration stopped early: statements it did not reach may still run")
        }
    }
    let coverage = Coverage::exhaustive(program);
    let statements = program.ir.statements();
    let words: Vec<String> = statements.iter().map(|(_, s)| stmt_text::statement(&program.ir, s)).collect();
    let items: Vec<_> = statements.iter().zip(&words).map(|((id, s), w)| (s.loc.as_ref(), w.as_str(), *id)).collect();
    let labels = stmt_text::labels(&items);
    Ok(coverage
        .never_executed
        .into_iter()
        .filter_map(|id| {
            let i = id.0 as usize;
            let (_, stmt) = statements.get(i)?;
            if stmt.implicit {
                // Not the kernel's source (Pallas's pipeline copies, semcheck's guarded
                // probes of index windows): nothing of the user's is vacuous there.
                return None;
            }
            Some(Unexecuted {
                stmt: id,
                location: stmt.loc.clone(),
                statement: words[i].clone(),
                label: labels[i].clone(),
            })
        })
        .collect())
}
