//! Symmetry reduction: one representative state per orbit of the ring's rotations.
//!
//! A rotation-symmetric kernel ([`crate::ring`]) has the group `{g^0, ..., g^(N-1)}` of
//! automorphisms, `g` the rotation by one device. The image `g^k(s)` of a packed state
//! renames devices (pcs move to the rotated device), semaphores, cells (values move to the
//! rotated cell and their atoms are renamed), and in-flight DMAs (the issuer is rotated,
//! the payload renamed, and the records sorted again). [`Symmetry::canonicalise`] picks the
//! smallest image of a state, so two states of one orbit get the same representative and
//! the explorer stores one state per orbit.
//!
//! **The order is on contents, not ids.** Images are compared word by word, pcs, then
//! semaphores, then cells, then DMA records (header, then payload), with values compared
//! by [`ValueTable::cmp_content`]: value ids depend on the order values were interned in,
//! which differs between runs of the parallel explorer, and the representative (hence
//! the reduced graph and its state count) must not.
//!
//! **Soundness.** Every `g^k` is an automorphism of the state graph that maps each
//! violation of a rule to a violation of the same rule, each deadlock to a deadlock and
//! each final state to a final state (the crate docs of [`crate::ring`]). Let the explorer
//! expand representatives only, following from a representative `c` the events of a
//! stubborn set `T(c)` (partial-order reduction, [`crate::reduction`]), and storing the
//! representative of each successor. Claim: if a violation is reachable from a state `s`,
//! one is found from `rep(s)`. By induction on the height of `s` (the longest path from
//! `s` to a terminal state; the graph is finite and acyclic, and automorphisms preserve
//! heights): `rep(s) = g^k(s)` reaches a violation too; if that is at `rep(s)` itself (a
//! deadlock, or an event of `T(rep(s))` that breaks a rule, which the stubborn set
//! guarantees when any violating path exists) it is found; otherwise the stubborn-set
//! argument gives an event `t` of `T(rep(s))` after which a violation is still reachable,
//! from a state of smaller height, whose representative the explorer expands. Nothing
//! requires `T` to be invariant under rotation: the stubborn set is computed afresh from
//! each representative and only the per-state property of stubborn sets is used (the
//! combination problems in the literature come from cycle provisos, which this acyclic
//! graph does not need). `tests/model/reduction_soundness.rs` and `tests/model/reduction_random.rs`
//! compare the verdicts of every mode.
//!
//! **Counterexamples stay concrete.** The explorer stores with each representative the
//! `k` that made it; composing the rotations along a path turns the schedule of
//! representatives back into a schedule of the program itself.

use std::cmp::Ordering;

use crate::program::Program;
use crate::ring::{Asymmetry, Ring, Rotation};
use crate::state::{DmaRecord, LANDED};
use crate::value::{ValueId, ValueTable};

/// The rotations of a symmetric program, with the tables that build images fast.
#[derive(Clone, Debug)]
pub struct Symmetry {
    rotations: Vec<Rotation>,
    /// `[k][i]`: the device whose pc the image under `g^k` holds at device `i`.
    pc_src: Vec<Vec<u32>>,
    /// `[k][i]`: the semaphore whose value the image holds at semaphore `i`.
    sem_src: Vec<Vec<u32>>,
    /// `[k][i]`: the cell whose value (renamed) the image holds at cell `i`.
    cell_src: Vec<Vec<u32>>,
}

/// Reusable buffers of [`Symmetry::canonicalise`].
#[derive(Clone, Debug, Default)]
pub struct CanonScratch {
    candidates: Vec<usize>,
    best: Vec<u32>,
    image: Vec<u32>,
    records: Vec<(u32, u32, usize, usize)>,
}

