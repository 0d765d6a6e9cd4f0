"""SMEM scalar state: SMEM integers the kernel keeps as its own scalars (scratch, or an
operand whose values are known), read when the program is compiled, and copies of known
integers into it (index windows)."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import numpy as np
from jax._src import core as jax_core

from . import exprs as E
from . import location
from . import vectors
from .vectors import IdxVec
from .bindings import BufferDecl, ExprB, RefB, Tainted, slice_step
from .dataflow import used_later
from .walker_state import WalkerPart

#: The most elements of a copy of known integers into SMEM scalar state (see
#: :meth:`KernelWalker.window_copy`).
MAX_COPIED_SCALARS = 4096

#: Elements of SMEM scalar state (over all devices, when their values are known) the
#: checker follows, at most.
MAX_SCALAR_ELEMENTS = 1 << 22


@dataclasses.dataclass(frozen=True)
class RecordedCopy:
    """A copy site into SMEM read with the values of JAX's interpreted run
    (``--interpret-values``): its name (``buffer@file:line``) and its two scalar arrays,
    the values its copies carried and how many of them a device has started."""

    name: str
    table: int
    count: int


class Scalars(WalkerPart):
    """The :class:`~semcheck.frontend.walker.KernelWalker`'s SMEM scalar state."""

    def scalar_state(self, ref: RefB, window: tuple = ()) -> int | None:
        """The scalar array of a buffer the kernel uses as its own integer state: SMEM
        integers that are scratch or an operand whose values are known, and VMEM integers
        whose values are known (an input the script passes, or a copy of one: ``window``
        names a buffer being found as one), that no DMA copies and no data is stored into
        (``data_smem``). A load of VMEM scalar state reads every element of its view
        (:meth:`vector_load`). Their loads and stores are
        read when the program is compiled (SCHEMA.md ``scalar_load``); ``None`` for any
        other buffer."""
        if ref.what != "buffer":
            return None
        if ref.id in self.scalar_of:
            return self.scalar_of[ref.id]
        decl = self.buffers[ref.id]
        if np.dtype(decl.dtype).kind not in "iub" or ref.id in self.data_smem:
            return None
        if decl.space == "smem":
            if decl.role != "scratch" and decl.known is None:
                return None
        elif decl.space != "vmem" or not (decl.known is not None or ref.id in self.windows or ref.id in window):
            # VMEM integers are scalar state only when their values are known: an input
            # the script passes (top-k ids, a routing table), or a copy of one (a window).
            return None
        elements = int(np.prod(decl.shape or (1,)))
        if ref.id in self.too_large:
            raise Tainted()  # said once, at its first use
        if elements * max(1, len(decl.known or ())) > MAX_SCALAR_ELEMENTS:
            self.too_large.add(ref.id)
            raise self.unsupported("SMEM array size", f"`{decl.name}` has {elements} elements"
                                   + (f" on each of {len(decl.known)} devices" if decl.known else "")
                                   + f": more than the {MAX_SCALAR_ELEMENTS} the checker follows as scalar state")
        self.scalar_of[ref.id] = self.new_scalar(ref.id)
        return self.scalar_of[ref.id]

    def new_scalar(self, bid: int) -> int:
        """Declares buffer ``bid`` a scalar array (its entry values, when known): its index."""
        decl = self.buffers[bid]
        init = [{"device": list(c), "values": [int(v) for v in np.asarray(a).reshape(-1)]}
                for c, a in sorted((decl.known or {}).items())]
        self.scalars.append({"name": decl.name, "len": int(np.prod(decl.shape or (1,))), "init": init, "buffer": bid})
        return len(self.scalars) - 1

    def scalar_index(self, ref: RefB, what: str) -> E.Expr:
        """The flat element index of a scalar view of SMEM scalar state."""
        decl = self.buffers[ref.id]
        if ref.stages:
            raise self.unsupported("SMEM array access", f"{what} of `{decl.name}` (SMEM integers the kernel uses as "
                                   "scalars) goes through a reshape view")
        if any(d[0] != "at" for d in ref.dims):
            raise self.unsupported("SMEM array access", f"{what} of `{decl.name}` (SMEM integers the kernel uses as "
                                   "scalars) takes a slice, not one element")
        flat: E.Expr = E.const(0)
        for d, size in zip(ref.dims, decl.shape):
            flat = E.op("add", E.op("mul", flat, E.const(size)), d[1])
        return flat

    def scalar_load(self, ref: RefB, sid: int, aval: Any) -> ExprB:
        """``ref[i]`` on SMEM scalar state: its value from here on, a variable."""
        if self.buffers[ref.id].space != "smem":
            return self.vector_load(ref, sid, aval)
        index = self.scalar_index(ref, "a load")
        if tuple(aval.shape) != ():
            raise self.unsupported("SMEM array access", f"a load of `{self.buffers[ref.id].name}` (SMEM integers the "
                                   "kernel uses as scalars) reads an array")
        var = self.fresh("smem")
        if ref.id in self.windows:
            self.read_window(ref)
        self.emit_quiet({"op": "scalar_load", "var": var, "scalar": sid, "index": index})
        return ExprB(("var", var), "b" if np.dtype(aval.dtype).kind == "b" else "i")

    def vector_load(self, ref: RefB, sid: int, aval: Any) -> Any:
        """``ref[...]`` of an array of scalar state (VMEM integers whose values are known):
        an index array (:class:`~semcheck.frontend.vectors.IdxVec`) of one scalar load per
        element, so what the kernel computes from it (cumulative sums, counts, device ids)
        is read with the values; as data, the load it is. Larger than an index array may
        be: data."""
        shape = tuple(int(n) for n in aval.shape)
        if ref.id in self.windows:
            self.read_window(ref)
        data = self.load(ref, aval)
        if ref.stages or not vectors.small(shape) or not all(isinstance(n, int) for n in ref.shape()):
            return data
        decl = self.buffers[ref.id]
        ranges = []
        for k, d in enumerate(ref.dims):
            row = int(np.prod(decl.shape[k + 1:] or (1,)))
            if d[0] == "at":
                ranges.append([E.op("mul", d[1], E.const(row))])
            else:
                step = slice_step(d)
                ranges.append([E.op("mul", E.op("add", d[1], E.const(i * step)), E.const(row)) for i in range(d[2])])
        kind = "b" if np.dtype(aval.dtype).kind == "b" else "i"
        exprs = []
        for parts in itertools.product(*ranges):
            flat: E.Expr = E.const(0)
            for p in parts:
                flat = E.op("add", flat, p)
            var = self.fresh("vmem")
            self.emit_quiet({"op": "scalar_load", "var": var, "scalar": sid, "index": flat})
            exprs.append(("var", var))
        if len(exprs) != int(np.prod(shape or (1,))):
            return data
        if shape == ():
            return ExprB(exprs[0], kind)
        return IdxVec(tuple(exprs), shape, kind, str(aval.dtype), data)

    def scalar_store(self, ref: RefB, sid: int, value: Any) -> None:
        """``ref[i] = value`` on SMEM scalar state: ``value`` must be an index value."""
        index = self.scalar_index(ref, "a store")
        self.written.add(ref.id)
        if not isinstance(value, ExprB) or value.kind == "f":
            # Data: the buffer is read as data on the next walk (KernelBuilder.build).
            self.data_stored.add(ref.id)
            raise self.unsupported("run-time data", "a value computed from data loaded from a buffer is stored into "
                                   f"`{self.buffers[ref.id].name}`, SMEM integers the kernel uses as scalars")
        if ref.id in self.windows:
            # Also a store into its cell, which a copy in flight races with.
            self.emit({"op": "store", "dst": ref, "value": ("index", value.expr), "cellwise": True})
        self.emit_quiet({"op": "scalar_store", "scalar": sid, "index": index, "value": value.expr})

    def scalar_swap(self, eqn: Any, env: dict, ref: RefB, sid: int, value: Any) -> None:
        """A store into SMEM scalar state that gives the old value (loaded first, when
        used)."""
        out = eqn.outvars[0]
        old: Any = ExprB(E.const(0), "i")
        if not isinstance(out, jax_core.DropVar) and used_later(out):
            old = self.scalar_load(ref, sid, out.aval)
        self.scalar_store(ref, sid, value)
        self.bind_outs(env, eqn, [old])

    def window_copy(self, src: RefB, dst: RefB) -> tuple[int, int] | None:
        """For a local copy of integers whose values are known (an input the script passes,
        never written by the kernel) into SMEM scalar state (an index window the kernel
        fetches, say): the scalar arrays of its source and destination; ``None`` for any
        other copy, which makes its SMEM destination data.

        Such a copy stays a DMA of the checker, and besides, where it starts, the
        destination's scalar state takes the copied values (:meth:`copy_scalars`); each
        load of the destination as scalar state also reads its cell (:meth:`read_window`).
        A load the copy may not have landed for is then a race, and with no race every
        load reads what the copy wrote, which is the value the scalar state gives it."""
        sdecl, ddecl = self.buffers[src.id], self.buffers[dst.id]
        if self.recorded and (sdecl.role != "input" or sdecl.known is None):
            return self.recorded_copy(src, dst)
        if (sdecl.role != "input" or sdecl.known is None or src.id in self.data_smem or src.stages or dst.stages
                or np.dtype(sdecl.dtype).kind not in "iu" or sdecl.dtype != ddecl.dtype):
            return None
        try:
            bounds = self.range_bounds(src)
            self.range_bounds(dst)
        except ValueError:
            return None
        if int(np.prod(bounds or (1,))) > MAX_COPIED_SCALARS:
            return None
        sid = self.scalar_state(dst, window=(dst.id,))
        if sid is None or ddecl.role != "scratch":
            return None
        if src.id not in self.table_of:
            self.table_of[src.id] = self.new_scalar(src.id)
        self.windows_found.add(dst.id)
        return self.table_of[src.id], sid

    def recorded_copy(self, src: RefB, dst: RefB) -> tuple | None:
        """For a local copy into SMEM scalar state of values the kernel computed (with
        ``--interpret-values``): the scalar arrays of the values the copies started here
        carried in JAX's interpreted run (per device, every copy's values one after the
        other) and of how many of them this device has started, with the copy's length;
        ``None`` when the run recorded none here (the destination is then data).

        Like :meth:`window_copy`'s, the copy stays a DMA of the checker and each load of
        its destination also reads its cell: a load the copy may not have landed for is a
        race, and without one every load reads what the copy wrote. The values are the
        interpreted run's, which every schedule computes when none races (the verdict
        names the run; docs/kernel-files.md)."""
        site = location.site(self.source_info)
        per_device = self.recorded.get(site)
        ddecl = self.buffers[dst.id]
        if per_device is None or src.stages or dst.stages or ddecl.role != "scratch":
            return None
        shape = dst.shape()
        if not all(isinstance(n, int) for n in shape):
            return None
        length = int(np.prod(shape or (1,)))
        if any(np.asarray(a).size != length or np.asarray(a).dtype.kind not in "iub"
               for arrays in per_device.values() for a in arrays):
            return None
        sid = self.scalar_state(dst, window=(dst.id,))
        if sid is None:
            return None
        if site not in self.recorded_tables:
            name = f"{self.buffers[src.id].name}@{location.short(self.loc)}"
            values = {c: [int(v) for a in arrays for v in np.asarray(a).reshape(-1)] for c, arrays in per_device.items()}
            table = self.recorded_scalar(f"{name} (copied values)", values, src.id, site)
            count = self.recorded_scalar(f"{name} (copies started)", {c: [0] for c in per_device}, src.id, site)
            self.recorded_tables[site] = RecordedCopy(name, table, count)
        self.windows_found.add(dst.id)
        rec = self.recorded_tables[site]
        return ("recorded", rec.table, rec.count, length, sid)

    def recorded_scalar(self, name: str, values: dict, buffer: int, site: str) -> int:
        """A scalar array of recorded values (per device coordinates): its index."""
        self.scalars.append({"name": name, "len": max([len(v) for v in values.values()] or [1]),
                             "init": [{"device": list(c), "values": v} for c, v in sorted(values.items())],
                             "buffer": buffer, "recorded": site})
        return len(self.scalars) - 1

    def copy_recorded(self, dst: RefB, table: int, count: int, length: int, sid: int) -> None:
        """The scalar state of a copy :meth:`recorded_copy` accepted: the destination's
        elements take the next ``length`` recorded values of this device."""
        started = self.fresh("copies")
        zero = E.const(0)
        self.emit_quiet({"op": "scalar_load", "var": started, "scalar": count, "index": zero})
        src = {"start": E.op("mul", ("var", started), E.const(length)), "dims": [(length, 1)]}
        self.emit_quiet({"op": "scalar_copy", "scalar": sid, "dst": self.scalar_range(dst), "source": table,
                         "src": src})
        self.emit_quiet({"op": "scalar_store", "scalar": count, "index": zero,
                         "value": E.op("add", ("var", started), E.const(1))})

    def copy_scalars(self, src: RefB, dst: RefB, table: int, sid: int) -> None:
        """The scalar state of a copy :meth:`window_copy` accepted: the destination's
        elements take the source's known values (SCHEMA.md ``scalar_copy``)."""
        if src.shape() != dst.shape():
            raise self.unsupported("DMA shape mismatch", f"a copy of {src.shape()} elements of `{self.name_of(src)}` "
                                   f"into {dst.shape()} of `{self.name_of(dst)}`")
        self.emit_quiet({"op": "scalar_copy", "scalar": sid, "dst": self.scalar_range(dst), "source": table,
                         "src": self.scalar_range(src)})

    def range_bounds(self, ref: RefB) -> list[int]:
        """The most elements of each sliced dimension of a view a copy of known integers
        reads or writes: its size; for a slice of computed size (a window of the length
        the kernel computes), which must then be the view's only sliced dimension, the
        buffer's dimension. ``ValueError`` for a view with another slice of computed size."""
        shape = self.buffers[ref.id].shape
        sliced = [(k, d) for k, d in enumerate(ref.dims) if d[0] == "slice"]
        if all(isinstance(d[2], int) for _, d in sliced):
            return [d[2] for _, d in sliced]
        if len(sliced) != 1:
            raise ValueError("a slice of computed size beside other sliced dimensions")
        return [int(shape[sliced[0][0]])]

    def scalar_range(self, ref: RefB) -> dict:
        """A view without reshapes as a strided block of flat (row-major) elements: the
        first one's index and, per sliced dimension, its size and stride; for a slice of
        computed size (:meth:`range_bounds`), its most elements and its ``count``."""
        shape = self.buffers[ref.id].shape
        bounds = iter(self.range_bounds(ref))
        start: E.Expr = E.const(0)
        out: dict[str, Any] = {"dims": []}
        for k, d in enumerate(ref.dims):
            row = int(np.prod(shape[k + 1:] or (1,)))
            start = E.op("add", start, E.op("mul", d[1], E.const(row)))
            if d[0] == "slice":
                out["dims"].append((next(bounds), slice_step(d) * row))
                if not isinstance(d[2], int):
                    out["count"] = d[2]
        return {"start": start, **out}

    def read_window(self, ref: RefB) -> None:
        """A load of an SMEM window (a buffer a copy of known integers fills) also reads its
        cell, as a copy into a private one-element buffer ``NAME@loads`` (so the checker
        sees a load the copy may not have landed for)."""
        probe = self.probes.get(ref.id)
        decl = self.buffers[ref.id]
        if probe is None:
            # In SMEM, one scalar at a time; a VMEM window's loads read views of it, into
            # the same view of a probe of its shape.
            shape = (1,) if decl.space == "smem" else decl.shape
            bid = self.declare_buffer(BufferDecl(name=f"{decl.name}@loads", space=decl.space, role="scratch",
                                                 shape=shape, dtype=decl.dtype, itemsize=decl.itemsize))
            probe = self.probes[ref.id] = RefB("buffer", bid, (("at", E.const(0)),))
        dst = probe if decl.space == "smem" else RefB("buffer", probe.id, ref.dims)
        leaf = ("load", ref, self.epoch, self.writes.get(ref.id, 0), self.loc, None)
        store = {"op": "store", "dst": dst, "value": leaf, "cellwise": True}
        # An SMEM index outside the array reads a word that is not the array's (Mosaic
        # does not check it): no cell of it is read, and the value loaded is none.
        inside: E.Expr = E.const(1)
        for d, size in zip(ref.dims, decl.shape):
            if d[0] == "at" and not (d[1][0] == "const" and 0 <= d[1][1] < size):
                bounds = E.op("and", E.op("ge", d[1], E.const(0)), E.op("lt", d[1], E.const(size)))
                inside = bounds if inside == E.const(1) else E.op("and", inside, bounds)
        if decl.space != "smem" or inside == E.const(1):
            self.emit(store)
            return
        # It writes only the private probe, which control flow's snapshots need not see.
        body, _ = self.block(lambda: self.emit(store))
        self.emit_quiet({"op": "when", "cond": inside, "body": body})
