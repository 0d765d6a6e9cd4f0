//! Integer expressions over `axis_index`, `program_id`, `num_programs`, constants and
//! loop variables.
//!
//! These are the run-time values of a Pallas kernel that control flow (`pl.when`, loop
//! bounds), indices (`.at[...]`, `pl.ds`) and device ids may depend on. They are evaluated
//! per device and grid index when a kernel is compiled for a mesh; no data flows into
//! them. The semantics are JAX's on int32 scalars without wrap-around (an overflow of
//! `i64` is an error): `/` truncates (`lax.div`), `%` has the sign of the dividend
//! (`lax.rem`). Python's floor `%` and `//` on traced ints are written with these, as JAX
//! traces them (`rem`, `sign`, `select_n`), never as a floor operator.

use std::fmt;
use std::ops::{Add, Div, Mul, Neg, Not, Rem, Sub};

use serde::{Deserialize, Serialize};

use crate::error::{ErrorKind, ModelError};
use crate::mesh::Mesh;

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BinOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `lax.div`: truncating division.
    Div,
    /// `lax.rem`: remainder with the sign of the dividend.
    Rem,
    /// `a == b` (1 or 0)
    Eq,
    /// `a != b`
    Ne,
    /// `a < b`
    Lt,
    /// `a <= b`
    Le,
    /// `a > b`
    Gt,
    /// `a >= b`
    Ge,
    /// logical and of two conditions
    And,
    /// logical or of two conditions
    Or,
    /// logical exclusive or of two conditions
    Xor,
    /// `min(a, b)`
    Min,
    /// `max(a, b)`
    Max,
    /// Division that fails unless the remainder is 0 (indices converted to cells).
    ExactDiv,
    /// bitwise and of integers
    BitAnd,
    /// bitwise or of integers
    BitOr,
    /// bitwise exclusive or of integers
    BitXor,
    /// `a << b`
    Shl,
    /// `a >> b` (arithmetic)
    Shr,
}

impl BinOp {
    fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
            BinOp::Xor => "^^",
            BinOp::Min => "min",
            BinOp::Max => "max",
            BinOp::ExactDiv => "/!",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
        }
    }
}

/// An integer (or boolean, as 0/1) expression of the kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Expr {
    /// A constant.
    Const(i64),
    /// `lax.axis_index(name)`: this device's coordinate on the axis.
    AxisIndex(String),
    /// The size of the named axis (`num_devices` for a 1-D ring).
    AxisSize(String),
    /// `pl.program_id(dim)`: the current grid index on a dimension.
    ProgramId(usize),
    /// `pl.num_programs(dim)`: the grid size on a dimension.
    NumPrograms(usize),
    /// `-a`
    Neg(Box<Expr>),
    /// logical not (`~cond`)
    Not(Box<Expr>),
    /// `a op b`; `%` is `lax.rem` (the sign of the dividend) and `/` truncates.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `lax.sign`: -1, 0 or 1.
    Sign(Box<Expr>),
    /// `abs(a)`
    Abs(Box<Expr>),
    /// bitwise not of an integer
    BitNot(Box<Expr>),
    /// `lax.select_n(which, case0, case1, ...)`: the case `which` names (only that case is
    /// evaluated); an error if `which` is out of range. `jnp.where(c, a, b)` is
    /// `select_n(c, b, a)`.
    Select(Box<Expr>, Vec<Expr>),
    /// `in_range(i, size, dim)`: `i`, or an error unless `0 <= i < size`: the index of
    /// dimension `dim` of a multi-dimensional array, checked on its own before it is folded
    /// into a flat index (so `sems.at[0, 2, 1]` of a `(3, 2, 2)` array is out of range, not
    /// another semaphore). Shown as `i`.
    InRange(Box<Expr>, i64, usize),
    /// A loop variable (see [`crate::ir::StmtKind::Loop`]).
    Var(String),
    /// An expression that cannot be evaluated, with the reason (a front end's view that
    /// does not fit the cells, in a statement the front end never saw reached).
    Fail(String),
}

/// Where an expression is evaluated: one device at one grid index.
#[derive(Clone, Copy, Debug)]
pub struct EvalEnv<'a> {
    /// The mesh.
    pub mesh: &'a Mesh,
    /// This device's coordinates.
    pub coords: &'a [usize],
    /// The grid shape.
    pub grid: &'a [usize],
    /// The current grid index.
    pub program_ids: &'a [usize],
    /// The loop variables in scope, innermost last.
    pub vars: &'a [(String, i64)],
    /// Variables holding no value, with why (using one is an error).
    pub poisoned: &'a [(String, String)],
}

