//! A collective's specification: what each output cell must hold when a device exits.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;

use crate::mesh::DeviceId;
use crate::value::{Atom, Notation, ValueId, ValueTable};

/// An expected value, built from atoms.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Expected {
    /// Each atom exactly once (the empty list is `zeros_like`).
    Sum(Vec<Atom>),
    /// An uninterpreted function (template with `{}`) of an expected value (shared: a
    /// computed value reuses its parts, and written out as a tree it can grow
    /// exponentially).
    Apply(String, Arc<Expected>),
    /// The sum of several expected values (multiset union).
    Add(Vec<Expected>),
    /// Never written (`-`): what a kernel that leaves an output cell alone computes.
    Undef,
}

impl Expected {
    /// Interns the expected value.
    pub fn intern(&self, values: &mut ValueTable) -> ValueId {
        self.intern_shared(values, &mut HashMap::new())
    }

    /// [`Expected::intern`], each shared part once (`done`: by address).
    fn intern_shared(&self, values: &mut ValueTable, done: &mut HashMap<*const Expected, ValueId>) -> ValueId {
        match self {
            Expected::Sum(atoms) => values.sum_of(atoms.iter().copied()),
            Expected::Apply(func, inner) => {
                let key = Arc::as_ptr(inner);
                let v = match done.get(&key) {
                    Some(&v) => v,
                    None => {
                        let v = inner.intern_shared(values, done);
                        done.insert(key, v);
                        v
                    }
                };
                let f = values.func(func);
                values.apply(f, v)
            }
            Expected::Add(parts) => {
                let mut acc = ValueId::ZERO;
                for p in parts {
                    let v = p.intern_shared(values, done);
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
        Expected::of_shared(values, id, &mut HashMap::new())
    }

    /// [`Expected::of_value`], each argument of a function once (`done`: by value id).
    fn of_shared(values: &ValueTable, id: ValueId, done: &mut HashMap<ValueId, Arc<Expected>>) -> Expected {
        use crate::value::{Term, Value};
        let Value::Sum(terms) = values.get(id) else { return Expected::Undef };
        let mut atoms = Vec::new();
        let mut applies = Vec::new();
        for (term, count) in terms {
            for _ in 0..*count {
                match term {
                    Term::Atom(a) => atoms.push(*a),
                    Term::Apply(f, arg) => {
                        let inner = match done.get(arg) {
                            Some(e) => e.clone(),
                            None => {
                                let e = Arc::new(Expected::of_shared(values, *arg, done));
                                done.insert(*arg, e.clone());
                                e
                            }
                        };
                        applies.push(Expected::Apply(values.func_name(*f).to_string(), inner));
                    }
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

impl Spec {
    /// A specification in plain notation checking `outputs` (none: `Spec::plain(vec![])`,
    /// a kernel compiled for its events alone).
    pub fn plain(outputs: Vec<Expectation>) -> Spec {
        Spec { notation: Notation::Plain, outputs }
    }
}

#[cfg(test)]
mod tests {
    use super::Expected;
    use crate::value::{Atom, ValueTable};

    #[test]
    fn a_value_that_reuses_its_parts_is_carried_over_shared() {
        // v = f(v + v), sixty times: 2^60 leaves written out as a tree.
        let mut t = ValueTable::new();
        let f = t.func("f({})");
        let mut v = t.atom(Atom::first_input(0, 0, 0));
        for _ in 0..60 {
            let twice = t.add(v, v);
            v = t.apply(f, twice);
        }
        let e = Expected::of_value(&t, v);
        let mut other = ValueTable::new();
        let w = e.intern(&mut other);
        assert_eq!(other.display(w, crate::value::Notation::Plain), t.display(v, crate::value::Notation::Plain));
        // Carried back, it interns to the same value again.
        let mut third = ValueTable::new();
        assert_eq!(Expected::of_value(&other, w).intern(&mut third), e.intern(&mut third));
    }
}
