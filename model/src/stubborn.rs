//! The search both stubborn-set reductions share ([`crate::reduction`] for whole programs,
//! `window/reduction.rs` for ring windows): close every enabled *unit* under "must join a
//! set containing it", and keep the closure with the fewest enabled events.
//!
//! A reduction only says what its units are, how many enabled events each contributes,
//! and which units must join a set containing one ([`Units`]); its soundness argument is
//! about that relation, not about this search.

use crate::event::DmaKey;
use crate::program::{DeviceProgram, Op, Program, SemSlot};
use crate::state::{RECEIVED, SENT};

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
    /// Closes every enabled unit of `units` in turn, from unit `first` on (round the end),
    /// and keeps the smallest closure (by enabled events; a closure of one event ends the
    /// search; of two of one size, the first closed). Returns `false` when no unit is
    /// enabled.
    pub(crate) fn smallest(&mut self, units: &mut impl Units, first: usize) -> bool {
        let n = units.count();
        let mut best_count = usize::MAX;
        self.best.clear();
        self.best.resize(n, false);
        for seed in (0..n).map(|i| (first + i) % n) {
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

/// What an in-flight DMA can still add to its semaphores, seen from a unit that may be one
/// of its own events (that unit's increments are left out).
#[derive(Clone, Copy, Debug)]
pub(crate) struct DmaIncrements {
    /// Which DMA.
    pub key: DmaKey,
    /// Whether its sending can still increment the send semaphore (a remote copy not yet
    /// sent, whose sending is not the unit).
    pub send: bool,
    /// The bytes its landing events can still add to the receive (or a local copy's)
    /// semaphore.
    pub land: u64,
}

impl DmaIncrements {
    /// The increments of a DMA whose sending is unit `send` and whose landing is the one
    /// unit `land` (whole landings: both reductions' numbering), with `SENT` and
    /// `RECEIVED` bits `flags`, seen from unit `u`.
    pub(crate) fn whole(program: &Program, key: DmaKey, flags: u32, (send, land): (Unit, Unit), u: Unit) -> Self {
        let bytes = match program.dma_op(key) {
            Op::LocalDma { bytes, .. } | Op::RemoteDma { bytes, .. } => bytes as u64,
            _ => 0,
        };
        DmaIncrements {
            key,
            send: flags & SENT == 0 && u != send,
            land: if flags & RECEIVED == 0 && u != land { bytes } else { 0 },
        }
    }
}

/// Adds to `avail` every semaphore increment the in-flight DMAs `pending` can still make.
/// `index` maps a semaphore to its place in `avail`.
pub(crate) fn add_dma_increments(
    program: &Program,
    pending: impl Iterator<Item = DmaIncrements>,
    avail: &mut [u64],
    index: impl Fn(SemSlot) -> usize,
) {
    for p in pending {
        // (A semaphore nothing is added to is not looked up: the window has no place for
        // the semaphores of the devices it does not track.)
        match program.dma_op(p.key) {
            Op::LocalDma { sem, .. } if p.land > 0 => avail[index(sem)] += p.land,
            Op::RemoteDma { send_sem, recv_sem, bytes, .. } => {
                if p.send {
                    avail[index(send_sem)] += bytes as u64;
                }
                if p.land > 0 {
                    avail[index(recv_sem)] += p.land;
                }
            }
            _ => {}
        }
    }
}

/// The progress-bound fixpoint both reductions share: runs every device but `excluded`
/// (indexes `0..bounds.len()`, `device(i)` its program) as far as it can from `bounds`
/// (their pcs on entry, their bounds on return). A wait passes while `avail` (what could
/// be available: the caller puts in the semaphores' values and the in-flight increments)
/// covers it beyond `used`; an operation passed adds its increments to `avail`; an entry
/// barrier passes once every device's bound is past that invocation's entry. `slot` maps
/// a semaphore to its index in `avail` and `used`, `None` for one whose increments are
/// not counted (a device's the caller does not track). `device(i)` also gives its
/// [`crate::reduction::Dependencies::bound_skip`] table, by which the operations that
/// neither block nor add to a semaphore are jumped over (a table of another length than
/// the program's plus one is not used).
pub(crate) fn progress_bounds<'p>(
    device: impl Fn(usize) -> (&'p DeviceProgram, &'p [u32]),
    bounds: &mut [u32],
    excluded: usize,
    avail: &mut [u64],
    used: &mut [u64],
    slot: impl Fn(SemSlot) -> Option<usize>,
) {
    used.fill(0);
    let add = |sem: SemSlot, amount: u32, avail: &mut [u64]| {
        if let Some(i) = slot(sem) {
            avail[i] += amount as u64;
        }
    };
    loop {
        let mut changed = false;
        for g in 0..bounds.len() {
            if g == excluded {
                continue; // the excluded device never moves
            }
            let (dp, skip) = device(g);
            let skip = if skip.len() == dp.ops.len() + 1 { skip } else { &[] };
            loop {
                let mut b = bounds[g];
                if let Some(&next) = skip.get(b as usize) {
                    if next != b {
                        b = next;
                        bounds[g] = b;
                        changed = true;
                    }
                }
                let Some(&op) = dp.ops.get(b as usize) else { break };
                match op {
                    Op::Wait { sem, amount } => {
                        let i = slot(sem).expect("a device waits on its own semaphores");
                        if avail[i] < used[i] + amount as u64 {
                            break;
                        }
                        used[i] += amount as u64;
                    }
                    Op::EntryBarrier => {
                        let k = dp.info[b as usize].invocation as usize;
                        if !(0..bounds.len()).all(|e| bounds[e] > device(e).0.enter_pc[k]) {
                            break;
                        }
                    }
                    Op::Signal { sem, inc, .. } => add(sem, inc, avail),
                    Op::LocalDma { sem, bytes, .. } => add(sem, bytes, avail),
                    Op::RemoteDma { send_sem, recv_sem, bytes, .. } => {
                        add(send_sem, bytes, avail);
                        add(recv_sem, bytes, avail);
                    }
                    _ => {}
                }
                bounds[g] = b + 1;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}