impl Expr {
    fn binary(op: BinOp, a: Expr, b: impl Into<Expr>) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b.into()))
    }

    /// `self == other`.
    pub fn equals(self, other: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Eq, self, other)
    }

    /// `self != other`.
    pub fn not_equals(self, other: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Ne, self, other)
    }

    /// `self < other`.
    pub fn less(self, other: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Lt, self, other)
    }

    /// `self <= other`.
    pub fn less_eq(self, other: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Le, self, other)
    }

    /// `self > other`.
    pub fn greater(self, other: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Gt, self, other)
    }

    /// `self >= other`.
    pub fn greater_eq(self, other: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Ge, self, other)
    }

    /// `jnp.logical_and(self, other)`.
    pub fn and(self, other: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::And, self, other)
    }

    /// `jnp.logical_or(self, other)`.
    pub fn or(self, other: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Or, self, other)
    }

    /// `min(self, other)`.
    pub fn min(self, other: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Min, self, other)
    }

    /// `max(self, other)`.
    pub fn max(self, other: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Max, self, other)
    }

    /// `jnp.where(self, then, otherwise)`: `select_n(self, otherwise, then)`.
    pub fn select(self, then: impl Into<Expr>, otherwise: impl Into<Expr>) -> Expr {
        Expr::Select(Box::new(self), vec![otherwise.into(), then.into()])
    }

    /// Python's floor `self % n` on traced ints, written as JAX traces it:
    /// `select_n((r != 0) & (sign(r) != sign(n)), r, r + n)` with `r = lax.rem(self, n)`.
    pub fn floor_mod(self, n: impl Into<Expr>) -> Expr {
        let n = n.into();
        let r = Expr::binary(BinOp::Rem, self, n.clone());
        let fix =
            r.clone().not_equals(0).and(Expr::Sign(Box::new(r.clone())).not_equals(Expr::Sign(Box::new(n.clone()))));
        Expr::Select(Box::new(fix), vec![r.clone(), r + n])
    }

    /// Evaluates the expression on one device at one grid index.
    pub fn eval(&self, env: &EvalEnv<'_>) -> Result<i64, ModelError> {
        let bad = |m: String| ModelError::new(ErrorKind::BadExpression, m);
        Ok(match self {
            Expr::Const(c) => *c,
            Expr::AxisIndex(name) => {
                let pos = env.mesh.axis_position(name).ok_or_else(|| {
                    bad(format!("axis_index(\"{name}\"): the mesh ({}) has no axis `{name}`", env.mesh))
                })?;
                env.coords[pos] as i64
            }
            Expr::AxisSize(name) => {
                let pos = env.mesh.axis_position(name).ok_or_else(|| {
                    bad(format!("axis_size(\"{name}\"): the mesh ({}) has no axis `{name}`", env.mesh))
                })?;
                env.mesh.axes()[pos].size as i64
            }
            Expr::ProgramId(dim) => *env
                .program_ids
                .get(*dim)
                .ok_or_else(|| bad(format!("program_id({dim}): the grid has {} dimension(s)", env.grid.len())))?
                as i64,
            Expr::NumPrograms(dim) => *env
                .grid
                .get(*dim)
                .ok_or_else(|| bad(format!("num_programs({dim}): the grid has {} dimension(s)", env.grid.len())))?
                as i64,
            Expr::Neg(a) => a.eval(env)?.checked_neg().ok_or_else(|| bad(format!("overflow in {self}")))?,
            Expr::Not(a) => (a.eval(env)? == 0) as i64,
            Expr::Sign(a) => a.eval(env)?.signum(),
            Expr::Abs(a) => a.eval(env)?.checked_abs().ok_or_else(|| bad(format!("overflow in {self}")))?,
            Expr::BitNot(a) => !a.eval(env)?,
            Expr::Select(which, cases) => {
                let w = which.eval(env)?;
                let case = usize::try_from(w).ok().and_then(|i| cases.get(i)).ok_or_else(|| {
                    bad(format!("select_n index {w} out of range for {} case(s) in {self}", cases.len()))
                })?;
                case.eval(env)?
            }
            Expr::InRange(i, size, dim) => {
                let v = i.eval(env)?;
                if !(0..*size).contains(&v) {
                    return Err(bad(format!("index {v} out of range for dimension {dim} (size {size}) in {self}")));
                }
                v
            }
            Expr::Var(name) => {
                if let Some((_, why)) = env.poisoned.iter().find(|(n, _)| n == name) {
                    return Err(bad(why.clone()));
                }
                env.vars.iter().rev().find(|(n, _)| n == name).map(|(_, v)| *v).ok_or_else(|| {
                    bad(format!("loop variable `{name}` is not defined here (used before its loop ran)"))
                })?
            }
            Expr::Fail(reason) => return Err(bad(reason.clone())),
            Expr::Binary(op, a, b) => {
                let (x, y) = (a.eval(env)?, b.eval(env)?);
                let overflow = || bad(format!("overflow in {self}"));
                match op {
                    BinOp::Add => x.checked_add(y).ok_or_else(overflow)?,
                    BinOp::Sub => x.checked_sub(y).ok_or_else(overflow)?,
                    BinOp::Mul => x.checked_mul(y).ok_or_else(overflow)?,
                    BinOp::Div | BinOp::Rem | BinOp::ExactDiv if y == 0 => {
                        return Err(bad(format!("division by zero in {self}")))
                    }
                    BinOp::Div => x.checked_div(y).ok_or_else(overflow)?,
                    BinOp::Rem => x.checked_rem(y).ok_or_else(overflow)?,
                    BinOp::ExactDiv => {
                        if x.checked_rem(y).ok_or_else(overflow)? != 0 {
                            return Err(bad(format!("{x} is not a multiple of {y} in {self}")));
                        }
                        x.checked_div(y).ok_or_else(overflow)?
                    }
                    BinOp::Min => x.min(y),
                    BinOp::Max => x.max(y),
                    BinOp::Xor => ((x != 0) != (y != 0)) as i64,
                    BinOp::BitAnd => x & y,
                    BinOp::BitOr => x | y,
                    BinOp::BitXor => x ^ y,
                    BinOp::Shl | BinOp::Shr if !(0..64).contains(&y) => {
                        return Err(bad(format!("shift by {y} in {self}")))
                    }
                    BinOp::Shl => x.checked_shl(y as u32).ok_or_else(overflow)?,
                    BinOp::Shr => x >> y,
                    BinOp::Eq => (x == y) as i64,
                    BinOp::Ne => (x != y) as i64,
                    BinOp::Lt => (x < y) as i64,
                    BinOp::Le => (x <= y) as i64,
                    BinOp::Gt => (x > y) as i64,
                    BinOp::Ge => (x >= y) as i64,
                    BinOp::And => (x != 0 && y != 0) as i64,
                    BinOp::Or => (x != 0 || y != 0) as i64,
                }
            }
        })
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Const(c) => write!(f, "{c}"),
            Expr::AxisIndex(a) => write!(f, "axis_index({a})"),
            Expr::AxisSize(a) => write!(f, "axis_size({a})"),
            Expr::ProgramId(d) => write!(f, "program_id({d})"),
            Expr::NumPrograms(d) => write!(f, "num_programs({d})"),
            Expr::Neg(a) => write!(f, "-{a}"),
            Expr::Not(a) => write!(f, "~{a}"),
            Expr::Binary(op @ (BinOp::Min | BinOp::Max), a, b) => write!(f, "{}({a}, {b})", op.symbol()),
            Expr::Binary(op, a, b) => write!(f, "({a} {} {b})", op.symbol()),
            Expr::Sign(a) => write!(f, "sign({a})"),
            Expr::Abs(a) => write!(f, "abs({a})"),
            Expr::BitNot(a) => write!(f, "!{a}"),
            Expr::Select(w, cases) => {
                write!(f, "select_n({w}")?;
                for c in cases {
                    write!(f, ", {c}")?;
                }
                write!(f, ")")
            }
            Expr::InRange(a, _, _) => write!(f, "{a}"),
            Expr::Var(name) => write!(f, "{name}"),
            Expr::Fail(reason) => write!(f, "<{reason}>"),
        }
    }
}

