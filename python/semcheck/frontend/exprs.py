"""Integer expressions of a kernel: what indices, conditions, device ids and amounts
are computed from.

An expression is a nested tuple:

* ``("const", n)``, ``("axis_index", name)``, ``("program_id", dim)``,
  ``("num_programs", dim)``, ``("var", name)`` (a loop variable);
* ``(op, (arg, ...))`` for the operators of :data:`OPS`.

Booleans are 0 and 1. The semantics are JAX's on int32 scalars, without wrap-around:
``div`` truncates toward zero (``lax.div``), ``rem`` has the sign of the dividend
(``lax.rem``), ``select_n(which, case0, case1, ...)`` picks ``case[which]`` (only that case is
evaluated). Python's
floor ``%`` and ``//`` on traced ints reach this module as JAX traces them (``rem``,
``sign``, ``select_n``, ...), never as a floor operator, so nothing is reinterpreted.
``exactdiv`` is ``div`` that fails unless the remainder is 0 (cell indices).
``in_range(i, size, dim)`` is ``i``, and fails unless ``0 <= i < size``: the index of one
dimension of a multi-dimensional array (dimension ``dim``), checked on its own before it
is folded into a flat index.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

Expr = tuple

#: Operator name -> number of arguments (``None``: variadic, at least 2).
OPS: dict[str, int | None] = {
    "add": 2, "sub": 2, "mul": 2, "div": 2, "rem": 2, "exactdiv": 2,
    "neg": 1, "sign": 1, "abs": 1, "min": 2, "max": 2,
    "eq": 2, "ne": 2, "lt": 2, "le": 2, "gt": 2, "ge": 2,
    "and": 2, "or": 2, "xor": 2, "not": 1,
    "bitand": 2, "bitor": 2, "bitxor": 2, "bitnot": 1, "shl": 2, "shr": 2,
    "select_n": None,
    "in_range": 3,
}

LIMIT = 1 << 63


class EvalError(Exception):
    """An expression that cannot be evaluated (division by zero, overflow, ...)."""


def const(n: int) -> Expr:
    return ("const", int(n))


def op(name: str, *args: Expr) -> Expr:
    """Builds ``name(args)``, folding constants and trivial identities."""
    assert name in OPS, name
    if all(a[0] == "const" for a in args):
        try:
            return const(_apply(name, [a[1] for a in args]))
        except EvalError:
            pass
    if name == "add":
        a, b = args
        if a == ("const", 0):
            return b
        if b == ("const", 0):
            return a
    if name == "sub" and args[1] == ("const", 0):
        return args[0]
    if name == "mul":
        a, b = args
        if a == ("const", 1):
            return b
        if b == ("const", 1):
            return a
    if name in ("div", "exactdiv") and args[1] == ("const", 1):
        return args[0]
    if name in ("div", "exactdiv") and args[0][0] == "mul" and args[1][0] == "const":
        x, y = args[0][1]
        if y == args[1]:
            return x
        if x == args[1]:
            return y
    if name == "select_n" and args[0][0] == "const":
        which = args[0][1]
        if 0 <= which < len(args) - 1:
            return args[1 + which]
    return (name, tuple(args))


def _trunc_div(a: int, b: int) -> int:
    if b == 0:
        raise EvalError("division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _apply(name: str, v: list[int]) -> int:
    if name == "in_range":
        if not 0 <= v[0] < v[1]:
            raise EvalError(f"index {v[0]} out of range for dimension {v[2]} (size {v[1]})")
        r = v[0]
    elif name == "add":
        r = v[0] + v[1]
    elif name == "sub":
        r = v[0] - v[1]
    elif name == "mul":
        r = v[0] * v[1]
    elif name == "div":
        r = _trunc_div(v[0], v[1])
    elif name == "exactdiv":
        r = _trunc_div(v[0], v[1])
        if r * v[1] != v[0]:
            raise EvalError(f"{v[0]} is not a multiple of {v[1]}")
    elif name == "rem":
        r = v[0] - v[1] * _trunc_div(v[0], v[1])
    elif name == "neg":
        r = -v[0]
    elif name == "sign":
        r = (v[0] > 0) - (v[0] < 0)
    elif name == "abs":
        r = abs(v[0])
    elif name == "min":
        r = min(v[0], v[1])
    elif name == "max":
        r = max(v[0], v[1])
    elif name == "eq":
        r = int(v[0] == v[1])
    elif name == "ne":
        r = int(v[0] != v[1])
    elif name == "lt":
        r = int(v[0] < v[1])
    elif name == "le":
        r = int(v[0] <= v[1])
    elif name == "gt":
        r = int(v[0] > v[1])
    elif name == "ge":
        r = int(v[0] >= v[1])
    elif name == "and":
        r = int(v[0] != 0 and v[1] != 0)
    elif name == "or":
        r = int(v[0] != 0 or v[1] != 0)
    elif name == "xor":
        r = int((v[0] != 0) != (v[1] != 0))
    elif name == "not":
        r = int(v[0] == 0)
    elif name == "bitand":
        r = v[0] & v[1]
    elif name == "bitor":
        r = v[0] | v[1]
    elif name == "bitxor":
        r = v[0] ^ v[1]
    elif name == "bitnot":
        r = ~v[0]
    elif name == "shl":
        if not 0 <= v[1] < 64:
            raise EvalError(f"shift by {v[1]}")
        r = v[0] << v[1]
    elif name == "shr":
        if not 0 <= v[1] < 64:
            raise EvalError(f"shift by {v[1]}")
        r = v[0] >> v[1]
    elif name == "select_n":
        which = v[0]
        if not 0 <= which < len(v) - 1:
            raise EvalError(f"select_n index {which} out of range for {len(v) - 1} cases")
        r = v[1 + which]
    else:  # pragma: no cover - guarded by OPS
        raise EvalError(f"unknown operator {name}")
    if not -LIMIT <= r < LIMIT:
        raise EvalError("overflow")
    return r


class Env:
    """Where an expression is evaluated: a device's coordinates, a grid index and the
    loop variables in scope."""

    def __init__(self, axes: Mapping[str, int], program_ids: tuple[int, ...], grid: tuple[int, ...]):
        self.axes = dict(axes)
        self.program_ids = program_ids
        self.grid = grid
        self.vars: dict[str, int] = {}
        #: Variables holding no value, with why: a load of SMEM outside its array (see
        #: :class:`~semcheck.frontend.cells.Granularity`); using one is an error.
        self.poisoned: dict[str, str] = {}
        #: SMEM scalar state, per scalar array (``None``: not written yet).
        self.memory: list[list[int | None]] = []


def evaluate(e: Expr, env: Env) -> int:
    """The value of ``e`` in ``env``; raises :class:`EvalError`."""
    kind = e[0]
    if kind == "const":
        return e[1]
    if kind == "axis_index":
        if e[1] not in env.axes:
            raise EvalError(f"axis_index({e[1]!r}): no such mesh axis")
        return env.axes[e[1]]
    if kind == "program_id":
        if e[1] >= len(env.program_ids):
            raise EvalError(f"program_id({e[1]}): the grid has {len(env.program_ids)} dimension(s)")
        return env.program_ids[e[1]]
    if kind == "num_programs":
        if e[1] >= len(env.grid):
            raise EvalError(f"num_programs({e[1]}): the grid has {len(env.grid)} dimension(s)")
        return env.grid[e[1]]
    if kind == "var":
        if e[1] in env.poisoned:
            raise EvalError(env.poisoned[e[1]])
        if e[1] not in env.vars:
            raise EvalError(f"loop variable {e[1]} used outside its loop")
        return env.vars[e[1]]
    if kind == "select_n":
        which = evaluate(e[1][0], env)
        if not 0 <= which < len(e[1]) - 1:
            raise EvalError(f"select_n index {which} out of range for {len(e[1]) - 1} cases")
        return evaluate(e[1][1 + which], env)
    return _apply(kind, [evaluate(a, env) for a in e[1]])


def to_json(e: Expr) -> Any:
    """The JSON form of SCHEMA.md."""
    kind = e[0]
    if kind in ("const", "axis_index", "program_id", "num_programs", "var"):
        return {kind: e[1]}
    return {"op": kind, "args": [to_json(a) for a in e[1]]}


def from_json(j: Any) -> Expr:
    """The inverse of :func:`to_json`."""
    if "op" in j:
        return (j["op"], tuple(from_json(a) for a in j["args"]))
    ((kind, value),) = j.items()
    return (kind, value)


def render(e: Expr, names: Callable[[Expr], str | None] | None = None) -> str:
    """A readable form, for messages."""
    kind = e[0]
    if kind == "const":
        return str(e[1])
    if kind == "axis_index":
        return f"axis_index({e[1]!r})"
    if kind == "program_id":
        return f"program_id({e[1]})"
    if kind == "num_programs":
        return f"num_programs({e[1]})"
    if kind == "var":
        return e[1]
    args = ", ".join(render(a) for a in e[1])
    return f"{kind}({args})"


def substitute(e: Expr, values: Mapping[str, Expr]) -> Expr:
    """``e`` with each loop variable named in ``values`` replaced by its expression."""
    if e[0] == "var":
        return values.get(e[1], e)
    if e[0] in OPS:
        return op(e[0], *(substitute(a, values) for a in e[1]))
    return e


def mentions(e: Expr, kind: str) -> bool:
    """Whether ``e`` has a leaf of ``kind`` (``"axis_index"``, ``"var"``, ...)."""
    if e[0] == kind:
        return True
    return e[0] in OPS and any(mentions(a, kind) for a in e[1])


def free_vars(e: Expr) -> set[str]:
    """Loop variables ``e`` refers to."""
    if e[0] == "var":
        return {e[1]}
    if e[0] in OPS:
        out: set[str] = set()
        for a in e[1]:
            out |= free_vars(a)
        return out
    return set()
