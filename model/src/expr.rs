//! Integer expressions over `axis_index`, `program_id`, `num_programs` and constants.
//!
//! These are the run-time values of a Pallas kernel that control flow (`pl.when`),
//! indices (`.at[...]`, `pl.ds`) and device ids may depend on. They are evaluated per
//! device and grid index when a kernel is compiled for a mesh; no data flows into them.

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
            BinOp::And => "&",
            BinOp::Or => "|",
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
            Expr::Binary(op, a, b) => {
                let (x, y) = (a.eval(env)?, b.eval(env)?);
                let overflow = || bad(format!("overflow in {self}"));
                match op {
                    BinOp::Add => x.checked_add(y).ok_or_else(overflow)?,
                    BinOp::Sub => x.checked_sub(y).ok_or_else(overflow)?,
                    BinOp::Mul => x.checked_mul(y).ok_or_else(overflow)?,
                    BinOp::Div | BinOp::Rem if y == 0 => return Err(bad(format!("division by zero in {self}"))),
                    BinOp::Div => x.checked_div(y).ok_or_else(overflow)?,
                    BinOp::Rem => x.checked_rem(y).ok_or_else(overflow)?,
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
            Expr::Binary(op, a, b) => write!(f, "({a} {} {b})", op.symbol()),
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
            let env = EvalEnv { mesh: &mesh, coords: &coords, grid: &grid, program_ids: &[1] };
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
        let env = EvalEnv { mesh: &mesh, coords: &[0], grid: &[2], program_ids: &[0] };
        assert!(Expr::AxisIndex("y".into()).eval(&env).is_err());
        assert!(Expr::ProgramId(1).eval(&env).is_err());
        assert!((Expr::Const(1) % 0i64).eval(&env).is_err());
        assert!((Expr::Const(i64::MAX) + 1i64).eval(&env).is_err());
    }
}
