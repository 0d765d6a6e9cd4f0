//! Symbolic cell values: `Undef`, or a multiset of input atoms.
//!
//! A value is interned in a [`ValueTable`] and referred to by a [`ValueId`], so a cell is
//! one `u32` in a packed state and comparing values is comparing ids.

use std::cmp::Ordering;
use std::fmt::Write as _;

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::{FxBuildHasher, FxHashMap};
use serde::Serialize;

/// One input contribution: `(origin device, block, part)` of input buffer `input`
/// (`x_2[block 1, top]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Atom {
    /// The device whose input this is.
    pub origin: u16,
    /// The block of the input (0 when the input is not blocked).
    pub block: u16,
    /// The part of the block (0 when it is not split).
    pub part: u16,
    /// Which of the kernel's input buffers (in declaration order) it comes from: the same
    /// cell of two inputs holds two different values.
    pub input: u16,
}

impl Atom {
    /// The atom of cell `(block, part)` of device `origin`'s first input.
    pub fn first_input(origin: u16, block: u16, part: u16) -> Atom {
        Atom { origin, block, part, input: 0 }
    }
}

/// The letter an input's atoms print with: `x`, `y`, `z` for the first three inputs (the
/// first is the seed's `x`), then `in3_`, `in4_`, ...
fn input_letter(input: u16) -> String {
    match input {
        0 => "x".into(),
        1 => "y".into(),
        2 => "z".into(),
        k => format!("in{k}_"),
    }
}

/// The id of an interned value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ValueId(pub u32);

impl ValueId {
    /// Never written in this invocation (or left over from an earlier kernel).
    pub const UNDEF: ValueId = ValueId(0);
    /// `zeros_like`: the empty sum.
    pub const ZERO: ValueId = ValueId(1);
}

/// A summand of a value: an atom, or an uninterpreted function applied to a value.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Term {
    /// An input atom.
    Atom(Atom),
    /// `func(arg)`, e.g. `2*{}` applied to `x0`.
    Apply(u32, ValueId),
}

/// A symbolic value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    /// Undefined.
    Undef,
    /// A multiset of terms, sorted, each with its multiplicity.
    Sum(Vec<(Term, u32)>),
}

/// How values are printed: the seed's notations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Notation {
    /// `x0+x3`: atoms by input (`x`, `y`, ...) and origin device, then the cell past the
    /// input's first: `x0[2]` (block 2), `y1[2, 1]` (block 2, part 1).
    Plain,
    /// `T2(2+1+0)`: block 2, top half (`T`/`B` for part 0/1), from devices 2, 1, 0, in the
    /// order the seed writes them: the order of accumulation on a ring of `devices`, where
    /// top halves travel left (2, 1, 0, 3) and bottom halves right (3, 0, 1, 2 for `B3`).
    BlockHalves {
        /// The ring size.
        devices: u16,
    },
}

/// The interner of values, with memoised sums.
#[derive(Clone, Debug)]
pub struct ValueTable {
    values: Vec<Value>,
    /// The ids of `values`, hashed by their value (each value is stored once, in `values`).
    index: HashTable<ValueId>,
    sums: FxHashMap<(ValueId, ValueId), ValueId>,
    funcs: Vec<String>,
    applies: FxHashMap<(u32, ValueId), ValueId>,
    /// Per renaming (see [`ValueTable::rename`]): the image of each value id, or
    /// [`NOT_RENAMED`].
    renamed: Vec<Vec<ValueId>>,
}

/// The longest value [`ValueTable::display`] prints in full, in characters.
pub const MAX_SHOWN: usize = 240;

