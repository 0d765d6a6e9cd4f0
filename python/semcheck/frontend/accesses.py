"""Loads and stores of buffers.

A value loaded from a buffer and stored only after a DMA, a semaphore operation, control
flow or a store to that buffer (``v = buf[...]; copy.start(); copy.wait(); o[...] = v``)
is read where it is loaded: every load leaves a *snapshot* placeholder at its place in
the statements, and a store that uses a value loaded before such a statement turns it
into a copy of the loaded view into a private VMEM buffer of its own
(``buf@7``, for a load at line 7) and reads that buffer instead. The checker thus sees
the load at its own point (its races, its value) and the store at its own. Unused
placeholders are dropped (:func:`resolve_snapshots`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jax._src import core as jax_core

from . import exprs as E
from . import jaxcompat
from . import location
from .bindings import CARRY, BufferDecl, ExprB, RefB, ValB
from .dataflow import used_later
from .errors import Refused
from .walker_state import WalkerPart


class Accesses(WalkerPart):
    """The :class:`~semcheck.frontend.walker.KernelWalker`'s loads and stores."""

    def p_get(self, eqn: Any, env: dict) -> None:
        self.get(eqn, env, self.indexed(env, eqn.invars[0], eqn.invars[1:], eqn.params.get("tree"), "a load"))

    def p_masked_load(self, eqn: Any, env: dict) -> None:
        ref, transforms, mask, other = jaxcompat.masked_access_operands(eqn)
        if mask is not None or other is not None:
            raise self.unsupported("masked load", "pl.load with a mask is not supported")
        self.get(eqn, env, self.transformed(env, ref, transforms, "a load"))

    def p_swap(self, eqn: Any, env: dict) -> None:
        ref = self.indexed(env, eqn.invars[0], eqn.invars[2:], eqn.params.get("tree"), "a store")
        self.put(eqn, env, ref, eqn.invars[1])

    def p_masked_swap(self, eqn: Any, env: dict) -> None:
        ref_node, transforms, val, mask = jaxcompat.masked_access_operands(eqn)
        if mask is not None:
            raise self.unsupported("masked store", "pl.store with a mask is not supported")
        self.put(eqn, env, self.transformed(env, ref_node, transforms, "a store"), val)

    def transformed(self, env: dict, ref_node: Any, transforms: Any, what: str) -> RefB:
        """A ref operand with the transforms a ``pl.load`` / ``pl.store`` gives beside it."""
        ref = self.view(env, ref_node, what)
        for t in transforms or ():
            ref = self.apply_transform(env, ref, t, what)
        return ref

    def get(self, eqn: Any, env: dict, ref: RefB) -> None:
        """A load the kernel writes (``ref[...]``): SMEM scalar state, or data."""
        if ref.what != "buffer":
            raise self.unsupported("semaphore load", "loading from a semaphore")
        aval = eqn.outvars[0].aval
        self.mosaic_rules(ref, tuple(aval.shape), store=False)
        sid = self.scalar_state(ref)
        self.bind_outs(env, eqn, [self.scalar_load(ref, sid, aval) if sid is not None else self.load(ref, aval)])

    def put(self, eqn: Any, env: dict, ref: RefB, value: Any) -> None:
        """A store the kernel writes (``ref[...] = value``, giving the old value)."""
        if ref.what != "buffer":
            raise self.unsupported("semaphore store", "storing into a semaphore")
        self.mosaic_rules(ref, tuple(value.aval.shape), store=True)
        sid = self.scalar_state(ref)
        if sid is not None:
            self.scalar_swap(eqn, env, ref, sid, self.read(env, value))
            return
        self.swap(eqn, env, ref, self.as_value(self.read(env, value)))

    def mosaic_rules(self, ref: RefB, shape: tuple, store: bool) -> None:
        """Mosaic's rules for the loads and stores a kernel writes, with its wording
        (``jax/_src/pallas/mosaic/lowering.py``): SMEM is read and written one scalar at
        a time, and VMEM is never stored a scalar. A kernel breaking one cannot be built,
        and is refused. (Loads and stores of HBM refs: refused when the checker compiles
        the kernel, for DSL kernels too.)"""
        space = self.buffers[ref.id].space
        if space == "smem" and shape != ():
            reason = "Can only store scalars to SMEM" if store else "Can only load scalars from SMEM"
            raise Refused(reason, "SMEM vector access", self.loc)
        if space == "vmem" and store and shape == ():
            raise Refused("Cannot store scalars to VMEM", "VMEM scalar store", self.loc)

    def swap(self, eqn: Any, env: dict, ref: RefB, val: ValB) -> None:
        """A store that gives the old value: when that is used, a load just before the
        store (read where it was loaded, like any value kept past a store)."""
        out = eqn.outvars[0]
        if not isinstance(out, jax_core.DropVar) and used_later(out):
            old = self.load(ref, out.aval)
        else:
            old = ValB(("const", "swapped"), tuple(out.aval.shape), str(out.aval.dtype), False)
        self.store(ref, val)
        self.bind_outs(env, eqn, [old])

    def p_addupdate(self, eqn: Any, env: dict) -> None:
        ref = self.indexed(env, eqn.invars[0], eqn.invars[2:], eqn.params.get("tree"), "an accumulation")
        sid = self.scalar_state(ref)
        if sid is not None and self.buffers[ref.id].space != "smem":
            # An accumulation into VMEM integers read as scalar state: data on the next walk.
            self.data_stored.add(ref.id)
            sid = None
        if sid is not None:
            inc = self.read(env, eqn.invars[1])
            cur = self.scalar_load(ref, sid, eqn.invars[1].aval)
            if isinstance(inc, ExprB) and inc.kind != "f":
                inc = ExprB(E.op("add", cur.expr, inc.expr), cur.kind)
            self.scalar_store(ref, sid, inc)
            return
        val = self.as_value(self.read(env, eqn.invars[1]))
        old = ValB(("load", ref, self.epoch, self.writes.get(ref.id, 0), self.loc, None), val.shape, val.dtype, True)
        self.store(ref, ValB(self.bounded(("add", old.node, val.node)), val.shape, val.dtype, val.cellwise))

    def static_view(self, ref: RefB, what: str) -> None:
        """Refuses a view with a slice of dynamic size outside a DMA: a load or store
        has a static shape."""
        if not all(isinstance(n, int) for n in ref.shape()):
            raise self.unsupported("dynamic slice size", f"{what} of `{self.name_of(ref)}` uses a slice of dynamic "
                                   "size (read in DMAs only)")

    def load(self, ref: RefB, aval: Any) -> ValB:
        """The value a load of ``ref`` gives, with its snapshot placeholder left here."""
        self.static_view(ref, "a load")
        snap = {"op": "snapshot", "src": ref, "loc": self.loc}
        self.blocks[-1].append(snap)
        leaf = ("load", ref, self.epoch, self.writes.get(ref.id, 0), self.loc, snap)
        # A word of a bitcast view packs several cells' elements: not cell by cell.
        return ValB(leaf, tuple(aval.shape), str(aval.dtype), not ref.packed)

    def register(self, what: str, shape: tuple, dtype: str, itemsize: int) -> RefB:
        """A private VMEM buffer of ``shape`` and ``dtype``, named ``WHAT@LINE`` after the
        statement being read."""
        line = (self.loc or {}).get("line", "?")
        bid = self.declare_buffer(BufferDecl(name=f"{what}@{line}", space="vmem", role="scratch",
                                             shape=tuple(shape), dtype=dtype, itemsize=itemsize))
        return RefB("buffer", bid, tuple(("slice", E.const(0), n) for n in shape))

    def snapshot_buffer(self, ref: RefB, src: BufferDecl) -> RefB:
        """A private buffer of ``ref``'s shape (its elements, with the words of a bitcast
        view packed the same way), named after ``src``."""
        if not ref.packed:
            return self.register(src.name, ref.shape(), src.dtype, src.itemsize)
        ratios = [ref.ratio(v[1]) if v[0] == "base" else 1 for v in ref.view_dims()]
        snap = self.register(src.name, tuple(n * r for n, r in zip(ref.shape(), ratios)), src.dtype, src.itemsize)
        return dataclasses.replace(snap, packed=tuple((j, r) for j, r in enumerate(ratios) if r > 1))

    def current(self, node: tuple) -> tuple:
        """``node`` with every load made before the last DMA, semaphore operation,
        control flow or store to its buffer replaced by a load of its snapshot."""
        kind = node[0]
        if kind == "add":
            return ("add", self.current(node[1]), self.current(node[2]))
        if kind == "fn":
            return ("fn", node[1], [self.current(a) for a in node[2]], *node[3:])
        if kind != "load":
            return node
        _, ref, epoch, writes, loc, snap = node
        if snap is CARRY or (epoch == self.epoch and writes == self.writes.get(ref.id, 0)):
            return node
        if snap is None:
            raise self.unsupported(
                "value kept across statements",
                f"the value loaded from `{self.name_of(ref)}` at {location.short(loc)} is stored after a "
                "DMA, semaphore operation, control flow or a store to that buffer")
        if "dst" not in snap:
            src = self.buffers[ref.id]
            at = self.loc
            self.loc = loc
            snap["dst"] = self.snapshot_buffer(ref, src)
            self.loc = at
        return ("load", snap["dst"], self.epoch, self.writes.get(snap["dst"].id, 0), loc, None)

    def store(self, dst: RefB, val: ValB) -> None:
        self.static_view(dst, "a store")
        self.written.add(dst.id)
        val = dataclasses.replace(val, node=self.current(val.node))
        cellwise = val.cellwise and val.shape == dst.shape()
        if val.node[0] in ("zeros",) or (val.node[0] in ("const", "index") and val.shape == ()):
            cellwise = True
        self.emit({"op": "store", "dst": dst, "value": val.node, "cellwise": cellwise})


def resolve_snapshots(body: list[dict]) -> list[dict]:
    """``body`` with every snapshot a store used made the copy of the loaded view into its
    private buffer, and the unused ones dropped (recursively)."""
    out = []
    for s in body:
        if s["op"] == "snapshot":
            if "dst" in s:
                leaf = ("load", s["src"], 0, 0, s["loc"], None)
                out.append({"op": "store", "dst": s["dst"], "value": leaf, "cellwise": True, "loc": s["loc"]})
            continue
        if "body" in s:
            s["body"] = resolve_snapshots(s["body"])
        if "branches" in s:
            s["branches"] = [resolve_snapshots(b) for b in s["branches"]]
        out.append(s)
    return out
