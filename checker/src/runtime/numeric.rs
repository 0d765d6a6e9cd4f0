//! Real `f32` data for the symbolic values of the model.
//!
//! Every input atom `(origin, block, part)` gets a vector of random `f32`s (magnitude in
//! `[0.5, 1.5)`, random sign, drawn from the run's seed), `Undef` is `NaN` (so `Undef + x`
//! stays `NaN`, as in the model), `zeros_like` is `0.0`, `+=` is addition and an
//! uninterpreted function `f_k` is `2x + 1 + k`. The reference value of an expected cell is
//! the model's symbolic specification evaluated on the same atoms in `f64`, like comparing
//! a Pallas kernel with `lax.psum`: a contribution missing or counted twice moves the result
//! by at least 0.5, far above the tolerance.

use semcheck_model::value::{Term, Value};
use semcheck_model::{Program, ValueId};

/// The numbers of one run: the value of every atom, element by element.
#[derive(Clone, Debug)]
pub struct Reference {
    elems: usize,
    seed: u64,
}

/// `splitmix64`, the run's only source of randomness (deterministic per seed).
pub(crate) fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Reference {
    /// The atoms of a run with `elems` numbers per cell, drawn from `seed`.
    pub fn new(elems: usize, seed: u64) -> Reference {
        Reference { elems: elems.max(1), seed }
    }

    /// Numbers per cell.
    pub fn elems(&self) -> usize {
        self.elems
    }

    fn atom(&self, origin: u16, block: u16, part: u16, e: usize) -> f32 {
        let key = ((origin as u64) << 48) ^ ((block as u64) << 32) ^ ((part as u64) << 16) ^ e as u64;
        let r = splitmix(self.seed ^ splitmix(key));
        let mag = 0.5 + (r >> 11) as f64 / (1u64 << 53) as f64;
        (if r & 1 == 1 { -mag } else { mag }) as f32
    }

    /// The concrete function `f_k(x) = 2x + 1 + k` standing for uninterpreted function `k`.
    pub fn apply(func: u32, x: f32) -> f32 {
        2.0 * x + 1.0 + func as f32
    }

    /// A value as `f32`s (`NaN` for `Undef`), the way a device holds it.
    pub fn concrete(&self, program: &Program, v: ValueId) -> Box<[f32]> {
        self.eval(program, v).0.into_iter().map(|x| x as f32).collect()
    }

    /// A value evaluated in `f64`, with the sum of the magnitudes of its contributions
    /// (for the tolerance).
    pub fn eval(&self, program: &Program, v: ValueId) -> (Vec<f64>, f64) {
        let mut out = vec![0.0f64; self.elems];
        let mut mag = 0.0;
        match program.values.get(v) {
            Value::Undef => return (vec![f64::NAN; self.elems], f64::NAN),
            Value::Sum(terms) => {
                for (term, mult) in terms {
                    let k = *mult as f64;
                    for (e, o) in out.iter_mut().enumerate() {
                        let x = match term {
                            Term::Atom(a) => self.atom(a.origin, a.block, a.part, e) as f64,
                            Term::Apply(f, arg) => {
                                let inner = self.concrete(program, *arg)[e];
                                Reference::apply(*f, inner) as f64
                            }
                        };
                        *o += k * x;
                        if e == 0 {
                            mag += k * x.abs();
                        }
                    }
                }
            }
        }
        (out, mag)
    }

    /// Whether `got` matches the expected value `want` within `1e-4 * (1 + magnitude)`.
    pub fn matches(&self, program: &Program, want: ValueId, got: &[f32]) -> bool {
        let (w, mag) = self.eval(program, want);
        if mag.is_nan() {
            return got.iter().all(|g| g.is_nan());
        }
        let tol = 1e-4 * (1.0 + mag);
        w.iter().zip(got).all(|(w, g)| ((*g as f64) - w).abs() <= tol)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atoms_are_at_least_one_half_in_magnitude_and_deterministic() {
        let r = Reference::new(4, 7);
        for o in 0..8 {
            for e in 0..4 {
                let x = r.atom(o, 1, 0, e);
                assert!((0.5..1.5).contains(&x.abs()), "{x}");
                assert_eq!(x, Reference::new(4, 7).atom(o, 1, 0, e));
            }
        }
        assert_ne!(r.atom(0, 0, 0, 0), Reference::new(4, 8).atom(0, 0, 0, 0));
    }
}
