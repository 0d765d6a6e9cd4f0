"""Views: ``.at[...]`` indexing, reshape and bitcast transforms composed into one
selection per dimension of the declared array (:class:`~semcheck.frontend.bindings.RefB`),
semaphore references and device ids."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import numpy as np
from jax._src import core as jax_core
from jax._src import tree_util

from . import exprs as E
from . import jaxcompat
from .bindings import RefB, ValB, mesh_of, slice_step
from .walker_state import WalkerPart


class Views(WalkerPart):
    """The :class:`~semcheck.frontend.walker.KernelWalker`'s reading of refs and device ids."""

    #: Whether the walker is reading a DMA wait's descriptor (see :meth:`offset`).
    waiting: bool = False

    def view(self, env: dict, node: Any, what: str) -> RefB:
        """Resolves a ref operand (a ref variable, or a ``TransformedRef`` inside a tree)."""
        if type(node).__name__ == "TransformedRef":
            base = node.ref
            if isinstance(base, (tuple, list)):
                raise self.unsupported("select_ref", f"{what} selects among several refs (pl.select_ref)")
            ref = self.view(env, base, what)
            for t in node.transforms:
                ref = self.apply_transform(env, ref, t, what)
            return ref
        b = self.read(env, node)
        if not isinstance(b, RefB):
            raise self.unsupported("non-ref", f"{what} is not a Ref")
        return b

    def apply_transform(self, env: dict, ref: RefB, t: Any, what: str) -> RefB:
        kind = jaxcompat.transform_kind(t)
        if kind == "bitcast":
            return self.bitcast(ref, t, what)
        if kind == "reshape":
            return self.reshape(ref, tuple(int(n) for n in t.shape), what)
        if kind != "indexer":
            raise self.unsupported(f"{kind} ref transform",
                                   f"{what} uses a `{kind}` view (supported: .at[...] with ints and pl.ds "
                                   "slices, reshape, bitcast to a type of the same width)")
        if tuple(getattr(t, "int_indexer_shape", ())) != ():
            raise self.unsupported("gather indexing", f"{what} is indexed with an array (gather)")
        view = ref.view_dims()
        if len(t.indices) != len(view):
            raise self.unsupported("indexing", f"{what}: {len(t.indices)} indices for a view of rank {len(view)}")
        dims = list(ref.dims)
        after: list[tuple] = []
        entries: list[tuple[tuple, tuple | None]] = []
        # Each index, then None where it is composed into ``dims`` (or is a unit dimension's).
        entry: tuple | None
        for v, idx in zip(view, t.indices):
            entry = self.index_entry(env, idx, what)
            kind = entry[0]
            if v[0] == "base":
                k = v[1]
                if ref.stages and entry[0] == "slice" and not isinstance(entry[2], int):
                    raise self.unsupported("dynamic slice size", f"{what} takes a slice of dynamic size of a "
                                           "dimension a reshape view kept")
                dims[k] = _compose(dims[k], _in_elements(entry, ref.ratio(k), what, self))
                entry = None
            elif v[0] == "unit":
                if entry[1] != E.const(0) or (entry[0] == "slice" and entry[2] != 1):
                    raise self.unsupported("indexing", f"{what} indexes a dimension of size 1 (added by a reshape) "
                                           "at a position other than 0")
                entry = None
            if kind == "slice":
                after.append(v if entry is None else ("group", entry[2]))
            entries.append((v, entry))
        if not ref.stages:
            return RefB(ref.what, ref.id, tuple(dims), packed=ref.packed)
        stages = ref.stages
        if any(e is not None for _, e in entries):
            stages = (*stages, ("index", tuple(entries)))
        return RefB(ref.what, ref.id, tuple(dims), stages, tuple(after), ref.packed)

    def index_entry(self, env: dict, idx: Any, what: str) -> tuple:
        """One index of an ``NDIndexer``: ``("at", e)`` or ``("slice", start, size, step)``."""
        if type(idx).__name__ != "Slice":
            aval = getattr(idx, "aval", None)
            if aval is not None and getattr(aval, "shape", ()) != ():
                raise self.unsupported("gather indexing", f"{what} is indexed with an array (gather)")
            return ("at", self.offset(env, idx, f"an index of {what}"))
        stride = idx.stride
        if not isinstance(stride, (int, np.integer)) or int(stride) < 1:
            raise self.unsupported("strided slice", f"{what} uses a slice with stride {stride}")
        size = idx.size
        if isinstance(size, jax_core.Literal):
            size = size.val
        if isinstance(size, (int, np.integer)):
            size = int(size)
        else:
            # A size computed from indices (SMEM state, a prefetched table): an
            # expression, evaluated per device like a start (DMAs only).
            size = self.expr(env, size, f"the size of a slice of {what}")
            if size[0] == "const":
                size = size[1]
        start = self.offset(env, idx.start, f"the start of a slice of {what}")
        return ("slice", start, size, int(stride))

    def offset(self, env: dict, x: Any, what: str) -> E.Expr:
        """An index or a slice's start. In the descriptor of a DMA wait (``waiting``), run-time
        data is read as 0: a wait counts the bytes of its views on its semaphore, and touches
        no cell, so where its views start does not matter (Mosaic checks only their shapes);
        noted in the kernel's ``ignored`` list."""
        if self.waiting:
            b = self.read(env, x)
            if isinstance(b, ValB):
                note = {"construct": "run-time offset of a DMA wait's descriptor", "loc": self.loc,
                        "why": "a wait counts only the bytes of its views on its semaphore, so where they start "
                               "(run-time data here) does not matter"}
                if note not in self.ignored:
                    self.ignored.append(note)
                return E.const(0)
        return self.expr(env, x, what)

    def bitcast(self, ref: RefB, t: Any, what: str) -> RefB:
        """A bitcast view. To a type of the same width it reads the same cells. To a wider
        one it packs ``ratio`` consecutive elements of the view's second-minor dimension
        into one (``jax._src.state.utils.bitcast``: row ``i`` of the result is rows ``[r*i,
        r*i + r)``), which must be an array dimension (:attr:`RefB.packed`); back to the
        narrower type, it unpacks that dimension again."""
        if ref.what != "buffer":
            raise self.unsupported("bitcast ref transform", f"{what} bitcasts a semaphore")
        decl = self.buffers[ref.id]
        to = np.dtype(getattr(t, "dtype", None) or getattr(t, "to_dtype"))
        width = decl.itemsize * math.prod(r for _, r in ref.packed)
        if to.itemsize == width:
            return ref
        view = ref.view_dims()
        name = f"`{decl.name}` ({decl.dtype}) to {to.name}, a type of another width"
        if len(view) < 2 or view[-2][0] != "base":
            raise self.unsupported("bitcast ref transform", f"{what} bitcasts {name}, on a view whose second-minor "
                                   "dimension is not one of the array's (a reshape made it)")
        k = view[-2][1]
        d = ref.dims[k]
        if to.itemsize < width:
            if ref.ratio(k) != width // to.itemsize:
                raise self.unsupported("bitcast ref transform", f"{what} bitcasts {name}, unpacking a dimension "
                                       "that no bitcast packed")
            return dataclasses.replace(ref, packed=tuple(p for p in ref.packed if p[0] != k))
        ratio = to.itemsize // width
        if ref.packed or to.itemsize % width or not isinstance(d[2], int) or d[2] % ratio or slice_step(d) != 1:
            raise self.unsupported("bitcast ref transform", f"{what} bitcasts {name}: supported once per view, "
                                   f"on a second-minor dimension of a static size that is a multiple of {ratio}")
        return dataclasses.replace(ref, packed=((k, ratio),))

    def reshape(self, ref: RefB, shape: tuple[int, ...], what: str) -> RefB:
        """``ref.reshape(shape)``: the view's dimensions regrouped (see :class:`RefB`)."""
        have = ref.shape()
        if ref.what != "buffer":
            raise self.unsupported("reshape ref transform", f"{what} reshapes a semaphore array")
        if not all(isinstance(n, int) for n in have):
            raise self.unsupported("reshape ref transform", f"{what} reshapes a view with a slice of dynamic size")
        if have == shape:
            return ref
        if math.prod(have) != math.prod(shape):
            raise self.unsupported("reshape ref transform", f"{what} reshapes a view of shape {have} to {shape}")
        view = ref.view_dims()
        src = [i for i, n in enumerate(have) if n != 1]
        dst = [j for j, n in enumerate(shape) if n != 1]
        new: list[tuple] = [("unit",)] * len(shape)
        merged: list[int] = []
        i = j = 0
        while i < len(src):
            i0, j0 = i, j
            p, q = have[src[i]], shape[dst[j]]
            i, j = i + 1, j + 1
            while p != q:
                if p < q:
                    p, i = p * have[src[i]], i + 1
                else:
                    q, j = q * shape[dst[j]], j + 1
            if i - i0 == 1 and j - j0 == 1:
                new[dst[j0]] = view[src[i0]]
                continue
            # Array dimensions merged or split here (a group's were, when it was made).
            merged.extend(view[a][1] for a in src[i0:i] if view[a][0] == "base")
            for b in dst[j0:j]:
                new[b] = ("group", shape[b])
        if any(ref.ratio(k) != 1 for k in merged):
            raise self.unsupported("reshape ref transform", f"{what} reshapes a view of shape {have} to {shape}, "
                                   "merging or splitting the dimension a bitcast to a wider type packed")
        stage = ("reshape", tuple(new), tuple(sorted(set(merged))))
        return RefB(ref.what, ref.id, ref.dims, (*ref.stages, stage), tuple(new), ref.packed)

    def buffer_view(self, env: dict, node: Any, what: str) -> RefB:
        r = self.view(env, node, what)
        if r.what != "buffer":
            raise self.unsupported("semaphore as data", f"{what} is a semaphore, not a buffer")
        return r

    def sem_ref(self, env: dict, node: Any, what: str) -> tuple[int, E.Expr | None]:
        """A scalar semaphore: its declaration and flat index (``None`` for a scalar)."""
        r = self.view(env, node, what)
        if r.what != "sem":
            raise self.unsupported("buffer as semaphore", f"{what} is a buffer, not a semaphore")
        decl = self.semaphores[r.id]
        if not decl.shape:
            return r.id, None
        flat: E.Expr = E.const(0)
        for dim, (d, size) in enumerate(zip(r.dims, decl.shape)):
            if d[0] != "at":
                raise self.unsupported("semaphore slice", f"{what} is a slice of semaphore array `{decl.name}`, not one semaphore")
            # Each dimension's index is checked against that dimension (as Mosaic lays the
            # array out), not only the flat one against the array's length.
            index = d[1] if len(decl.shape) == 1 else E.op("in_range", d[1], E.const(size), E.const(dim))
            flat = E.op("add", E.op("mul", flat, E.const(size)), index)
        return r.id, flat

    def dest(self, env: dict, device_id: Any, id_type: Any, what: str) -> tuple:
        """A device id: ``("own",)``, ``("mesh", exprs)``, ``("axes", pairs)`` or ``("logical", expr)``."""
        if device_id is None:
            return ("own",)
        kind = str(getattr(id_type, "name", id_type)).upper()
        if "LOGICAL" in kind:
            if isinstance(device_id, (tuple, list, dict)):
                raise self.unsupported("device id", f"{what}: a LOGICAL device id must be a scalar")
            return ("logical", self.expr(env, device_id, f"the device id of {what}"))
        if isinstance(device_id, dict):
            pairs = []
            for key, value in device_id.items():
                names = key if isinstance(key, tuple) else (key,)
                v = self.expr(env, value, f"the device id of {what}")
                for n in names:
                    if n not in self.mesh_axes:
                        raise self.unsupported("device id", f"{what}: device_id names axis `{n}`, not an axis of the mesh ({mesh_of(list(self.mesh_axes))})")
                if len(names) == 1:
                    pairs.append((names[0], v))
                    continue
                # A tuple of axes takes one linear index over them, row-major.
                for j, n in enumerate(names):
                    stride = 1
                    for m in names[j + 1:]:
                        stride *= self.mesh_axes[m]
                    pairs.append((n, E.op("rem", E.op("div", v, E.const(stride)), E.const(self.mesh_axes[n]))))
            return ("axes", tuple(pairs))
        if isinstance(device_id, (tuple, list)):
            return ("mesh", tuple(self.expr(env, v, f"the device id of {what}") for v in device_id))
        return ("mesh", (self.expr(env, device_id, f"the device id of {what}"),))

    def indexed(self, env: dict, ref_var: Any, flat: Sequence[Any], tree: Any, what: str) -> RefB:
        ref = self.view(env, ref_var, what)
        transforms = tree_util.tree_unflatten(tree, list(flat)) if tree is not None else ()
        for t in transforms:
            ref = self.apply_transform(env, ref, t, what)
        return ref

    def name_of(self, ref: RefB) -> str:
        return (self.buffers if ref.what == "buffer" else self.semaphores)[ref.id].name


def _in_elements(entry: tuple, ratio: int, what: str, views: Views) -> tuple:
    """An index of a dimension a bitcast packed (``ratio`` elements a word), in elements:
    an ``at`` names the word's first element, a slice covers its words' elements."""
    if ratio == 1:
        return entry
    first = E.op("mul", entry[1], E.const(ratio))
    if entry[0] == "at":
        return ("at", first)
    if entry[3] != 1:
        raise views.unsupported("strided slice", f"{what} takes a strided slice of a bitcast view")
    size = entry[2] * ratio if isinstance(entry[2], int) else E.op("mul", entry[2], E.const(ratio))
    return ("slice", first, size, 1)


def _compose(dim: tuple, entry: tuple) -> tuple:
    """An array dimension's view ``dim`` (a slice) narrowed by ``entry``."""
    base_start, base_step = dim[1], slice_step(dim)
    offset = entry[1] if base_step == 1 else E.op("mul", entry[1], E.const(base_step))
    if entry[0] == "at":
        return ("at", E.op("add", base_start, offset))
    step = base_step * entry[3]
    return ("slice", E.op("add", base_start, offset), entry[2], *((step,) if step != 1 else ()))
