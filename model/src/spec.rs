//! A collective's specification: what each output cell must hold when a device exits.

use serde::Serialize;

use crate::mesh::DeviceId;
use crate::value::{Atom, Notation, ValueId, ValueTable};

/// An expected value, built from atoms.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Expected {
    /// Each atom exactly once (the empty list is `zeros_like`).
    Sum(Vec<Atom>),
    /// An uninterpreted function (template with `{}`) of an expected value.
    Apply(String, Box<Expected>),
    /// The sum of several expected values (multiset union).
    Add(Vec<Expected>),
    /// Never written (`-`): what a kernel that leaves an output cell alone computes.
    Undef,
}

impl Expected {
    /// Interns the expected value.
    pub fn intern(&self, values: &mut ValueTable) -> ValueId {
        match self {
            Expected::Sum(atoms) => values.sum_of(atoms.iter().copied()),
            Expected::Apply(func, inner) => {
                let v = inner.intern(values);
                let f = values.func(func);
                values.apply(f, v)
            }
            Expected::Add(parts) => {
                let mut acc = ValueId::ZERO;
                for p in parts {
                    let v = p.intern(values);
                    acc = values.add(acc, v);
                }
                acc
            }
            Expected::Undef => ValueId::UNDEF,
        }
    }

    /// The expected value equal to `id` of `values`, independent of the table (to carry a
    /// value computed by one program into the specification of another).
    pub fn of_value(values: &ValueTable, id: ValueId) -> Expected {
        use crate::value::{Term, Value};
        let Value::Sum(terms) = values.get(id) else { return Expected::Undef };
        let mut atoms = Vec::new();
        let mut applies = Vec::new();
        for (term, count) in terms {
            for _ in 0..*count {
                match term {
                    Term::Atom(a) => atoms.push(*a),
                    Term::Apply(f, arg) => applies.push(Expected::Apply(
                        values.func_name(*f).to_string(),
                        Box::new(Expected::of_value(values, *arg)),
                    )),
                }
            }
        }
        if applies.is_empty() {
            return Expected::Sum(atoms);
        }
        if atoms.is_empty() && applies.len() == 1 {
            return applies.pop().expect("one");
        }
        let mut parts = vec![Expected::Sum(atoms)];
        parts.extend(applies);
        Expected::Add(parts)
    }
}

/// What one output cell must hold at exit.
#[derive(Clone, Debug, Serialize)]
pub struct Expectation {
    /// The device whose view of the buffer is checked (any device for a shared buffer).
    pub device: DeviceId,
    /// The buffer's name in the kernel.
    pub buffer: String,
    /// The cell's index in the buffer's shape.
    pub index: Vec<usize>,
    /// The expected value.
    pub value: Expected,
}

/// The specification of a collective for one mesh.
///
/// Inputs are filled by the standard rule: cell `(i, j)` of an input buffer on device `d`
/// holds the atom `(origin d, block i, part j)` (missing indices are 0); cell `i` of a
/// shared input buffer holds `(origin i, block 0, part 0)`.
#[derive(Clone, Debug, Serialize)]
pub struct Spec {
    /// How values of this collective are printed.
    pub notation: Notation,
    /// The output cells checked at exit, on every invocation.
    pub outputs: Vec<Expectation>,
}
