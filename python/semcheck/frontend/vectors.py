"""Small integer arrays computed from index values: an element-by-element expression.

A kernel builds per-row metadata as arrays of indices (``jnp.arange(tile_m) < num_rows``,
``jnp.stack([...])``, ``jnp.sum(...)``) and reads single elements back as sizes and
offsets. Such an array is a :class:`IdxVec`: one integer expression per element
(row-major), so what is read from it is an expression too, evaluated per device when
the program is compiled, like any index. The structural primitives are here; the
walker applies element-wise operators with its scalar rules.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import numpy as np

from . import exprs as E

#: The most elements an index array may have; a larger one is data.
MAX_ELEMENTS = 4096


@dataclasses.dataclass(frozen=True)
class IdxVec:
    """An integer (``i``) or boolean (``b``) array whose elements are index expressions."""

    exprs: tuple
    shape: tuple[int, ...]
    kind: str
    dtype: str
    #: What the array is as data (the walker's value of the same equation), for every use
    #: that is not index arithmetic: a store, a compute, a loop carry.
    data: Any = None


class NotIndex(Exception):
    """The primitive cannot be read element by element (the array is then data)."""


def small(shape: Sequence[int]) -> bool:
    return math.prod(shape) <= MAX_ELEMENTS


def iota(params: dict, dtype: str) -> IdxVec:
    shape = tuple(int(s) for s in params["shape"])
    dim = int(params["dimension"])
    out = [E.const(idx[dim]) for idx in np.ndindex(*shape)] if shape else [E.const(0)]
    return IdxVec(tuple(out), shape, "i", dtype)


def _objects(items: Sequence[Any], shape: Sequence[int]) -> np.ndarray:
    """``items`` (expressions, which are tuples) as an object array of ``shape``."""
    a = np.empty(len(items), dtype=object)
    a[:] = list(items)
    return a.reshape(tuple(shape))


def _array(v: IdxVec) -> np.ndarray:
    return _objects(v.exprs, v.shape)


def _vec(a: np.ndarray, kind: str, dtype: str) -> IdxVec:
    return IdxVec(tuple(a.reshape(-1).tolist()), tuple(a.shape), kind, dtype)


def structural(name: str, params: dict, ins: list[IdxVec], out_shape: tuple[int, ...], dtype: str) -> IdxVec:
    """The primitives that move elements without computing: reshapes, slices,
    stacking, concatenation, broadcasts, transposes; reductions sum, max, min, and, or;
    running sums, maxima and minima (``cumsum``, ``cummax``, ``cummin``). Raises
    :class:`NotIndex` for any other."""
    a = _array(ins[0])
    kind = ins[0].kind
    if name in ("reshape", "squeeze", "expand_dims"):
        return _vec(a.reshape(out_shape), kind, dtype)
    if name == "broadcast_in_dim":
        dims = tuple(int(d) for d in params["broadcast_dimensions"])
        shape = [1] * len(out_shape)
        for k, d in enumerate(dims):
            shape[d] = a.shape[k]
        return _vec(np.broadcast_to(a.reshape(shape), out_shape), kind, dtype)
    if name == "slice":
        starts, limits = params["start_indices"], params["limit_indices"]
        strides = params.get("strides") or (1,) * len(starts)
        index = tuple(slice(int(s), int(lim), int(st)) for s, lim, st in zip(starts, limits, strides))
        return _vec(a[index], kind, dtype)
    if name == "stack":
        return _vec(np.stack([_array(v) for v in ins], axis=int(params["axis"])), kind, dtype)
    if name == "concatenate":
        axis = int(params["dimension"])
        return _vec(np.concatenate([_array(v) for v in ins], axis=axis), kind, dtype)
    if name == "transpose":
        return _vec(a.transpose(tuple(int(p) for p in params["permutation"])), kind, dtype)
    if name in ("cumsum", "cummax", "cummin"):
        op = {"cumsum": "add", "cummax": "max", "cummin": "min"}[name]
        axis, reverse = int(params["axis"]), bool(params.get("reverse", False))
        moved = np.moveaxis(a, axis, -1)
        out = np.empty(moved.shape, dtype=object)
        for idx in np.ndindex(*moved.shape[:-1]):
            row = list(moved[idx])
            prefixes = _running(op, row[::-1])[::-1] if reverse else _running(op, row)
            for j, e in enumerate(prefixes):
                out[idx + (j,)] = e
        return _vec(np.moveaxis(out, -1, axis), kind, dtype)
    if name in ("reduce_sum", "reduce_max", "reduce_min", "reduce_and", "reduce_or"):
        op = {"reduce_sum": "add", "reduce_max": "max", "reduce_min": "min",
              "reduce_and": "and" if kind == "b" else "bitand", "reduce_or": "or" if kind == "b" else "bitor"}[name]
        axes = tuple(int(x) for x in params["axes"])
        keep = [d for d in range(a.ndim) if d not in axes]
        moved = np.moveaxis(a, keep, list(range(len(keep)))).reshape(
            tuple(a.shape[d] for d in keep) + (-1,))
        flat = moved.reshape(-1, moved.shape[-1]) if moved.size else moved.reshape(-1, 0)
        return _vec(_objects([_balanced(op, list(row)) for row in flat], out_shape), kind, dtype)
    raise NotIndex(name)


def _balanced(op: str, items: list) -> E.Expr:
    """``items`` combined by ``op`` as a balanced tree: its depth (which the document's
    reader bounds) grows with the logarithm of their number."""
    while len(items) > 1:
        items = [E.op(op, items[i], items[i + 1]) if i + 1 < len(items) else items[i]
                 for i in range(0, len(items), 2)]
    return items[0]


def _running(op: str, items: list) -> list:
    """``items[0] op ... op items[j]`` for each ``j``: each combines the aligned blocks of
    a power-of-two length that ``j + 1`` splits into, every block a balanced tree built
    once, so the depth grows with the logarithm of the length (a left-to-right chain
    would be as deep as it is long)."""
    levels = [list(items)]  # level k: the blocks of 2**k items
    while len(levels[-1]) > 1:
        below = levels[-1]
        levels.append([E.op(op, below[i], below[i + 1]) for i in range(0, len(below) - 1, 2)])
    out = []
    for j in range(len(items)):
        parts, start = [], 0
        for k in reversed(range(len(levels))):
            if (j + 1) & (1 << k):
                parts.append(levels[k][start >> k])
                start += 1 << k
        out.append(_balanced(op, parts))
    return out


def element(v: IdxVec, index: Sequence[E.Expr]) -> E.Expr:
    """The element at ``index`` (expressions, clamped like ``dynamic_slice``): a constant
    index picks it, another selects among the elements when the program is compiled."""
    flat: E.Expr = E.const(0)
    stride = 1
    for k in reversed(range(len(v.shape))):
        i = E.op("max", E.const(0), E.op("min", index[k], E.const(v.shape[k] - 1)))
        flat = E.op("add", flat, E.op("mul", i, E.const(stride)))
        stride *= v.shape[k]
    if flat[0] == "const":
        return v.exprs[flat[1]]
    return E.op("select_n", flat, *v.exprs)


def dynamic_slice(v: IdxVec, starts: Sequence[E.Expr], sizes: Sequence[int], dtype: str) -> IdxVec:
    """``lax.dynamic_slice``: each element of the window by :func:`element` (the start
    clamped so the window fits, as JAX does)."""
    clamped = [E.op("max", E.const(0), E.op("min", s, E.const(n - z))) for s, n, z in zip(starts, v.shape, sizes)]
    out = []
    for idx in np.ndindex(*sizes):
        out.append(element(v, [E.op("add", c, E.const(i)) for c, i in zip(clamped, idx)]))
    return IdxVec(tuple(out), tuple(sizes), v.kind, dtype)


__all__ = ["IdxVec", "NotIndex", "MAX_ELEMENTS", "dynamic_slice", "element", "iota", "small", "structural"]
