//! Stores of computed data: the DSL's simple operations, or a [`Formula`] of every cell
//! the value reads.

use super::{Compiler, Here};
use crate::error::{ErrorKind, ModelError};
use crate::formula::{Formula, Node};
use crate::ir::{Data, RefExpr};
use crate::program::{CellId, ComputeKind, Op};
use crate::value::{cut_short, MAX_SHOWN};

impl Compiler<'_> {
    /// A store of computed data: the simple shapes become the DSL's operations (zeros,
    /// copy, `+=`, one-argument map), anything else a [`Formula`].
    pub(super) fn compute(
        &mut self,
        dst: &RefExpr,
        value: &Data,
        cellwise: bool,
        here: &Here<'_>,
    ) -> Result<(Op, String), ModelError> {
        let what = format!("{}[...] = ...", self.buffer_name(dst));
        let (dcells, _) = self.cells_of(dst, here.device, here, &what)?;
        let dname = self.view_name(&dcells);
        let same = |a: &RefExpr| a == dst;
        let simple: Option<(ComputeKind, Option<&RefExpr>, String)> = match value {
            Data::Zeros => Some((ComputeKind::Zero, None, format!("{dname} = zeros"))),
            Data::Load(src) => Some((ComputeKind::Copy, Some(src), String::new())),
            Data::Add(a, b) if cellwise => match (a.as_ref(), b.as_ref()) {
                (Data::Load(x), Data::Load(y)) if same(x) => Some((ComputeKind::Add, Some(y), String::new())),
                (Data::Load(x), Data::Load(y)) if same(y) => Some((ComputeKind::Add, Some(x), String::new())),
                _ => None,
            },
            Data::Apply { func, args } if cellwise => match args.as_slice() {
                [Data::Load(src)] => Some((ComputeKind::Apply(self.values.func(func)), Some(src), func.clone())),
                _ => None,
            },
            _ => None,
        };
        if let Some((kind, src, text)) = simple {
            let scells = match src {
                Some(r) => self.cells_of(r, here.device, here, &what)?.0,
                None => Vec::new(),
            };
            if kind != ComputeKind::Zero && scells.len() != dcells.len() {
                return Err(self.err(
                    here,
                    &what,
                    ErrorKind::SizeMismatch,
                    format!("{} cells assigned from {}", dcells.len(), scells.len()),
                ));
            }
            let sname = self.view_name(&scells);
            let label = match kind {
                ComputeKind::Zero => format!("{dname} = zeros"),
                ComputeKind::Copy => format!("{dname} = {sname}"),
                ComputeKind::Add => format!("{dname} += {sname}"),
                _ => format!("{dname} = {}", text.replace("{}", &sname)),
            };
            return Ok((Op::Compute { kind, dst: self.span(dcells), src: self.span(scells) }, label));
        }
        let mut leaves = Vec::new();
        let mut src = Vec::new();
        for r in value.loads() {
            let (cells, _) = self.cells_of(r, here.device, here, &what)?;
            if cellwise && cells.len() != dcells.len() {
                return Err(self.err(
                    here,
                    &what,
                    ErrorKind::SizeMismatch,
                    format!(
                        "cell by cell: {} has {} cell(s), the destination {}",
                        self.view_name(&cells),
                        cells.len(),
                        dcells.len()
                    ),
                ));
            }
            leaves.push((src.len() as u32, cells.len() as u32));
            src.extend(cells);
        }
        let mut next_leaf = 0;
        let root = self.formula_node(value, &mut next_leaf, here, &what)?;
        let arity = max_arity(value);
        let arg_tags = (0..arity).map(|k| self.values.func(&format!("#{k}({{}})"))).collect();
        let position_tags = if cellwise {
            Vec::new()
        } else {
            (0..dcells.len()).map(|i| self.values.func(&format!("{{}}[{i}]"))).collect()
        };
        let label = format!("{dname} = {}", cut_short(&self.render_data(value, &src, &leaves, &mut 0), MAX_SHOWN));
        let formula = Formula { root, leaves, cellwise, arg_tags, position_tags };
        let next = self.formulas.len() as u32;
        let id = *self.formula_ids.entry(formula.clone()).or_insert_with(|| {
            self.formulas.push(formula);
            next
        });
        let kind = ComputeKind::Formula(id);
        Ok((Op::Compute { kind, dst: self.span(dcells), src: self.span(src) }, label))
    }

    pub(super) fn formula_node(
        &mut self,
        d: &Data,
        leaf: &mut usize,
        here: &Here<'_>,
        what: &str,
    ) -> Result<Node, ModelError> {
        Ok(match d {
            Data::Zeros => Node::Zero,
            Data::Load(_) => {
                *leaf += 1;
                Node::Leaf(*leaf - 1)
            }
            Data::Add(a, b) => Node::Add(
                Box::new(self.formula_node(a, leaf, here, what)?),
                Box::new(self.formula_node(b, leaf, here, what)?),
            ),
            Data::Apply { func, args } => {
                let f = self.values.func(func);
                let args = args.iter().map(|a| self.formula_node(a, leaf, here, what)).collect::<Result<_, _>>()?;
                Node::Apply(f, args)
            }
            Data::Const(name) => Node::Apply(self.values.func(name), Vec::new()),
            Data::Index(e) => {
                let v = self.eval(e, here, what)?;
                Node::Apply(self.values.func(&format!("int({v})")), Vec::new())
            }
        })
    }

    pub(super) fn render_data(&self, d: &Data, src: &[CellId], leaves: &[(u32, u32)], leaf: &mut usize) -> String {
        match d {
            Data::Zeros => "0".to_string(),
            Data::Load(_) => {
                let (off, len) = leaves[*leaf];
                *leaf += 1;
                self.view_name(&src[off as usize..(off + len) as usize])
            }
            Data::Add(a, b) => {
                let a = self.render_data(a, src, leaves, leaf);
                format!("{a}+{}", self.render_data(b, src, leaves, leaf))
            }
            Data::Apply { func, args } => {
                let mut out = func.clone();
                for a in args {
                    let text = self.render_data(a, src, leaves, leaf);
                    out = out.replacen("{}", &text, 1);
                }
                out
            }
            Data::Const(name) => name.clone(),
            Data::Index(e) => e.to_string(),
        }
    }
}

/// The most arguments of a function in a value.
fn max_arity(d: &Data) -> usize {
    match d {
        Data::Add(a, b) => max_arity(a).max(max_arity(b)),
        Data::Apply { args, .. } => args.iter().map(max_arity).max().unwrap_or(0).max(args.len()),
        _ => 0,
    }
}
