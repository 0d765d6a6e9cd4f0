"""Pallas's own pipeline around a ``pallas_call`` grid: the copies of blocked operands.

A ``BlockSpec`` with a block smaller than its array hands the kernel a VMEM buffer of
one block; Pallas copies the array's block into it before a grid step and back after
one. Those copies are not in the kernel's jaxpr. Pallas's rule (as JAX's TPU interpret
mode runs a grid, ``interpret_pallas_call.py``, and as ``emit_pipeline``'s scheduler
does): an input's block is copied in at the first step and at every step whose block
index differs from the previous step's; an output's block is copied out at every step
whose block index differs from the next step's, and at the last step.

The front end writes exactly those copies into the kernel body, as stores guarded by
``when``: before the body, ``block[...] = array[block at this step]`` for each input;
after it, ``array[block at this step] = block[...]`` for each output. The array is a
buffer of its own in HBM (named ``NAME@hbm``, the operand's role), the block a VMEM
buffer named as the kernel names its argument. Conditions and offsets are integer
expressions of ``program_id``, evaluated per device and grid step when the program is
compiled, so the copies add no state beyond the cells they move.

Modelled as synchronous copies at step boundaries, with one VMEM buffer per operand:
Pallas double-buffers, prefetching the next block during a step, but an operand's
array is touched by nothing else (the kernel sees only the block), so when the copy
happens does not change what it reads or writes. What is not modelled is which of the
two slots a block occupies: a remote copy into a pipelined block (which slot it lands
in depends on the receiver's pipeline) is refused, and so are block dimensions other
than blocked, squeezed and unpadded element ones, blocks that do not divide their
array, and blocks of SMEM operands.
"""

from __future__ import annotations

import dataclasses
import linecache
import types
from typing import Any

import numpy as np

from . import exprs as E
from . import jaxcompat
from . import location
from .errors import Unsupported
from .bindings import POISONED, BufferDecl, ExprB, RefB
from .walker import KernelWalker


@dataclasses.dataclass
class Pipelined:
    """One operand whose block Pallas copies: the VMEM block the kernel sees and the
    HBM array it is copied from (an input) or to (an output)."""

    name: str
    role: str
    mapping: Any
    block: RefB
    array: int
    #: The kernel argument's index.
    index: int = -1


def is_pipelined(bm: Any) -> bool:
    """Whether Pallas pipelines the operand of block mapping ``bm``: a block in VMEM (or
    SMEM) smaller than its array. A whole-array block is the operand itself."""
    if _space(bm) in ("any", "hbm", "semaphore_mem"):
        return False
    block = tuple(_block_size(b) for b in bm.block_shape)
    return block != tuple(int(s) for s in bm.array_aval.shape)


def declare(w: KernelWalker, v: Any, bm: Any, name: str, role: str, loc: dict | None,
            array: int | None = None) -> Pipelined:
    """Declares the block (as the kernel's argument ``v``) and its array (unless
    ``array`` names one already: an output aliased to a pipelined input)."""
    def refuse(what: str) -> Unsupported:
        return Unsupported("BlockSpec pipelining", f"the BlockSpec of `{name}` ({bm.origin}) {what}", loc)

    if _space(bm) == "smem":
        raise refuse("pipelines blocks of an SMEM operand")
    if transforms := jaxcompat.block_transforms(bm):
        raise refuse(f"transforms its block ({transforms})")
    shape = tuple(int(s) for s in bm.array_aval.shape)
    for k, (b, n) in enumerate(zip(bm.block_shape, shape)):
        kind = type(b).__name__
        if kind == "Element" and tuple(b.padding) != (0, 0):
            raise refuse(f"pads dimension {k} ({b})")
        if kind not in ("Blocked", "Squeezed", "Element"):
            raise refuse(f"indexes dimension {k} by {b}")
        if kind == "Blocked" and n % b.block_size:
            raise refuse(f"has blocks of {b.block_size} that do not divide dimension {k} of the array ({n}): "
                         "the last block runs past the array, and what Pallas copies of it depends on the chip's "
                         "tiling")
    block = w.ref_binding(v.aval, name, "scratch", scoped=False, shared_hbm=False)
    if array is None:
        decl = w.buffers[block.id]
        array = w.declare_buffer(BufferDecl(name=f"{name}@hbm", space="hbm", role=role, shape=shape,
                                            dtype=decl.dtype, itemsize=decl.itemsize, scoped=False))
    w.pipelined.add(block.id)
    return Pipelined(name=name, role=role, mapping=bm, block=block, array=array)


def copy_in(w: KernelWalker, pipes: list[Pipelined], grid: tuple[int, ...], prefetch: list, loc: dict | None) -> None:
    """Before the body: each input's block, at the first step and when its index changed."""
    for p in pipes:
        if p.role == "input":
            _copy(w, p, grid, prefetch, loc, inward=True)