impl From<i64> for Expr {
    fn from(c: i64) -> Expr {
        Expr::Const(c)
    }
}

impl From<i32> for Expr {
    fn from(c: i32) -> Expr {
        Expr::Const(c as i64)
    }
}

impl From<usize> for Expr {
    fn from(c: usize) -> Expr {
        Expr::Const(c as i64)
    }
}

impl From<&Expr> for Expr {
    fn from(e: &Expr) -> Expr {
        e.clone()
    }
}

macro_rules! arith {
    ($trait:ident, $method:ident, $op:expr) => {
        impl<T: Into<Expr>> $trait<T> for Expr {
            type Output = Expr;
            fn $method(self, rhs: T) -> Expr {
                Expr::binary($op, self, rhs)
            }
        }
        impl<T: Into<Expr>> $trait<T> for &Expr {
            type Output = Expr;
            fn $method(self, rhs: T) -> Expr {
                Expr::binary($op, self.clone(), rhs)
            }
        }
        impl $trait<Expr> for i64 {
            type Output = Expr;
            fn $method(self, rhs: Expr) -> Expr {
                Expr::binary($op, Expr::Const(self), rhs)
            }
        }
        impl $trait<&Expr> for i64 {
            type Output = Expr;
            fn $method(self, rhs: &Expr) -> Expr {
                Expr::binary($op, Expr::Const(self), rhs.clone())
            }
        }
    };
}

