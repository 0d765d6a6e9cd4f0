"""Compute: index arithmetic on scalars (expressions over device and grid ids, loop
variables and SMEM scalar state), small arrays of index values, and data, an
uninterpreted function of every cell it reads."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import exprs as E
from . import location
from . import vectors
from .bindings import ExprB, ValB
from .errors import Unsupported
from .vectors import IdxVec
from .walker_state import WalkerPart

# Elementwise primitives on data: applied cell by cell when shapes agree.
ELEMENTWISE = {
    "add", "sub", "mul", "div", "max", "min", "neg", "exp", "exp2", "log", "log1p", "tanh",
    "logistic", "sin", "cos", "tan", "sqrt", "rsqrt", "cbrt", "abs", "sign", "floor", "ceil",
    "round", "pow", "integer_pow", "convert_element_type", "select_n", "eq", "ne", "lt", "le",
    "gt", "ge", "and", "or", "not", "xor", "erf", "erf_inv", "is_finite", "nextafter", "rem",
    "square", "reciprocal", "clamp", "atan2", "expm1", "copy", "copy_p", "real", "imag",
    "reduce_precision", "stop_gradient", "erfc", "asin", "acos", "atan", "sinh", "cosh",
    "asinh", "acosh", "atanh", "lgamma", "digamma", "bitcast_convert_type",
}

# Index arithmetic: primitive -> expression operator.
INDEX_BINARY = {
    "add": "add", "sub": "sub", "mul": "mul", "div": "div", "rem": "rem", "max": "max",
    "min": "min", "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
    "shift_left": "shl", "shift_right_arithmetic": "shr",
}

#: Element-wise primitives read element by element on arrays of index values.
VECTOR_ELEMENTWISE = set(INDEX_BINARY) | {"and", "or", "xor", "not", "neg", "sign", "abs", "select_n", "clamp",
                                          "convert_element_type", "integer_pow"}

#: Value trees larger than this are one function of their leaves (``KernelWalker.bounded``).
MAX_TREE = 256


class Compute(WalkerPart):
    """The :class:`~semcheck.frontend.walker.KernelWalker`'s reading of primitives on values."""

    def index_primitive(self, eqn: Any, env: dict, ins: list[ExprB]) -> None:
        name = eqn.primitive.name
        out_dtype = eqn.outvars[0].aval.dtype
        kind = "b" if out_dtype == np.bool_ else ("f" if np.dtype(out_dtype).kind == "f" else "i")
        if any(b.kind == "f" for b in ins) or kind == "f":
            # Float arithmetic on indices: fine as long as it never reaches an index.
            self.bind_outs(env, eqn, [ExprB(("float", name), "f")])
            return
        self.bind_outs(env, eqn, [ExprB(self.index_expr(name, eqn.params, ins, kind), kind)])

    def index_expr(self, name: str, params: dict, ins: list[ExprB], kind: str) -> E.Expr:
        """Primitive ``name`` on integer or boolean index values, giving a ``kind`` one."""
        a = [b.expr for b in ins]
        bool_in = ins and all(b.kind == "b" for b in ins)
        if name in INDEX_BINARY:
            r = E.op(INDEX_BINARY[name], *a)
        elif name == "and":
            r = E.op("and" if bool_in else "bitand", *a)
        elif name == "or":
            r = E.op("or" if bool_in else "bitor", *a)
        elif name == "xor":
            r = E.op("xor" if bool_in else "bitxor", *a)
        elif name == "not":
            r = E.op("not" if bool_in else "bitnot", *a)
        elif name in ("neg", "sign", "abs"):
            r = E.op(name, *a)
        elif name == "select_n":
            r = E.op("select_n", *a)
        elif name == "clamp":
            lo, x, hi = a
            r = E.op("max", lo, E.op("min", x, hi))
        elif name == "convert_element_type":
            (x,) = a
            r = E.op("ne", x, E.const(0)) if kind == "b" and ins[0].kind != "b" else x
        elif name == "integer_pow":
            y = int(params["y"])
            if y < 0:
                raise self.unsupported("integer_pow", "negative integer power of an index")
            r = E.const(1)
            for _ in range(y):
                r = E.op("mul", r, a[0])
        elif name in ("squeeze", "reshape", "broadcast_in_dim", "expand_dims"):
            r = a[0]
        elif name == "shift_right_logical":
            raise self.unsupported("shift_right_logical", "logical right shift of an index (int32 wrap-around is not modelled)")
        elif name == "axis_index":  # pragma: no cover - handled by p_axis_index
            raise AssertionError
        else:
            raise self.unknown_primitive(name, "on index values")
        return r

    def index_vector(self, eqn: Any, ins: list, data: list[ValB]) -> list | None:
        """The result of a primitive on small integer arrays of index values (see
        :mod:`~semcheck.frontend.vectors`), element by element; a scalar result is an index
        value. ``None`` when the result is data (``data``, the walker's value of it)."""
        name = eqn.primitive.name
        if len(eqn.outvars) != 1:
            return None
        aval = eqn.outvars[0].aval
        shape = tuple(int(n) for n in getattr(aval, "shape", ()) or ())
        dt = np.dtype(getattr(aval, "dtype", np.float32))
        if dt.kind not in "iub" or not vectors.small(shape):
            return None
        if not all((isinstance(b, ExprB) and b.kind != "f") or isinstance(b, IdxVec) for b in ins):
            return None
        if not (any(isinstance(b, IdxVec) for b in ins) or name in ("iota", "broadcast_in_dim", "stack")):
            return None
        kind, dtype = ("b" if dt == np.bool_ else "i"), str(dt)
        as_vec = [b if isinstance(b, IdxVec) else IdxVec((b.expr,), (), b.kind, dtype) for b in ins]
        try:
            if name == "iota":
                vec = vectors.iota(eqn.params, dtype)
            elif name == "dynamic_slice":
                if not isinstance(ins[0], IdxVec) or not all(isinstance(b, ExprB) for b in ins[1:]):
                    return None
                sizes = [int(z) for z in eqn.params["slice_sizes"]]
                vec = vectors.dynamic_slice(ins[0], [b.expr for b in ins[1:]], sizes, dtype)
            elif name in VECTOR_ELEMENTWISE:
                if any(v.shape not in ((), shape) for v in as_vec):
                    return None
                n = math.prod(shape)
                exprs = tuple(self.index_expr(name, eqn.params, [
                    ExprB(v.exprs[j] if v.shape else v.exprs[0], v.kind) for v in as_vec], kind) for j in range(n))
                vec = IdxVec(exprs, shape, kind, dtype)
            else:
                vec = vectors.structural(name, eqn.params, as_vec, shape, dtype)
        except (vectors.NotIndex, Unsupported):
            return None
        if shape == ():
            return [ExprB(vec.exprs[0], kind)]
        return [IdxVec(vec.exprs, shape, kind, dtype, data[0])]

    def as_value(self, b: Any) -> ValB:
        if isinstance(b, ValB):
            return b
        if isinstance(b, IdxVec):
            return b.data
        if isinstance(b, ExprB):
            if b.kind == "f":
                return ValB(("const", "float-index"), (), "float32", True)
            return ValB(("index", b.expr), (), "int32", True)
        raise self.unsupported("ref as data", "a Ref is used as data")

    def data_values(self, eqn: Any, ins: list) -> list[ValB]:
        """The results of a primitive on data: an uninterpreted function of what it reads
        (cell by cell where it is element-wise)."""
        name = eqn.primitive.name
        vals = [self.as_value(b) for b in ins]
        outs = eqn.outvars
        out_shape = tuple(getattr(outs[0].aval, "shape", ()))
        out_dtype = str(getattr(outs[0].aval, "dtype", ""))
        if name == "broadcast_in_dim" and vals[0].shape == ():
            v = vals[0]
            if v.node[0] in ("zeros", "const", "index"):
                node = ("zeros",) if (v.node[0] == "const" and v.node[1] == "0") or v.node[0] == "zeros" else v.node
                return [ValB(node, out_shape, out_dtype, True)]
        if name == "add" and len(vals) == 2:
            a, b = vals
            if a.node == ("zeros",) and b.shape == out_shape:
                return [ValB(b.node, out_shape, out_dtype, b.cellwise)]
            if b.node == ("zeros",) and a.shape == out_shape:
                return [ValB(a.node, out_shape, out_dtype, a.cellwise)]
            if a.shape == b.shape == out_shape:
                node = self.bounded(("add", a.node, b.node))
                return [ValB(node, out_shape, out_dtype, a.cellwise and b.cellwise)]
        elementwise = name in ELEMENTWISE and len(outs) == 1
        arrays = [v for v in vals if v.shape != ()]
        scalars_const = [v for v in vals if v.shape == () and v.node[0] == "const"]
        # A scalar operand computed from a whole view (a reduction) is not cell by cell either.
        cellwise = elementwise and all(v.shape == out_shape for v in arrays) and all(v.cellwise for v in vals)
        # Constant scalar operands are folded into the function's name.
        args: tuple[tuple, ...]
        if elementwise and len(arrays) == 1 and len(scalars_const) == len(vals) - 1 and vals:
            template = self.template(name, vals, eqn.params)
            args = (arrays[0].node,)
        else:
            template = self.template(name, vals, eqn.params, all_args=True)
            args = tuple(v.node for v in vals if not (v.shape == () and v.node[0] == "const"))
        node = self.bounded(("fn", template, args))
        out = [ValB(node if len(outs) == 1 else self.bounded(("fn", f"{template}#{k}", args)),
                    tuple(getattr(o.aval, "shape", ())), str(getattr(o.aval, "dtype", "")),
                    cellwise) for k, o in enumerate(outs)]
        return out

    def tree_size(self, node: tuple) -> int:
        """The number of nodes of a value's tree, a shared value counted at each use."""
        hit = self.tree_sizes.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        if node[0] == "add":
            size = 1 + self.tree_size(node[1]) + self.tree_size(node[2])
        elif node[0] == "fn":
            size = 1 + sum(self.tree_size(a) for a in node[2])
        else:
            size = 1
        self.tree_sizes[id(node)] = (node, size)
        return size

    def bounded(self, node: tuple) -> tuple:
        """``node``, or, when its tree has more than ``MAX_TREE`` nodes, one function of
        its distinct loads and index values in order, named after the operation, the line
        and the tree's size (a computation that reuses its values, like online softmax,
        doubles its tree at each step: the JSON and the checker's formulas would grow
        exponentially). The cells it reads, and so every race and final value, stay."""
        size = self.tree_size(node)
        if size <= MAX_TREE:
            return node
        leaves: list[tuple] = []
        seen: set[int] = set()

        def visit(n: tuple) -> None:
            if id(n) in seen:
                return
            seen.add(id(n))
            if n[0] == "add":
                visit(n[1])
                visit(n[2])
            elif n[0] == "fn":
                for a in n[2]:
                    visit(a)
            elif n[0] in ("load", "index") and n not in leaves:
                leaves.append(n)

        visit(node)
        head = node[1].split("(")[0] if node[0] == "fn" else "add"
        where = location.short(self.loc)
        return ("fn", f"{head}…@{where}[{size} terms](" + ", ".join("{}" for _ in leaves) + ")", tuple(leaves))

    @staticmethod
    def template(name: str, vals: list[ValB], params: dict, all_args: bool = False) -> str:
        """The name of an uninterpreted function: ``2*{}``, ``{}+1``, ``dot_general({},{})``."""
        if not all_args:
            parts = ["{}" if v.shape != () else v.node[1] for v in vals]
            sym = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
            if name in sym and len(parts) == 2:
                a, b = parts
                if name == "mul" and b != "{}":
                    a, b = b, a  # constants first: 2*{}
                return f"{a}{sym[name]}{b}"
            if name == "neg":
                return "-{}"
            if name == "convert_element_type":
                return f"{np.dtype(params['new_dtype']).name}({{}})"
            if name == "integer_pow":
                return f"{{}}**{params['y']}"
            return f"{name}({', '.join(parts)})"
        parts = ["{}" if not (v.shape == () and v.node[0] == "const") else v.node[1] for v in vals]
        if name == "convert_element_type":
            return f"{np.dtype(params['new_dtype']).name}({{}})"
        return f"{name}({', '.join(parts)})"
