//! Compiled values of stores that are more than a copy, a sum or a one-argument map:
//! `o[...] = x[...] @ w[...]`, `a[...] = b[...] + c[...]`, casts and scalings of several
//! views. A [`Formula`] reads the cells of its leaf views (concatenated in the operation's
//! source span) and gives the value of each destination cell, with the symbolic
//! operations of [`ValueTable`] only (sums and uninterpreted functions), so every engine
//! agrees on it.

use crate::value::{ValueId, ValueTable};

/// A node of a compiled formula.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    /// The empty sum.
    Zero,
    /// Leaf `k` of [`Formula::leaves`].
    Leaf(usize),
    /// The symbolic sum of two values.
    Add(Box<Node>, Box<Node>),
    /// An uninterpreted function (its id in the value table) of its arguments; several
    /// arguments are tagged with their position ([`Formula::arg_tags`]) and summed.
    Apply(u32, Vec<Node>),
}

/// How a formula reads its leaves and which value each destination cell gets.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Formula {
    /// The value, from the leaves.
    pub root: Node,
    /// Each leaf as `(offset, len)` in the operation's source span.
    pub leaves: Vec<(u32, u32)>,
    /// Cell `i` of the destination reads cell `i` of every leaf; otherwise it reads the
    /// sum of every cell of each leaf and the result is tagged with the cell's position.
    pub cellwise: bool,
    /// The function ids tagging argument 0, 1, ... of multi-argument functions.
    pub arg_tags: Vec<u32>,
    /// The function ids tagging destination cell 0, 1, ... when not cellwise.
    pub position_tags: Vec<u32>,
}

impl Formula {
    /// The value of destination cell `i`, given the values of the source span's cells.
    pub fn eval(&self, i: usize, src: &[ValueId], values: &mut ValueTable) -> ValueId {
        let v = self.node(&self.root, i, src, values);
        match self.position_tags.get(i) {
            Some(&tag) if !self.cellwise && self.position_tags.len() > 1 => values.apply(tag, v),
            _ => v,
        }
    }

    fn leaf(&self, k: usize, i: usize, src: &[ValueId], values: &mut ValueTable) -> ValueId {
        let (off, len) = self.leaves[k];
        let cells = &src[off as usize..(off + len) as usize];
        if self.cellwise {
            return cells.get(i).copied().unwrap_or(ValueId::UNDEF);
        }
        let mut acc = ValueId::ZERO;
        for &c in cells {
            acc = values.add(acc, c);
        }
        acc
    }

    fn node(&self, n: &Node, i: usize, src: &[ValueId], values: &mut ValueTable) -> ValueId {
        match n {
            Node::Zero => ValueId::ZERO,
            Node::Leaf(k) => self.leaf(*k, i, src, values),
            Node::Add(a, b) => {
                let (a, b) = (self.node(a, i, src, values), self.node(b, i, src, values));
                values.add(a, b)
            }
            Node::Apply(f, args) => {
                let arg = match args.as_slice() {
                    [] => ValueId::ZERO,
                    [one] => self.node(one, i, src, values),
                    many => {
                        let mut acc = ValueId::ZERO;
                        for (k, a) in many.iter().enumerate() {
                            let v = self.node(a, i, src, values);
                            let tagged = values.apply(self.arg_tags[k], v);
                            acc = values.add(acc, tagged);
                        }
                        acc
                    }
                };
                values.apply(*f, arg)
            }
        }
    }

    /// The same computation on numbers (the threaded engines' real data): sums are
    /// additions and function `f` is `apply(f, x)` elementwise, so the result matches
    /// the numeric value of [`Formula::eval`]'s symbolic one.
    pub fn eval_numeric(
        &self,
        i: usize,
        src: &[Box<[f32]>],
        elems: usize,
        apply: impl Fn(u32, f32) -> f32 + Copy,
    ) -> Box<[f32]> {
        let v = self.numeric(&self.root, i, src, elems, apply);
        match self.position_tags.get(i) {
            Some(&tag) if !self.cellwise && self.position_tags.len() > 1 => v.iter().map(|&x| apply(tag, x)).collect(),
            _ => v,
        }
    }

    fn numeric(
        &self,
        n: &Node,
        i: usize,
        src: &[Box<[f32]>],
        elems: usize,
        apply: impl Fn(u32, f32) -> f32 + Copy,
    ) -> Box<[f32]> {
        let add = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x + y).collect::<Box<[f32]>>();
        match n {
            Node::Zero => vec![0.0; elems].into(),
            Node::Leaf(k) => {
                let (off, len) = self.leaves[*k];
                let cells = &src[off as usize..(off + len) as usize];
                if self.cellwise {
                    return cells.get(i).cloned().unwrap_or_else(|| vec![f32::NAN; elems].into());
                }
                cells.iter().fold(vec![0.0; elems].into(), |acc: Box<[f32]>, c| add(&acc, c))
            }
            Node::Add(a, b) => add(&self.numeric(a, i, src, elems, apply), &self.numeric(b, i, src, elems, apply)),
            Node::Apply(f, args) => {
                let arg: Box<[f32]> = match args.as_slice() {
                    [] => vec![0.0; elems].into(),
                    [one] => self.numeric(one, i, src, elems, apply),
                    many => many.iter().enumerate().fold(vec![0.0; elems].into(), |acc: Box<[f32]>, (k, a)| {
                        let v = self.numeric(a, i, src, elems, apply);
                        let tagged: Box<[f32]> = v.iter().map(|&x| apply(self.arg_tags[k], x)).collect();
                        add(&acc, &tagged)
                    }),
                };
                arg.iter().map(|&x| apply(*f, x)).collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{Atom, Notation};

    #[test]
    fn matmul_of_two_views_reads_every_cell_and_keeps_arguments_apart() {
        let mut t = ValueTable::new();
        let x: Vec<ValueId> = (0..3).map(|o| t.atom(Atom::first_input(o, 0, 0))).collect();
        let dot = t.func("dot({}, {})");
        let tags = vec![t.func("#0({})"), t.func("#1({})")];
        let pos = vec![t.func("{}[0]"), t.func("{}[1]")];
        let f = Formula {
            root: Node::Apply(dot, vec![Node::Leaf(0), Node::Leaf(1)]),
            leaves: vec![(0, 2), (2, 1)],
            cellwise: false,
            arg_tags: tags.clone(),
            position_tags: pos,
        };
        let v0 = f.eval(0, &x, &mut t);
        let v1 = f.eval(1, &x, &mut t);
        assert_ne!(v0, v1, "cells of a non-cellwise result are told apart");
        let swapped = Formula { leaves: vec![(1, 2), (0, 1)], ..f.clone() };
        assert_ne!(swapped.eval(0, &x, &mut t), v0, "arguments are not commutative");
        let undef = [x[0], ValueId::UNDEF, x[2]];
        assert_eq!(f.eval(0, &undef, &mut t), ValueId::UNDEF);
        assert!(t.display(v0, Notation::Plain).contains("dot("));
    }
}