arith!(Add, add, BinOp::Add);
arith!(Sub, sub, BinOp::Sub);
arith!(Mul, mul, BinOp::Mul);
arith!(Rem, rem, BinOp::Rem);
arith!(Div, div, BinOp::Div);

impl Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::Neg(Box::new(self))
    }
}

impl Not for Expr {
    type Output = Expr;
    fn not(self) -> Expr {
        Expr::Not(Box::new(self))
    }
}

impl Not for &Expr {
    type Output = Expr;
    fn not(self) -> Expr {
        Expr::Not(Box::new(self.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_neighbours_evaluate_like_lax_rem() {
        let mesh = Mesh::ring(4).unwrap();
        let grid = [3usize];
        for d in 0..4usize {
            let coords = [d];
            let env =
                EvalEnv { mesh: &mesh, coords: &coords, grid: &grid, program_ids: &[1], vars: &[], poisoned: &[] };
            let my_id = Expr::AxisIndex("x".into());
            let left = (my_id.clone() - 1 + 4i64) % 4i64;
            let slot = (my_id - Expr::ProgramId(0) + 4i64) % 4i64;
            assert_eq!(left.eval(&env).unwrap(), ((d + 3) % 4) as i64);
            assert_eq!(slot.eval(&env).unwrap(), ((d + 3) % 4) as i64);
        }
    }

    #[test]
    fn bad_expressions_are_errors() {
        let mesh = Mesh::ring(2).unwrap();
        let env = EvalEnv { mesh: &mesh, coords: &[0], grid: &[2], program_ids: &[0], vars: &[], poisoned: &[] };
        assert!(Expr::AxisIndex("y".into()).eval(&env).is_err());
        assert!(Expr::ProgramId(1).eval(&env).is_err());
        assert!((Expr::Const(1) % 0i64).eval(&env).is_err());
        assert!((Expr::Const(i64::MAX) + 1i64).eval(&env).is_err());
        assert!(Expr::Var("i".into()).eval(&env).is_err());
        assert!(Expr::binary(BinOp::ExactDiv, Expr::Const(12), 8i64).eval(&env).is_err());
        assert!(Expr::Select(Box::new(Expr::Const(2)), vec![Expr::Const(0), Expr::Const(1)]).eval(&env).is_err());
    }

    #[test]
    fn floor_mod_is_pythons_and_select_is_lazy() {
        let mesh = Mesh::ring(2).unwrap();
        let vars = [("i".to_string(), -1i64)];
        let env = EvalEnv { mesh: &mesh, coords: &[0], grid: &[2], program_ids: &[0], vars: &vars, poisoned: &[] };
        let i = Expr::Var("i".into());
        assert_eq!(i.clone().floor_mod(4i64).eval(&env).unwrap(), 3);
        assert_eq!((i.clone() % 4i64).eval(&env).unwrap(), -1);
        let lazy = Expr::Select(Box::new(Expr::Const(0)), vec![Expr::Const(7), Expr::Const(1) / 0i64]);
        assert_eq!(lazy.eval(&env).unwrap(), 7);
        assert_eq!(Expr::Const(1).select(10i64, 20i64).eval(&env).unwrap(), 10);
    }
}
