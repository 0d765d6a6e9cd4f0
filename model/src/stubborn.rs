//! The search both stubborn-set reductions share ([`crate::reduction`] for whole programs,
//! `window/reduction.rs` for ring windows): close every enabled *unit* under "must join a
//! set containing it", and keep the closure with the fewest enabled events.
//!
//! A reduction only says what its units are, how many enabled events each contributes,
//! and which units must join a set containing one ([`Units`]); its soundness argument is
//! about that relation, not about this search.

/// A member of a stubborn set (what a unit stands for is the reduction's business: a
/// device's next operation, one event of an in-flight DMA, a class of tokens).
pub(crate) type Unit = usize;

/// The units of one state, as a reduction sees them.
pub(crate) trait Units {
    /// How many units the state has (units are `0..count()`).
    fn count(&self) -> usize;

    /// How many enabled events unit `u` contributes (0: it is disabled).
    fn events(&self, u: Unit) -> usize;

    /// Appends to `found` the units that must join a stubborn set containing `u`.
    fn dependents(&mut self, u: Unit, found: &mut Vec<Unit>);
}

/// Reusable buffers of the search (so the explorers' hot paths do not allocate).
#[derive(Clone, Debug, Default)]
pub(crate) struct SeedSearch {
    in_t: Vec<bool>,
    work: Vec<Unit>,
    found: Vec<Unit>,
    best: Vec<bool>,
}

impl SeedSearch {
    /// Closes every enabled unit of `units` in turn and keeps the smallest closure (by
    /// enabled events; a closure of one event ends the search). Returns `false` when no
    /// unit is enabled.
    pub(crate) fn smallest(&mut self, units: &mut impl Units) -> bool {
        let n = units.count();
        let mut best_count = usize::MAX;
        self.best.clear();
        self.best.resize(n, false);
        for seed in 0..n {
            if units.events(seed) == 0 {
                continue;
            }
            let Some(count) = self.closure(units, seed, best_count) else { continue };
            if count < best_count {
                best_count = count;
                self.best.clone_from(&self.in_t);
                if count == 1 {
                    break;
                }
            }
        }
        best_count != usize::MAX
    }

    /// Whether unit `u` is in the set [`SeedSearch::smallest`] chose.
    pub(crate) fn chosen(&self, u: Unit) -> bool {
        self.best[u]
    }

    /// The closure of `seed` into `in_t`: its number of enabled events, or `None` once it
    /// reaches `limit`.
    fn closure(&mut self, units: &mut impl Units, seed: Unit, limit: usize) -> Option<usize> {
        self.in_t.clear();
        self.in_t.resize(units.count(), false);
        self.work.clear();
        let mut count = 0;
        let mut found = std::mem::take(&mut self.found);
        found.clear();
        found.push(seed);
        let result = 'closure: loop {
            for &v in &found {
                if !self.in_t[v] {
                    self.in_t[v] = true;
                    self.work.push(v);
                    count += units.events(v);
                    if count >= limit {
                        break 'closure None;
                    }
                }
            }
            let Some(u) = self.work.pop() else { break Some(count) };
            found.clear();
            units.dependents(u, &mut found);
        };
        self.found = found;
        result
    }
}