impl Symmetry {
    /// The rotation group of `program`, or why it has none (not a one-axis mesh, or the
    /// per-device programs are not rotations of each other).
    pub fn of(program: &Program) -> Result<Symmetry, Asymmetry> {
        let ring = Ring::of(program).map_err(|e| Asymmetry { reason: e.reason })?;
        let g = ring.rotation().map_err(Clone::clone)?;
        let n = ring.size();
        let mut rotations = vec![Rotation::identity(program)];
        for k in 1..n {
            rotations.push(g.after(&rotations[k - 1]));
        }
        let src = |k: usize, f: &dyn Fn(&Rotation, u32) -> u32, len: usize| -> Vec<u32> {
            let inverse = &rotations[(n - k) % n];
            (0..len as u32).map(|i| f(inverse, i)).collect()
        };
        let mut sym = Symmetry { rotations: Vec::new(), pc_src: Vec::new(), sem_src: Vec::new(), cell_src: Vec::new() };
        for k in 0..n {
            let dev = |r: &Rotation, i: u32| r.device(crate::mesh::DeviceId(i as u16)).0 as u32;
            sym.pc_src.push(src(k, &dev, n));
            sym.sem_src.push(src(k, &|r, i| r.sem(crate::program::SemSlot(i)).0, program.num_sems()));
            sym.cell_src.push(src(k, &|r, i| r.cell(crate::program::CellId(i)).0, program.cells.len()));
        }
        sym.rotations = rotations;
        Ok(sym)
    }

    /// The number of rotations (the ring size).
    pub fn order(&self) -> usize {
        self.rotations.len()
    }

    /// The rotation `g^k`.
    pub fn rotation(&self, k: usize) -> &Rotation {
        &self.rotations[k % self.order()]
    }

    /// Writes the image `g^k(state)` to `out`. Values are renamed in `values` under the
    /// renaming numbers `0..order` (see [`ValueTable::rename`]): a table used with one
    /// symmetry must not use those numbers for anything else.
    pub fn image(&self, program: &Program, k: usize, state: &[u32], values: &mut ValueTable, out: &mut Vec<u32>) {
        let mut records = Vec::new();
        self.image_into(program, k, state, values, &mut records, out);
    }

    fn image_into(
        &self,
        p: &Program,
        k: usize,
        state: &[u32],
        values: &mut ValueTable,
        records: &mut Vec<(u32, u32, usize, usize)>,
        out: &mut Vec<u32>,
    ) {
        out.clear();
        if k == 0 {
            out.extend_from_slice(state);
            return;
        }
        let rot = &self.rotations[k];
        out.extend(self.pc_src[k].iter().map(|&i| state[i as usize]));
        let so = p.sem_offset();
        out.extend(self.sem_src[k].iter().map(|&i| state[so + i as usize]));
        let co = p.cell_offset();
        for &i in &self.cell_src[k] {
            out.push(rename(values, k, rot, state[co + i as usize]));
        }
        // In-flight DMAs: rotate each record, then restore the canonical (issuer, pc) order.
        records.clear();
        for r in p.dmas(state) {
            let key = rot.dma(r.key);
            records.push((DmaRecord::header(key, 0), DmaRecord::header(key, r.flags), r.offset + 1, r.payload));
        }
        records.sort_unstable();
        for &(_, header, from, len) in records.iter() {
            out.push(header);
            for &v in &state[from..from + len] {
                out.push(rename(values, k, rot, v));
            }
        }
    }

    /// Writes the representative of `state`'s orbit to `out` and returns the `k` with
    /// `out == g^k(state)`.
    pub fn canonicalise(
        &self,
        program: &Program,
        state: &[u32],
        values: &mut ValueTable,
        scratch: &mut CanonScratch,
        out: &mut Vec<u32>,
    ) -> usize {
        let n = self.order();
        if n == 1 {
            out.clear();
            out.extend_from_slice(state);
            return 0;
        }
        // Pcs, then semaphores, narrow the candidates without renaming anything.
        let s = scratch;
        s.candidates.clear();
        s.candidates.extend(0..n);
        narrow(&mut s.candidates, |k, i| state[self.pc_src[k][i] as usize], n);
        let so = program.sem_offset();
        narrow(&mut s.candidates, |k, i| state[so + self.sem_src[k][i] as usize], program.num_sems());
        let mut best_k = s.candidates[0];
        self.image_into(program, best_k, state, values, &mut s.records, &mut s.best);
        for c in 1..s.candidates.len() {
            let k = s.candidates[c];
            self.image_into(program, k, state, values, &mut s.records, &mut s.image);
            if cmp_images(program, values, &s.image, &s.best) == Ordering::Less {
                std::mem::swap(&mut s.image, &mut s.best);
                best_k = k;
            }
        }
        out.clear();
        out.extend_from_slice(&s.best);
        best_k
    }
}