/// `text`, or its first `max` characters and `…` when it is longer.
pub fn cut_short(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// A value id no value has: marks a renaming not yet computed.
const NOT_RENAMED: ValueId = ValueId(u32::MAX);

impl Default for ValueTable {
    fn default() -> Self {
        Self::new()
    }
}

impl ValueTable {
    /// A table holding `Undef` and zero.
    pub fn new() -> ValueTable {
        let mut t = ValueTable {
            values: Vec::new(),
            index: HashTable::new(),
            sums: FxHashMap::default(),
            funcs: Vec::new(),
            applies: FxHashMap::default(),
            renamed: Vec::new(),
        };
        t.intern(Value::Undef);
        t.intern(Value::Sum(Vec::new()));
        t
    }

    /// Interns a value.
    pub fn intern(&mut self, value: Value) -> ValueId {
        let hash = FxBuildHasher.hash_one(&value);
        let values = &self.values;
        if let Some(&id) = self.index.find(hash, |id| values[id.0 as usize] == value) {
            return id;
        }
        let id = ValueId(self.values.len() as u32);
        self.values.push(value);
        let values = &self.values;
        self.index.insert_unique(hash, id, |id| FxBuildHasher.hash_one(&values[id.0 as usize]));
        id
    }

    /// The value of an id.
    pub fn get(&self, id: ValueId) -> &Value {
        &self.values[id.0 as usize]
    }

    /// The number of distinct values interned.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Never empty: `Undef` and zero are always there.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The value holding one atom.
    pub fn atom(&mut self, atom: Atom) -> ValueId {
        self.intern(Value::Sum(vec![(Term::Atom(atom), 1)]))
    }

    /// The sum of atoms, each once.
    pub fn sum_of(&mut self, atoms: impl IntoIterator<Item = Atom>) -> ValueId {
        let mut acc = ValueId::ZERO;
        for a in atoms {
            let v = self.atom(a);
            acc = self.add(acc, v);
        }
        acc
    }

    /// `a + b`: multiset union; `Undef` absorbs.
    pub fn add(&mut self, a: ValueId, b: ValueId) -> ValueId {
        if a == ValueId::UNDEF || b == ValueId::UNDEF {
            return ValueId::UNDEF;
        }
        if a == ValueId::ZERO {
            return b;
        }
        if b == ValueId::ZERO {
            return a;
        }
        let key = if a <= b { (a, b) } else { (b, a) };
        if let Some(&v) = self.sums.get(&key) {
            return v;
        }
        let (Value::Sum(x), Value::Sum(y)) = (self.get(a), self.get(b)) else { unreachable!("Undef handled above") };
        let mut merged: Vec<(Term, u32)> = Vec::with_capacity(x.len() + y.len());
        let (mut i, mut j) = (0, 0);
        while i < x.len() || j < y.len() {
            if j == y.len() || (i < x.len() && x[i].0 < y[j].0) {
                merged.push(x[i].clone());
                i += 1;
            } else if i == x.len() || y[j].0 < x[i].0 {
                merged.push(y[j].clone());
                j += 1;
            } else {
                merged.push((x[i].0.clone(), x[i].1 + y[j].1));
                i += 1;
                j += 1;
            }
        }
        let v = self.intern(Value::Sum(merged));
        self.sums.insert(key, v);
        v
    }

    /// The id of a function template (`2*{}`), registering it if new.
    pub fn func(&mut self, template: &str) -> u32 {
        if let Some(i) = self.funcs.iter().position(|f| f == template) {
            return i as u32;
        }
        self.funcs.push(template.to_string());
        self.funcs.len() as u32 - 1
    }

    /// The template of a function id.
    pub fn func_name(&self, func: u32) -> &str {
        &self.funcs[func as usize]
    }

    /// `func(v)`; `Undef` stays `Undef`.
    pub fn apply(&mut self, func: u32, v: ValueId) -> ValueId {
        if v == ValueId::UNDEF {
            return v;
        }
        if let Some(&r) = self.applies.get(&(func, v)) {
            return r;
        }
        let r = self.intern(Value::Sum(vec![(Term::Apply(func, v), 1)]));
        self.applies.insert((func, v), r);
        r
    }

    /// The image of `v` when every atom `a` is renamed to `atom(a)`, inside uninterpreted
    /// functions too. `renaming` numbers the renaming (0, 1, ...): images are memoised per
    /// number, so one number must always stand for the same `atom` function. `None` when
    /// `atom` has no image for an atom of `v`.
    pub fn rename(&mut self, renaming: usize, v: ValueId, atom: &impl Fn(Atom) -> Option<Atom>) -> Option<ValueId> {
        if let Some(&r) = self.renamed.get(renaming).and_then(|m| m.get(v.0 as usize)) {
            if r != NOT_RENAMED {
                return Some(r);
            }
        }
        let Value::Sum(terms) = self.get(v).clone() else { return Some(v) };
        let mut out = Vec::with_capacity(terms.len());
        for (term, count) in terms {
            let t = match term {
                Term::Atom(a) => Term::Atom(atom(a)?),
                Term::Apply(f, inner) => Term::Apply(f, self.rename(renaming, inner, atom)?),
            };
            out.push((t, count));
        }
        // An injective renaming merges no terms; a non-injective one is merged here.
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.dedup_by(|b, a| {
            let same = a.0 == b.0;
            if same {
                a.1 += b.1;
            }
            same
        });
        let r = self.intern(Value::Sum(out));
        if self.renamed.len() <= renaming {
            self.renamed.resize_with(renaming + 1, Vec::new);
        }
        let memo = &mut self.renamed[renaming];
        if memo.len() <= v.0 as usize {
            memo.resize(self.values.len(), NOT_RENAMED);
        }
        memo[v.0 as usize] = r;
        Some(r)
    }

    /// Compares two values by content, not by id: the same answer in every table that
    /// holds them, whatever order they were interned in. `Undef` comes first; sums compare
    /// as sorted lists of terms, atoms before function applications.
    pub fn cmp_content(&self, a: ValueId, b: ValueId) -> Ordering {
        if a == b {
            return Ordering::Equal;
        }
        match (self.get(a), self.get(b)) {
            (Value::Undef, _) => Ordering::Less,
            (_, Value::Undef) => Ordering::Greater,
            (Value::Sum(x), Value::Sum(y)) => {
                let plain = |t: &[(Term, u32)]| t.iter().all(|(t, _)| matches!(t, Term::Atom(_)));
                if plain(x) && plain(y) {
                    // Atoms sort by content already.
                    return x.cmp(y);
                }
                let (mut x, mut y) = (x.clone(), y.clone());
                x.sort_by(|p, q| self.cmp_term(&p.0, &q.0));
                y.sort_by(|p, q| self.cmp_term(&p.0, &q.0));
                for (p, q) in x.iter().zip(&y) {
                    let o = self.cmp_term(&p.0, &q.0).then(p.1.cmp(&q.1));
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                x.len().cmp(&y.len())
            }
        }
    }

    fn cmp_term(&self, a: &Term, b: &Term) -> Ordering {
        match (a, b) {
            (Term::Atom(x), Term::Atom(y)) => x.cmp(y),
            (Term::Atom(_), Term::Apply(..)) => Ordering::Less,
            (Term::Apply(..), Term::Atom(_)) => Ordering::Greater,
            (Term::Apply(f, v), Term::Apply(g, w)) => f.cmp(g).then_with(|| self.cmp_content(*v, *w)),
        }
    }

    /// Forgets every value with an id of `len` or more, and every memoised result that
    /// involves one (undoes the interning done since the table had `len` values).
    pub fn truncate(&mut self, len: usize) {
        if len >= self.values.len() {
            return;
        }
        let keep = |v: &ValueId| (v.0 as usize) < len;
        self.values.truncate(len);
        self.index.retain(|v| keep(v));
        self.sums.retain(|(a, b), v| keep(a) && keep(b) && keep(v));
        self.applies.retain(|(_, a), v| keep(a) && keep(v));
        for memo in &mut self.renamed {
            memo.truncate(len);
            for r in memo.iter_mut() {
                if *r != NOT_RENAMED && !keep(r) {
                    *r = NOT_RENAMED;
                }
            }
        }
    }

    /// Appends the values `other` holds beyond this table's length, with the same ids.
    /// `self` must be a prefix of `other` (a replica that has fallen behind), and both
    /// must know the same functions.
    pub fn catch_up(&mut self, other: &ValueTable) {
        debug_assert_eq!(self.funcs, other.funcs, "replicas share their functions");
        for v in &other.values[self.values.len().min(other.values.len())..] {
            let id = self.intern(v.clone());
            debug_assert_eq!(id.0 as usize + 1, self.values.len(), "a replica is a prefix of its table");
        }
    }

    /// Prints a value in the seed's notation: `-` for undefined, `0` for the empty sum.
    /// A value longer than [`MAX_SHOWN`] characters is cut there and ends in `…` (a
    /// kernel's compute nests shared terms, whose full text can grow exponentially).
    pub fn display(&self, id: ValueId, notation: Notation) -> String {
        let mut out = String::new();
        if !self.write(id, notation, &mut out) {
            out = cut_short(&out, MAX_SHOWN);
            if !out.ends_with('…') {
                out.push('…');
            }
        }
        out
    }

    /// Appends `id` to `out`; false once `out` is longer than [`MAX_SHOWN`] (the rest is
    /// not written).
    fn write(&self, id: ValueId, notation: Notation, out: &mut String) -> bool {
        let Value::Sum(terms) = self.get(id) else {
            out.push('-');
            return true;
        };
        if terms.is_empty() {
            out.push('0');
            return true;
        }
        if let Notation::BlockHalves { devices } = notation {
            if let Some(s) = self.display_block_half(terms, devices) {
                out.push_str(&s);
                return out.len() <= MAX_SHOWN;
            }
        }
        let start = out.len();
        for (term, count) in terms {
            for _ in 0..*count {
                if out.len() > start {
                    out.push('+');
                }
                match term {
                    Term::Atom(a) => match notation {
                        Notation::Plain => {
                            let _ = write!(out, "{}{}", input_letter(a.input), a.origin);
                            // Cells past an input's first are told apart by their index.
                            match (a.block, a.part) {
                                (0, 0) => {}
                                (b, 0) => {
                                    let _ = write!(out, "[{b}]");
                                }
                                (b, p) => {
                                    let _ = write!(out, "[{b}, {p}]");
                                }
                            }
                        }
                        Notation::BlockHalves { .. } => {
                            let input = if a.input == 0 { String::new() } else { input_letter(a.input) };
                            let _ = write!(out, "{input}{}{}({})", half_letter(a.part), a.block, a.origin);
                        }
                    },
                    Term::Apply(f, v) => {
                        // Each `{}` of the template is the argument (cut short too).
                        let mut inner = String::new();
                        let whole = self.write(*v, notation, &mut inner);
                        if inner.contains('+') {
                            inner = format!("({inner})");
                        }
                        for (k, part) in self.funcs[*f as usize].split("{}").enumerate() {
                            if k > 0 {
                                out.push_str(&inner);
                                if !whole {
                                    return false;
                                }
                            }
                            out.push_str(part);
                        }
                    }
                }
                if out.len() > MAX_SHOWN {
                    return false;
                }
            }
        }
        true
    }

    /// The innermost pair of arguments where `a` and `b` differ: while both are one
    /// application of the same function (or sums equal but for one such application),
    /// their arguments; else `(a, b)`. A long wrong result is told by this part.
    pub fn difference(&self, a: ValueId, b: ValueId) -> (ValueId, ValueId) {
        let (Value::Sum(x), Value::Sum(y)) = (self.get(a), self.get(b)) else {
            return (a, b);
        };
        if x.len() != y.len() {
            return (a, b);
        }
        let mut differing = x.iter().zip(y).filter(|(p, q)| p != q);
        match (differing.next(), differing.next()) {
            (Some(((Term::Apply(f, u), m), (Term::Apply(g, v), n))), None) if f == g && m == n => {
                self.difference(*u, *v)
            }
            _ => (a, b),
        }
    }

    fn display_block_half(&self, terms: &[(Term, u32)], devices: u16) -> Option<String> {
        let mut key = None;
        let mut origins = Vec::new();
        for (term, count) in terms {
            let Term::Atom(a) = term else { return None };
            if a.input != 0 || *key.get_or_insert((a.block, a.part)) != (a.block, a.part) {
                return None;
            }
            for _ in 0..*count {
                origins.push(a.origin);
            }
        }
        let (block, part) = key?;
        let n = devices.max(1) as i64;
        // Hops from the block's own device, leftwards for top halves, rightwards for bottom.
        let hops = |o: u16| {
            let d = if part == 0 { block as i64 - o as i64 } else { o as i64 - block as i64 };
            d.rem_euclid(n)
        };
        origins.sort_by_key(|&o| (hops(o), o));
        let origins: Vec<String> = origins.iter().map(|o| o.to_string()).collect();
        Some(format!("{}{}({})", half_letter(part), block, origins.join("+")))
    }
}

fn half_letter(part: u16) -> char {
    match part {
        0 => 'T',
        1 => 'B',
        _ => '?',
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn atom(origin: u16, block: u16, part: u16) -> Atom {
        Atom::first_input(origin, block, part)
    }

    #[test]
    fn plain_notation_tells_inputs_and_cells_apart() {
        let mut t = ValueTable::new();
        let a = t.atom(atom(0, 0, 0));
        let b = t.atom(atom(0, 2, 0));
        let c = t.atom(Atom { origin: 1, block: 2, part: 1, input: 1 });
        let ab = t.add(a, b);
        let sum = t.add(ab, c);
        assert_eq!(t.display(sum, Notation::Plain), "x0+x0[2]+y1[2, 1]");
    }

    #[test]
    fn sums_are_multisets_and_undef_absorbs() {
        let mut t = ValueTable::new();
        let a = t.atom(atom(0, 0, 0));
        let b = t.atom(atom(3, 0, 0));
        let ab = t.add(a, b);
        assert_eq!(ab, t.add(b, a));
        assert_eq!(t.display(ab, Notation::Plain), "x0+x3");
        let twice = t.add(ab, a);
        assert_ne!(twice, ab);
        assert_eq!(t.display(twice, Notation::Plain), "x0+x0+x3");
        assert_eq!(t.add(ab, ValueId::UNDEF), ValueId::UNDEF);
        assert_eq!(t.add(ValueId::ZERO, ab), ab);
        assert_eq!(t.display(ValueId::UNDEF, Notation::Plain), "-");
    }

    #[test]
    fn block_half_notation_matches_the_seed() {
        let mut t = ValueTable::new();
        let v = t.sum_of([atom(2, 2, 0), atom(1, 2, 0), atom(0, 2, 0)]);
        let four = Notation::BlockHalves { devices: 4 };
        assert_eq!(t.display(v, four), "T2(2+1+0)");
        let b = t.sum_of([atom(0, 3, 1), atom(1, 3, 1), atom(3, 3, 1)]);
        assert_eq!(t.display(b, four), "B3(3+0+1)");
        let mixed = t.sum_of([atom(2, 2, 0), atom(1, 3, 1)]);
        assert_eq!(t.display(mixed, four), "B3(1)+T2(2)");
    }

    #[test]
    fn renaming_is_memoised_and_content_order_ignores_ids() {
        let mut t = ValueTable::new();
        let a = t.atom(atom(0, 0, 0));
        let b = t.atom(atom(1, 0, 0));
        let ab = t.add(a, b);
        let next = |x: Atom| (x.origin < 3).then_some(Atom { origin: (x.origin + 1) % 3, ..x });
        let c = t.rename(0, ab, &next).unwrap();
        assert_eq!(t.display(c, Notation::Plain), "x1+x2");
        assert_eq!(t.rename(0, ab, &next), Some(c));
        let f = t.func("2*{}");
        let fa = t.apply(f, ab);
        let fc = t.rename(0, fa, &next).unwrap();
        assert_eq!(t.display(fc, Notation::Plain), "2*(x1+x2)");
        assert_eq!(t.rename(1, a, &|_| None), None);
        // Two tables interning the same values in different orders agree on their order.
        let mut u = ValueTable::new();
        let ub = u.atom(atom(1, 0, 0));
        let ua = u.atom(atom(0, 0, 0));
        assert_eq!(t.cmp_content(a, b), u.cmp_content(ua, ub));
        assert_eq!(t.cmp_content(a, b), Ordering::Less);
        assert_eq!(t.cmp_content(ValueId::UNDEF, a), Ordering::Less);
        assert_eq!(t.cmp_content(fa, a), Ordering::Greater);
    }

    #[test]
    fn a_replica_truncates_and_catches_up() {
        let mut main = ValueTable::new();
        let a = main.atom(atom(0, 0, 0));
        let mut replica = main.clone();
        let before = replica.len();
        let b = main.atom(atom(1, 0, 0));
        let local = replica.atom(atom(2, 0, 0));
        assert_eq!(local, b, "both handed out the same new id");
        replica.truncate(before);
        replica.catch_up(&main);
        assert_eq!(replica.atom(atom(1, 0, 0)), b);
        let ab = replica.add(a, b);
        assert_eq!(main.add(a, b), ab);
    }

    #[test]
    fn functions_are_uninterpreted() {
        let mut t = ValueTable::new();
        let x = t.atom(atom(0, 0, 0));
        let double = t.func("2*{}");
        let inc = t.func("{}+1");
        let y = t.apply(double, x);
        let z = t.apply(inc, y);
        assert_eq!(t.display(z, Notation::Plain), "2*x0+1");
        assert_eq!(t.apply(inc, ValueId::UNDEF), ValueId::UNDEF);
        // Two values that differ deep inside are told by the arguments that differ.
        let w = t.atom(atom(1, 0, 0));
        let (dx, dw) = (t.apply(double, x), t.apply(double, w));
        let (zx, zw) = (t.apply(inc, dx), t.apply(inc, dw));
        assert_eq!(t.difference(zx, zw), (x, w));
        assert_eq!(t.difference(x, zx), (x, zx));
    }
}