def copy_out(w: KernelWalker, pipes: list[Pipelined], grid: tuple[int, ...], prefetch: list, loc: dict | None) -> None:
    """After the body: each output's block, when the next step's index differs and at the last step."""
    for p in pipes:
        if p.role != "input":
            _copy(w, p, grid, prefetch, loc, inward=False)


def _copy(w: KernelWalker, p: Pipelined, grid: tuple[int, ...], prefetch: list, loc: dict | None,
          inward: bool) -> None:
    loc = _copy_loc(p, loc, "in" if inward else "out")
    w.loc = loc
    flat, steps = _flat(grid)
    here = [("program_id", d) for d in range(len(grid))]
    if inward:
        other = _unravel(E.op("max", E.op("sub", flat, E.const(1)), E.const(0)), grid)
        edge = E.op("eq", flat, E.const(0))
    else:
        other = _unravel(E.op("min", E.op("add", flat, E.const(1)), E.const(steps - 1)), grid)
        edge = E.op("eq", flat, E.const(steps - 1))
    cur = _block_index(w, p, here, prefetch, loc)
    if cur is None:
        return
    near = _block_index(w, p, other, prefetch, loc)
    if near is None:
        return
    cond = edge
    for a, b in zip(cur, near):
        cond = E.op("or", cond, E.op("ne", a, b))
    w.loc = loc
    view = _array_view(p, cur)
    decl = w.buffers[p.block.id]
    aval = types.SimpleNamespace(shape=p.block.shape(), dtype=decl.dtype)

    def move() -> None:
        if inward:
            w.store(p.block, w.load(view, aval))
        else:
            w.store(view, w.load(p.block, aval))

    body, _ = w.block(move)
    for stmt in body:
        stmt["implicit"] = True
    if cond == E.const(1):
        w.blocks[-1].extend(body)
    else:
        w.emit({"op": "when", "cond": cond, "body": body, "implicit": True})


def _copy_loc(p: Pipelined, fallback: dict | None, way: str) -> dict | None:
    """Where a copy is said to happen: the line defining the BlockSpec's index map (or,
    unknown, the ``pallas_call``), with what Pallas does there as its code."""
    _, loc = location.of_function(getattr(p.mapping.index_map_jaxpr, "jaxpr", p.mapping.index_map_jaxpr))
    loc = dict(loc or fallback or {})
    if not loc:
        return None
    loc.setdefault("text", linecache.getline(loc["file"], loc["line"]).strip())
    loc["code"] = f"BlockSpec pipeline: the block of `{p.name}` copied {way}"
    loc["stack"] = []
    return loc


def _flat(grid: tuple[int, ...]) -> tuple[E.Expr, int]:
    """The row-major step number as an expression of ``program_id``, and the step count."""
    flat, stride = E.const(0), 1
    for d in reversed(range(len(grid))):
        flat = E.op("add", flat, E.op("mul", ("program_id", d), E.const(stride)))
        stride *= grid[d]
    return flat, stride


def _unravel(flat: E.Expr, grid: tuple[int, ...]) -> list[E.Expr]:
    """The grid indices of step number ``flat`` (non-negative)."""
    out, stride = [], int(np.prod(grid or (1,)))
    for g in grid:
        stride //= g
        out.append(E.op("rem", E.op("div", flat, E.const(stride)), E.const(g)))
    return out


def _block_index(w: KernelWalker, p: Pipelined, pids: list[E.Expr], prefetch: list,
                 loc: dict | None) -> list[E.Expr] | None:
    """The block indices the index map gives at grid indices ``pids`` (``None`` when the
    map could not be read; its error is recorded)."""
    closed = p.mapping.index_map_jaxpr
    inner, env = w.sub_env(closed, [ExprB(e, "i") for e in pids] + list(prefetch))
    outs = w.walk(inner, env)
    w.loc = loc
    if any(o is POISONED for o in outs):
        return None
    if not all(isinstance(o, ExprB) and o.kind != "f" for o in outs):
        w.errors.append(Unsupported("BlockSpec index map", f"the index map of `{p.name}` ({p.mapping.origin}) does "
                                    "not give integer block indices", loc))
        return None
    return [o.expr for o in outs]


def _array_view(p: Pipelined, index: list[E.Expr]) -> RefB:
    """The block of the array at block indices ``index``."""
    dims: list[tuple] = []
    for b, i in zip(p.mapping.block_shape, index):
        kind = type(b).__name__
        if kind == "Squeezed":
            dims.append(("at", i))
        elif kind == "Blocked":
            dims.append(("slice", E.op("mul", i, E.const(b.block_size)), int(b.block_size)))
        else:
            dims.append(("slice", i, int(b.block_size)))
    return RefB("buffer", p.array, tuple(dims))


def _space(bm: Any) -> str:
    """The memory space of a block mapping's block (``""`` when the spec names none)."""
    return str(getattr(jaxcompat.block_aval(bm), "memory_space", "") or "")


def _block_size(b: Any) -> int:
    kind = type(b).__name__
    if kind == "Squeezed":
        return 1
    size = getattr(b, "block_size", None)
    return int(size) if size is not None else -1
