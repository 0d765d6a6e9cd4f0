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
        }
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