fn rename(values: &mut ValueTable, k: usize, rot: &Rotation, v: u32) -> u32 {
    if v == LANDED {
        return v; // a payload cell that already landed (`--dma-landing cells`) holds no value
    }
    values
        .rename(k, ValueId(v), &|a| rot.atom(a))
        .expect("reachable values hold input atoms only, and the rotation maps every one")
        .0
}

/// Keeps the candidates whose words `0..len` (`word(k, i)`) are smallest.
fn narrow(candidates: &mut Vec<usize>, word: impl Fn(usize, usize) -> u32, len: usize) {
    let mut kept = 1; // candidates[..kept] tie for the smallest so far
    for c in 1..candidates.len() {
        let (k, best) = (candidates[c], candidates[0]);
        let order = (0..len).map(|i| word(k, i).cmp(&word(best, i))).find(|o| o.is_ne()).unwrap_or(Ordering::Equal);
        match order {
            Ordering::Less => {
                candidates[0] = k;
                kept = 1;
            }
            Ordering::Equal => {
                candidates[kept] = k;
                kept += 1;
            }
            Ordering::Greater => {}
        }
    }
    candidates.truncate(kept);
}

/// Compares two images of one state: words as numbers, but values by content.
fn cmp_images(p: &Program, values: &ValueTable, a: &[u32], b: &[u32]) -> Ordering {
    let co = p.cell_offset();
    let numbers = a[..co].cmp(&b[..co]);
    if numbers.is_ne() {
        return numbers;
    }
    // A landed payload cell (`LANDED`, no value) orders after every value.
    let word = |v: u32, w: u32| match (v == LANDED, w == LANDED) {
        (false, false) => values.cmp_content(ValueId(v), ValueId(w)),
        (x, y) => x.cmp(&y),
    };
    let content = |x: &[u32], y: &[u32]| x.iter().zip(y).map(|(&v, &w)| word(v, w)).find(|o| o.is_ne());
    if let Some(o) = content(&a[co..p.dma_offset()], &b[co..p.dma_offset()]) {
        return o;
    }
    let (mut x, mut y) = (p.dmas(a), p.dmas(b));
    loop {
        let (r, q) = match (x.next(), y.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(r), Some(q)) => (r, q),
        };
        let headers = DmaRecord::header(r.key, r.flags).cmp(&DmaRecord::header(q.key, q.flags));
        if headers.is_ne() {
            return headers;
        }
        let payload = |s: &[u32], r: DmaRecord| s[r.offset + 1..r.offset + 1 + r.payload].to_vec();
        if let Some(o) = content(&payload(a, r), &payload(b, q)) {
            return o;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile;
    use crate::dsl::{trace, zeros_like};
    use crate::event::Event;
    use crate::ir::MemorySpace;
    use crate::mesh::{DeviceId, Mesh};
    use crate::spec::{Expectation, Expected, Spec};
    use crate::step::StepOutcome;
    use crate::value::Atom;
    use std::collections::HashSet;

    /// Each device sends block `my_id + 1` of its input right, and adds what it received
    /// to its own block `my_id` into `acc`.
    fn accumulate(n: usize) -> Program {
        let kernel = trace("accumulate", |k| {
            let x = k.input("x", MemorySpace::Vmem, &[n]);
            let y = k.scratch("y", MemorySpace::Vmem, &[]);
            let mut acc = k.output("acc", MemorySpace::Vmem, &[]);
            let (send, recv) = (k.dma_semaphore("send"), k.dma_semaphore("recv"));
            let my_id = k.axis_index("x");
            acc.assign(zeros_like(&acc));
            let dma = k.make_async_remote_copy(
                &x.at((&my_id + 1) % n as i64),
                &y,
                &send,
                &recv,
                (my_id.clone() + 1) % n as i64,
            );
            dma.start();
            acc += x.at(my_id.clone());
            dma.wait();
            acc += &y;
        })
        .unwrap();
        let atom = |o: usize, b: usize| Atom::first_input(o as u16, b as u16, 0);
        let outputs = (0..n)
            .map(|d| Expectation {
                device: DeviceId(d as u16),
                buffer: "acc".into(),
                index: vec![],
                value: Expected::Sum(vec![atom(d, d), atom((d + n - 1) % n, d)]),
            })
            .collect();
        compile(&kernel, &Mesh::ring(n).unwrap(), &Spec::plain(outputs), 1).unwrap()
    }

    /// Every reachable state of `p` (no reduction).
    fn reachable(p: &Program, values: &mut ValueTable) -> Vec<Vec<u32>> {
        let mut seen = HashSet::new();
        let mut todo = vec![p.initial_state()];
        let mut all = Vec::new();
        let (mut events, mut next) = (Vec::new(), Vec::new());
        while let Some(s) = todo.pop() {
            if !seen.insert(s.clone()) {
                continue;
            }
            events.clear();
            p.enabled(&s, &mut events);
            for &e in &events {
                if p.step(&s, e, values, &mut next) == StepOutcome::Next {
                    todo.push(next.clone());
                }
            }
            all.push(s);
        }
        all
    }

    #[test]
    fn the_representative_is_one_per_orbit_and_an_image_of_the_state() {
        let p = accumulate(3);
        let sym = Symmetry::of(&p).unwrap();
        assert_eq!(sym.order(), 3);
        let mut values = p.values.clone();
        let states = reachable(&p, &mut values);
        assert!(states.len() > 50);
        let (mut scratch, mut rep, mut img, mut other) = (CanonScratch::default(), Vec::new(), Vec::new(), Vec::new());
        let mut reps = HashSet::new();
        for s in &states {
            let k = sym.canonicalise(&p, s, &mut values, &mut scratch, &mut rep);
            sym.image(&p, k, s, &mut values, &mut img);
            assert_eq!(img, rep, "the representative is g^k of the state");
            for j in 0..3 {
                sym.image(&p, j, s, &mut values, &mut img);
                sym.canonicalise(&p, &img, &mut values, &mut scratch, &mut other);
                assert_eq!(other, rep, "every state of an orbit has one representative");
            }
            reps.insert(rep.clone());
        }
        assert!(reps.len() * 3 >= states.len() && reps.len() < states.len(), "{} orbits", reps.len());
    }

    #[test]
    fn rotations_commute_with_the_step_function() {
        let p = accumulate(3);
        let sym = Symmetry::of(&p).unwrap();
        let mut values = p.values.clone();
        let (mut events, mut a, mut b, mut ga, mut gs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for s in reachable(&p, &mut values) {
            events.clear();
            p.enabled(&s, &mut events);
            for k in 1..3 {
                let g = sym.rotation(k);
                sym.image(&p, k, &s, &mut values, &mut gs);
                for &e in &events {
                    let ge: Event = g.event(e);
                    assert!(p.is_enabled(&gs, ge));
                    let x = p.step(&s, e, &mut values, &mut a);
                    let y = p.step(&gs, ge, &mut values, &mut b);
                    match (x, y) {
                        (StepOutcome::Next, StepOutcome::Next) => {
                            sym.image(&p, k, &a, &mut values, &mut ga);
                            assert_eq!(ga, b, "step(g s, g e) = g step(s, e)");
                        }
                        (StepOutcome::Violation(v), StepOutcome::Violation(w)) => assert_eq!(v.rule, w.rule),
                        (x, y) => panic!("{e} gives {x:?} but its rotation gives {y:?}"),
                    }
                }
            }
        }
    }
}
