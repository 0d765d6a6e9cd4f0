"""Walking a kernel jaxpr into statements.

The walker interprets the kernel jaxpr abstractly. Every jaxpr variable is bound to one
of:

* :class:`ExprB`: an integer or boolean scalar computed from ``axis_index``,
  ``program_id``, literals and loop variables (an :mod:`~semcheck_pallas.exprs` tree);
* :class:`RefB`: a buffer or semaphore, with the ``.at[...]`` views applied so far,
  composed into one selection per dimension of the declared array;
* :class:`ValB`: data (an array or a scalar loaded from a buffer, and compute on it).

Effectful equations become statements (dicts, element-level; :mod:`.cells` turns views
into cells). Anything the walker cannot translate faithfully raises
:class:`~semcheck_pallas.errors.Unsupported` with the construct and its location.

A value loaded from a buffer and stored only after a DMA, a semaphore operation, control
flow or a store to that buffer (``v = buf[...]; copy.start(); copy.wait(); o[...] = v``)
is read where it is loaded: every load leaves a *snapshot* placeholder at its place in
the statements, and a store that uses a value loaded before such a statement turns it
into a copy of the loaded view into a private VMEM buffer of its own
(``buf@7``, for a load at line 7) and reads that buffer instead. The checker thus sees
the load at its own point (its races, its value) and the store at its own. Unused
placeholders are dropped (:func:`resolve_snapshots`).

One unsupported construct does not end the walk: the equation that uses it is recorded in
``errors``, its results are bound to :class:`Poisoned`, and the walk goes on, so a kernel
author learns of every unsupported construct at once. An equation that reads a poisoned
binding is skipped without a second error (it is a consequence of the first) and poisons
its own results. The statements of a kernel with errors are never checked.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import numpy as np
from jax._src import core as jax_core
from jax._src import tree_util

from . import exprs as E
from . import vectors
from .vectors import IdxVec
from . import location
from .dataflow import sub_jaxprs
from .errors import Unsupported


class Tainted(Exception):
    """An equation read a :class:`Poisoned` binding: it is skipped, and its results are
    poisoned in turn."""

# --------------------------------------------------------------------------- bindings


@dataclasses.dataclass(frozen=True)
class ExprB:
    """An index value: an expression and its dtype kind (``i`` int, ``b`` bool)."""

    expr: E.Expr
    kind: str


@dataclasses.dataclass(frozen=True)
class RefB:
    """A view of a buffer or semaphore declaration.

    ``dims`` has one entry per dimension of the declared array: ``("at", expr)`` (the
    dimension is dropped) or ``("slice", start_expr, size[, step])``, the size an int or,
    for a slice of dynamic size (DMAs only), an expression, the step 1 when absent.

    After a ``reshape`` view, ``stages`` holds what follows, in order, and ``view`` the
    view's dimensions now. A dimension is ``("base", k)`` while it is the array's own
    dimension ``k`` (indexing it is composed into ``dims``: a reshape of other dimensions
    does not move it), ``("group", size)`` when a reshape merged or split it out of the
    array's dimensions (indexed in its stages), or ``("unit",)`` for a dimension of size 1
    a reshape added. A stage is ``("reshape", view, merged)`` (the dimensions after it, and
    the array dimensions it merged or split: the checker's cells are single elements
    along those) or ``("index", entries)``, one ``(dimension, index or None)`` per
    dimension of the view then (``None``: composed into ``dims``, or a unit dimension).
    """

    what: str  # "buffer" | "sem"
    id: int
    dims: tuple
    stages: tuple = ()
    view: tuple = ()

    def shape(self) -> tuple[int, ...]:
        if not self.stages:
            return tuple(d[2] for d in self.dims if d[0] == "slice")
        return tuple(self.view_size(v) for v in self.view)

    def view_size(self, v: tuple) -> Any:
        """The size of one of the view's dimensions (``view``)."""
        if v[0] == "base":
            return self.dims[v[1]][2]
        return v[1] if v[0] == "group" else 1

    def view_dims(self) -> tuple:
        """The view's dimensions, as in ``view`` (the kept array dimensions before any
        reshape)."""
        if self.stages:
            return self.view
        return tuple(("base", k) for k, d in enumerate(self.dims) if d[0] == "slice")


@dataclasses.dataclass(frozen=True)
class ValB:
    """Data: a value tree (see :func:`value_json`), its shape and dtype, and whether
    it is computed cell by cell (elementwise, no broadcasting of arrays)."""

    node: tuple
    shape: tuple
    dtype: str
    cellwise: bool


@dataclasses.dataclass(frozen=True)
class Poisoned:
    """The result of an equation the walker could not translate (see ``errors``)."""


POISONED = Poisoned()


@dataclasses.dataclass
class BufferDecl:
    name: str
    space: str
    role: str
    shape: tuple[int, ...]
    dtype: str
    itemsize: int
    shared: bool = False
    scoped: bool = False
    aliases: list[str] = dataclasses.field(default_factory=list)
    #: A scalar-prefetch operand's (or whole-array SMEM input's) values, per device
    #: coordinates (mesh order): the values the script passes, the entry contents of the
    #: kernel's scalar state.
    known: dict | None = None


@dataclasses.dataclass
class SemDecl:
    name: str
    kind: str
    shape: tuple[int, ...]
    scoped: bool = False


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

# Primitives that only annotate or time a kernel: recorded in the kernel's "ignored" list.
IGNORED = {"debug_print", "delay", "trace_start", "trace_stop", "trace_value", "debug_callback"}

#: The most elements of a copy of known integers into SMEM scalar state (see
#: :meth:`KernelWalker.window_copy`).
MAX_COPIED_SCALARS = 4096

#: Elements of SMEM scalar state (over all devices, when their values are known) the
#: checker follows, at most.
MAX_SCALAR_ELEMENTS = 1 << 22

#: Value trees larger than this are one function of their leaves (``KernelWalker.bounded``).
MAX_TREE = 256

# Identity on their single operand.
IDENTITY = {"multiple_of", "optimization_barrier", "pvary", "copy", "copy_p", "reduce_precision"}

CALLS = {"pjit", "jit", "closed_call", "core_call", "remat", "checkpoint", "custom_jvp_call",
         "custom_vjp_call", "custom_vjp_call_jaxpr", "custom_lin"}

SEM_KINDS = {"dma_sem": "dma", "semaphore": "regular", "barrier_semaphore": "barrier"}

# The snapshot mark of a data carry's load: its buffer changes only at the end of an
# iteration, so the load is current wherever the carry is used.
CARRY = "carry"



def _fmt_const(v: Any) -> str:
    v = np.asarray(v)
    if v.shape == ():
        x = v.item()
        if isinstance(x, float) and x.is_integer():
            return str(int(x))
        return repr(x)
    return f"const{list(v.shape)}"


def _mesh_of(names: Sequence[str]) -> str:
    return ",".join(names)


class KernelWalker:
    """Walks one kernel jaxpr. After :meth:`walk`, ``body`` holds the statements and
    ``buffers``/``semaphores`` the declarations (kernel arguments first, then the
    barrier semaphore and ``run_scoped`` allocations in the order met)."""

    def __init__(self, *, kernel_function: str | None, mesh_axes: dict[str, int],
                 data_smem: set[int] = frozenset(), windows: set[int] = frozenset(),
                 core_axis: str | None = None):
        self.kernel_function = kernel_function
        self.mesh_axes = mesh_axes
        # The axis of a pl.kernel's TensorCore mesh, whose devices are one chip's cores:
        # what semaphore_signal(core_index=c) names.
        self.core_axis = core_axis
        #: Per value node (by id, the node kept alive): the size of its tree.
        self.tree_sizes: dict[int, tuple[tuple, int]] = {}
        self.buffers: list[BufferDecl] = []
        self.semaphores: list[SemDecl] = []
        self.body: list[dict] = []
        self.blocks: list[list[dict]] = [self.body]
        self.barrier: int | None = None
        self.ignored: list[dict] = []
        self.errors: list[Unsupported] = []
        # (construct, message) of each DMA start that could not be translated: a wait on
        # the same descriptor fails the same way and is not reported again.
        self.failed_starts: set[tuple[str, str]] = set()
        self.counter = 0
        self.epoch = 0
        self.writes: dict[int, int] = {}
        self.loc: dict | None = None
        self.communicates = False
        self.uses_program_id = False
        # SMEM scalar state: buffer id -> index into ``scalars`` (see scalar_state); the
        # SMEM buffers in ``data_smem`` hold data instead.
        self.data_smem = data_smem
        self.scalar_of: dict[int, int] = {}
        self.scalars: list[dict] = []
        self.too_large: set[int] = set()
        # Buffers a DMA copies from or into, and SMEM buffers data was stored into: data.
        self.dma_touched: set[int] = set()
        self.data_stored: set[int] = set()
        # Copies of known integers into SMEM scalar state (see window_copy): the inputs
        # they copy from (buffer id -> index into ``scalars``), the SMEM buffers they fill
        # (found in this walk; ``windows``: in the previous one, whose loads are also read
        # as loads of their cells), and every buffer the kernel writes.
        self.table_of: dict[int, int] = {}
        self.windows = windows
        self.windows_found: set[int] = set()
        self.written: set[int] = set()
        self.probes: dict[int, RefB] = {}
        # The VMEM blocks Pallas's pipeline copies around grid steps (see blocks.py).
        self.pipelined: set[int] = set()

    # ------------------------------------------------------------------ helpers

    def unsupported(self, construct: str, message: str) -> Unsupported:
        return Unsupported(construct, message, self.loc)

    def fresh(self, hint: str) -> str:
        self.counter += 1
        return f"{hint}{self.counter}"

    def emit(self, stmt: dict) -> None:
        stmt["loc"] = self.loc
        self.blocks[-1].append(stmt)
        if stmt["op"] == "store":
            b = stmt["dst"].id
            self.writes[b] = self.writes.get(b, 0) + 1
        else:
            self.epoch += 1

    def declare_buffer(self, decl: BufferDecl) -> int:
        self.buffers.append(decl)
        return len(self.buffers) - 1

    def declare_sem(self, decl: SemDecl) -> int:
        self.semaphores.append(decl)
        return len(self.semaphores) - 1

    def ref_binding(self, aval: Any, name: str, role: str, *, scoped: bool, shared_hbm: bool) -> RefB:
        """Declares a kernel argument or allocation from its ``AbstractRef`` aval."""
        inner = getattr(aval, "inner_aval", None)
        if inner is None:
            raise self.unsupported("scalar argument", f"kernel argument `{name}` is not a Ref ({aval})")
        dtype_name = str(getattr(inner.dtype, "name", inner.dtype))
        space = str(getattr(aval, "memory_space", None) or "")
        shape = tuple(int(s) for s in inner.shape)
        for s in inner.shape:
            if not isinstance(s, (int, np.integer)):
                raise self.unsupported("dynamic shape", f"`{name}` has a dynamic shape {inner.shape}")
        if dtype_name in SEM_KINDS or space == "semaphore_mem":
            kind = SEM_KINDS.get(dtype_name)
            if kind is None:
                raise self.unsupported("semaphore type", f"`{name}` has semaphore dtype {dtype_name}")
            if kind == "barrier" and scoped:
                raise self.unsupported("scoped barrier semaphore", f"`{name}` is a barrier semaphore allocated by "
                                       "pl.run_scoped (a kernel's barrier semaphore is pltpu.get_barrier_semaphore())")
            if kind == "barrier":
                raise self.unsupported("barrier semaphore argument", f"`{name}` is a barrier semaphore passed as an argument")
            sid = self.declare_sem(SemDecl(name=name, kind=kind, shape=shape, scoped=scoped))
            return RefB("sem", sid, tuple(("slice", E.const(0), s) for s in shape))
        # A block without a memory space of its own is in VMEM on a TPU (Pallas's default).
        spaces = {"any": "hbm", "hbm": "hbm", "vmem": "vmem", "smem": "smem", "": "vmem", "default": "vmem"}
        if space not in spaces:
            raise self.unsupported(f"memory space {space}", f"`{name}` lives in memory space `{space}`")
        itemsize = _itemsize(dtype_name)
        decl = BufferDecl(name=name, space=spaces[space], role=role, shape=shape, dtype=dtype_name,
                          itemsize=itemsize, scoped=scoped,
                          shared=shared_hbm and spaces[space] == "hbm")
        bid = self.declare_buffer(decl)
        return RefB("buffer", bid, tuple(("slice", E.const(0), s) for s in shape))

    # ------------------------------------------------------------------ reading operands

    def read(self, env: dict, x: Any, raw: bool = False) -> Any:
        """The binding of a jaxpr atom (or a static Python value inside a tree). An index
        array (:class:`~semcheck_pallas.vectors.IdxVec`) is read as the data it is, unless
        ``raw`` (for the primitives that compute on it element by element)."""
        if isinstance(x, jax_core.Literal):
            return self.literal(x.val)
        if isinstance(x, jax_core.Var):
            if x not in env:
                raise self.unsupported("unbound variable", f"jaxpr variable {x} has no binding")
            if isinstance(env[x], Poisoned):
                raise Tainted()
            if isinstance(env[x], IdxVec) and not raw:
                return env[x].data
            return env[x]
        if isinstance(x, (bool, np.bool_)):
            return ExprB(E.const(int(x)), "b")
        if isinstance(x, (int, np.integer)):
            return ExprB(E.const(int(x)), "i")
        if isinstance(x, (float, np.floating, np.ndarray)) or hasattr(x, "shape"):
            return self.literal(x)
        return x

    def literal(self, v: Any) -> Any:
        arr = np.asarray(v)
        if arr.shape == () and arr.dtype.kind in "iub":
            return ExprB(E.const(int(arr.item())), "b" if arr.dtype.kind == "b" else "i")
        if arr.shape == ():
            return ValB(("const", _fmt_const(arr)), (), str(arr.dtype), True)
        if arr.size and (arr == 0).all():
            return ValB(("zeros",), tuple(arr.shape), str(arr.dtype), True)
        return ValB(("const", _fmt_const(arr)), tuple(arr.shape), str(arr.dtype), False)

    def expr(self, env: dict, x: Any, what: str) -> E.Expr:
        b = self.read(env, x)
        if isinstance(b, ExprB):
            if b.kind == "f":
                raise self.unsupported("float index arithmetic", f"{what} is a float computed from indices")
            return b.expr
        if isinstance(b, ValB):
            raise self.unsupported("run-time data", f"{what} depends on data loaded from a buffer "
                                   "(run-time data in control flow, an index, a device id or an amount)")
        raise self.unsupported("non-scalar", f"{what} is not an integer scalar ({b!r})")

    # ------------------------------------------------------------------ views

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
        name = type(t).__name__
        if name in ("RefBitcaster", "BitcastTransform"):
            return self.bitcast(ref, t, what)
        if name in ("RefReshaper", "ReshapeTransform"):
            return self.reshape(ref, tuple(int(n) for n in t.shape), what)
        if name != "NDIndexer":
            names = {"TransposeRef": "transpose", "SelectTransform": "select_ref", "RefNewAxis": "new axis"}
            construct = names.get(name, name)
            raise self.unsupported(f"{construct} ref transform",
                                   f"{what} uses a `{construct}` view (supported: .at[...] with ints and pl.ds "
                                   "slices, reshape, bitcast to a type of the same width)")
        if tuple(getattr(t, "int_indexer_shape", ())) != ():
            raise self.unsupported("gather indexing", f"{what} is indexed with an array (gather)")
        view = ref.view_dims()
        if len(t.indices) != len(view):
            raise self.unsupported("indexing", f"{what}: {len(t.indices)} indices for a view of rank {len(view)}")
        dims = list(ref.dims)
        after, entries = [], []
        for v, idx in zip(view, t.indices):
            entry = self.index_entry(env, idx, what)
            kind = entry[0]
            if v[0] == "base":
                k = v[1]
                if ref.stages and entry[0] == "slice" and not isinstance(entry[2], int):
                    raise self.unsupported("dynamic slice size", f"{what} takes a slice of dynamic size of a "
                                           "dimension a reshape view kept")
                dims[k] = _compose(dims[k], entry)
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
            return RefB(ref.what, ref.id, tuple(dims))
        stages = ref.stages
        if any(e is not None for _, e in entries):
            stages = (*stages, ("index", tuple(entries)))
        return RefB(ref.what, ref.id, tuple(dims), stages, tuple(after))

    def index_entry(self, env: dict, idx: Any, what: str) -> tuple:
        """One index of an ``NDIndexer``: ``("at", e)`` or ``("slice", start, size, step)``."""
        if type(idx).__name__ != "Slice":
            aval = getattr(idx, "aval", None)
            if aval is not None and getattr(aval, "shape", ()) != ():
                raise self.unsupported("gather indexing", f"{what} is indexed with an array (gather)")
            return ("at", self.expr(env, idx, f"an index of {what}"))
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
        start = self.expr(env, idx.start, f"the start of a slice of {what}")
        return ("slice", start, size, int(stride))

    def bitcast(self, ref: RefB, t: Any, what: str) -> RefB:
        """A bitcast view to a type of the same width reads the same cells."""
        if ref.what != "buffer":
            raise self.unsupported("bitcast ref transform", f"{what} bitcasts a semaphore")
        decl = self.buffers[ref.id]
        to = np.dtype(getattr(t, "dtype", None) or getattr(t, "to_dtype"))
        if to.itemsize != decl.itemsize:
            raise self.unsupported("bitcast ref transform", f"{what} bitcasts `{decl.name}` ({decl.dtype}) to "
                                   f"{to.name}, a type of another width (the shape changes with the memory layout)")
        return ref

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
        stage = ("reshape", tuple(new), tuple(sorted(set(merged))))
        return RefB(ref.what, ref.id, ref.dims, (*ref.stages, stage), tuple(new))

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
        for d, size in zip(r.dims, decl.shape):
            if d[0] != "at":
                raise self.unsupported("semaphore slice", f"{what} is a slice of semaphore array `{decl.name}`, not one semaphore")
            flat = E.op("add", E.op("mul", flat, E.const(size)), d[1])
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
                        raise self.unsupported("device id", f"{what}: device_id names axis `{n}`, not an axis of the mesh ({_mesh_of(list(self.mesh_axes))})")
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

    # ------------------------------------------------------------------ walking

    def walk(self, jaxpr: jax_core.Jaxpr, env: dict) -> list:
        """Walks the equations of ``jaxpr`` with ``env`` binding its variables; returns
        the bindings of its outvars (:data:`POISONED` where an error left none). An
        unsupported construct is recorded in ``errors`` and the walk goes on."""
        # An equation with no user frame of its own (inside a library's traced code, like
        # emit_pipeline's) is put at the user statement that led to it.
        outer = self.loc
        for eqn in jaxpr.eqns:
            self.loc = location.of_eqn(eqn, self.kernel_function) or outer
            try:
                self.equation(eqn, env)
            except Unsupported as u:
                self.errors.append(u)
                self.bind_outs(env, eqn, [POISONED] * len(eqn.outvars))
            except Tainted:
                self.bind_outs(env, eqn, [POISONED] * len(eqn.outvars))
        return [self.read_or_poisoned(env, v) for v in jaxpr.outvars]

    def read_or_poisoned(self, env: dict, v: Any) -> Any:
        """The binding of ``v``, :data:`POISONED` included (for values handed on to a
        sub-jaxpr, whose own equations skip what they cannot use)."""
        try:
            return self.read(env, v, raw=True)
        except Tainted:
            return POISONED

    def bind_outs(self, env: dict, eqn: Any, outs: Sequence[Any]) -> None:
        for v, o in zip(eqn.outvars, outs):
            if not isinstance(v, jax_core.DropVar):
                env[v] = o

    def equation(self, eqn: Any, env: dict) -> None:
        name = eqn.primitive.name
        handler = getattr(self, f"p_{name}", None)
        if handler is not None:
            handler(eqn, env)
            return
        if name in CALLS:
            self.p_call(eqn, env)
            return
        if name in IGNORED:
            self.ignored.append({"construct": name, "loc": self.loc})
            self.bind_outs(env, eqn, [ValB(("const", name), (), "", True)] * len(eqn.outvars))
            return
        if name in IDENTITY and len(eqn.invars) >= 1:
            self.bind_outs(env, eqn, [self.read(env, x, raw=True) for x in eqn.invars[: len(eqn.outvars)]])
            return
        ins = [self.read(env, x, raw=True) for x in eqn.invars]
        if any(isinstance(b, RefB) for b in ins):
            raise self.unsupported(name, f"primitive `{name}` on a Ref is not supported")
        if eqn.effects:
            raise self.unsupported(name, f"primitive `{name}` (with effects {set(map(str, eqn.effects))}) is not supported")
        if all(isinstance(b, ExprB) for b in ins) and all(getattr(v.aval, "shape", None) == () for v in eqn.outvars):
            self.index_primitive(eqn, env, ins)
            return
        outs = self.data_values(eqn, ins)
        self.bind_outs(env, eqn, self.index_vector(eqn, ins, outs) or outs)

    # ---------------------------------------------------------------- index arithmetic

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
            raise self.unsupported(name, f"primitive `{name}` on index values is not supported")
        return r

    def index_vector(self, eqn: Any, ins: list, data: list[ValB]) -> list | None:
        """The result of a primitive on small integer arrays of index values (see
        :mod:`~semcheck_pallas.vectors`), element by element; a scalar result is an index
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

    # ---------------------------------------------------------------- data (compute)

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

    # ---------------------------------------------------------------- Pallas primitives

    def p_program_id(self, eqn: Any, env: dict) -> None:
        self.uses_program_id = True
        self.bind_outs(env, eqn, [ExprB(("program_id", int(eqn.params["axis"])), "i")])

    def p_num_programs(self, eqn: Any, env: dict) -> None:
        self.bind_outs(env, eqn, [ExprB(("num_programs", int(eqn.params["axis"])), "i")])

    def p_axis_index(self, eqn: Any, env: dict) -> None:
        names = eqn.params["axis_name"]
        names = names if isinstance(names, tuple) else (names,)
        r: E.Expr = E.const(0)
        for n in names:
            if n not in self.mesh_axes:
                raise self.unsupported("axis_index", f"axis_index({n!r}): `{n}` is not an axis of the kernel's mesh ({_mesh_of(list(self.mesh_axes))})")
            r = E.op("add", E.op("mul", r, E.const(self.mesh_axes[n])), ("axis_index", n))
        self.bind_outs(env, eqn, [ExprB(r, "i")])

    def p_get_barrier_semaphore(self, eqn: Any, env: dict) -> None:
        if self.barrier is None:
            self.barrier = self.declare_sem(SemDecl(name="barrier", kind="barrier", shape=()))
        self.communicates = True
        self.bind_outs(env, eqn, [RefB("sem", self.barrier, ())])

    def p_semaphore_read(self, eqn: Any, env: dict) -> None:
        raise self.unsupported("semaphore_read", "pl.semaphore_read gives run-time data (a semaphore's value)")

    def p_semaphore_signal(self, eqn: Any, env: dict) -> None:
        args = eqn.params["args_tree"].unflatten(eqn.invars)
        sem, transforms, inc, device_id, core_index = args
        if core_index is not None and (self.core_axis is None or device_id is not None):
            raise self.unsupported(
                "semaphore_signal(core_index=...)",
                "core_index names a core of a chip: read in a pl.kernel over a TensorCore mesh (the cores are its "
                "devices) without a device_id; here " + ("with a device_id too" if self.core_axis is not None else
                                                         "each device is one core"))
        if transforms:
            sem = _transformed(sem, transforms)
        sid, idx = self.sem_ref(env, sem, "the semaphore of semaphore_signal")
        if core_index is not None:
            dest = ("axes", ((self.core_axis, self.expr(env, core_index, "the core_index of semaphore_signal")),))
        else:
            dest = self.dest(env, device_id, eqn.params.get("device_id_type"), "semaphore_signal")
        if dest[0] != "own":
            self.communicates = True
        self.emit({"op": "signal", "sem": (sid, idx), "inc": self.expr(env, inc, "the increment of semaphore_signal"),
                   "device": dest})

    def p_semaphore_wait(self, eqn: Any, env: dict) -> None:
        args = eqn.params["args_tree"].unflatten(eqn.invars)
        sem, transforms, value, decrement = args[:4]
        dec = self.read(env, decrement) if decrement is not None else ExprB(E.const(1), "b")
        if not (isinstance(dec, ExprB) and dec.expr == ("const", 1)):
            raise self.unsupported("semaphore_wait(decrement=False)", "a semaphore wait that does not decrement is not supported")
        if transforms:
            sem = _transformed(sem, transforms)
        sid, idx = self.sem_ref(env, sem, "the semaphore of semaphore_wait")
        self.emit({"op": "wait", "sem": (sid, idx), "amount": self.expr(env, value, "the amount of semaphore_wait")})

    def dma(self, env: dict, src: Any, dst: Any, dst_sem: Any, src_sem: Any, device_id: Any, id_type: Any) -> dict:
        s = self.buffer_view(env, src, "the DMA source")
        d = self.buffer_view(env, dst, "the DMA destination")
        self.written.add(d.id)
        if device_id is None and src_sem is None:
            window = self.window_copy(s, d)
            if window is None:
                self.dma_touched |= {s.id, d.id}
            return {"kind": "local", "src": s, "dst": d, "sem": self.sem_ref(env, dst_sem, "the DMA semaphore"),
                    "window": window}
        self.dma_touched |= {s.id, d.id}
        if src_sem is None or device_id is None:
            raise self.unsupported("dma", "a remote DMA needs both a send semaphore and a device id")
        if d.id in self.pipelined:
            raise self.unsupported("remote copy into a pipelined block",
                                   f"the remote copy writes into `{self.name_of(d)}`, a block Pallas pipelines: which "
                                   "of its two buffers the copy lands in depends on the receiver's pipeline")
        dest = self.dest(env, device_id, id_type, "the remote DMA")
        return {"kind": "remote", "src": s, "dst": d, "send_sem": self.sem_ref(env, src_sem, "the send semaphore"),
                "recv_sem": self.sem_ref(env, dst_sem, "the receive semaphore"), "device": dest}

    def p_dma_start(self, eqn: Any, env: dict) -> None:
        if eqn.params.get("add"):
            raise self.unsupported("dma_start(add=True)", "an accumulating DMA (add=True) is not supported")
        src, dst, dst_sem, src_sem, device_id = eqn.params["tree"].unflatten(eqn.invars)
        if device_id is not None:
            self.communicates = True
        try:
            d = self.dma(env, src, dst, dst_sem, src_sem, device_id, eqn.params.get("device_id_type"))
        except Unsupported as u:
            self.failed_starts.add((u.construct, u.message))
            raise
        self.emit({"op": "dma_start", "dma": d, "priority": int(eqn.params.get("priority", 0) or 0)})
        if d.get("window") is not None:
            self.copy_scalars(d["src"], d["dst"], *d["window"])

    # ------------------------------------------------------- known integers copied to SMEM

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
        if (sdecl.role != "input" or sdecl.known is None or src.id in self.data_smem or src.stages or dst.stages
                or np.dtype(sdecl.dtype).kind not in "iu" or sdecl.dtype != ddecl.dtype):
            return None
        sizes = [d[2] for d in src.dims if d[0] == "slice"]
        if not all(isinstance(n, int) for n in sizes + [d[2] for d in dst.dims if d[0] == "slice"]):
            return None
        if int(np.prod(sizes or (1,))) > MAX_COPIED_SCALARS:
            return None
        sid = self.scalar_state(dst)
        if sid is None or ddecl.role != "scratch":
            return None
        if src.id not in self.table_of:
            self.table_of[src.id] = self.new_scalar(src.id)
        self.windows_found.add(dst.id)
        return self.table_of[src.id], sid

    def copy_scalars(self, src: RefB, dst: RefB, table: int, sid: int) -> None:
        """The scalar state of a copy :meth:`window_copy` accepted: the destination's
        elements take the source's known values (SCHEMA.md ``scalar_copy``)."""
        if src.shape() != dst.shape():
            raise self.unsupported("DMA shape mismatch", f"a copy of {src.shape()} elements of `{self.name_of(src)}` "
                                   f"into {dst.shape()} of `{self.name_of(dst)}`")
        self.emit_quiet({"op": "scalar_copy", "scalar": sid, "dst": self.scalar_range(dst), "source": table,
                         "src": self.scalar_range(src)})

    def scalar_range(self, ref: RefB) -> dict:
        """A view without reshapes as a strided block of flat (row-major) elements: the
        first one's index and, per sliced dimension, its size and stride."""
        shape = self.buffers[ref.id].shape
        start: E.Expr = E.const(0)
        dims = []
        for k, d in enumerate(ref.dims):
            row = int(np.prod(shape[k + 1:] or (1,)))
            start = E.op("add", start, E.op("mul", d[1], E.const(row)))
            if d[0] == "slice":
                dims.append((d[2], slice_step(d) * row))
        return {"start": start, "dims": dims}

    def read_window(self, ref: RefB) -> None:
        """A load of an SMEM window (a buffer a copy of known integers fills) also reads its
        cell, as a copy into a private one-element buffer ``NAME@loads`` (so the checker
        sees a load the copy may not have landed for)."""
        probe = self.probes.get(ref.id)
        if probe is None:
            decl = self.buffers[ref.id]
            bid = self.declare_buffer(BufferDecl(name=f"{decl.name}@loads", space="smem", role="scratch",
                                                 shape=(1,), dtype=decl.dtype, itemsize=decl.itemsize))
            probe = self.probes[ref.id] = RefB("buffer", bid, (("at", E.const(0)),))
        leaf = ("load", ref, self.epoch, self.writes.get(ref.id, 0), self.loc, None)
        self.emit({"op": "store", "dst": probe, "value": leaf, "cellwise": True})

    def p_dma_wait(self, eqn: Any, env: dict) -> None:
        src, dst, dst_sem, src_sem, device_id = eqn.params["tree"].unflatten(eqn.invars)
        id_type = eqn.params.get("device_id_type")
        try:
            if eqn.params.get("insert_dummy_device"):
                # wait_send: JAX swapped the descriptor (src<->dst, sems swapped).
                d = self.dma(env, dst, src, src_sem, dst_sem, device_id, id_type)
                part = "send"
            else:
                d = self.dma(env, src, dst, dst_sem, src_sem, device_id, id_type)
                part = "recv" if d["kind"] == "remote" else "all"
        except Unsupported as u:
            if (u.construct, u.message) in self.failed_starts:
                raise Tainted() from u
            raise
        self.emit({"op": "dma_wait", "part": part, "dma": d})

    # ---------------------------------------------------------------- loads and stores

    def indexed(self, env: dict, ref_var: Any, flat: Sequence[Any], tree: Any, what: str) -> RefB:
        ref = self.view(env, ref_var, what)
        transforms = tree_util.tree_unflatten(tree, list(flat)) if tree is not None else ()
        for t in transforms:
            ref = self.apply_transform(env, ref, t, what)
        return ref

    def name_of(self, ref: RefB) -> str:
        return (self.buffers if ref.what == "buffer" else self.semaphores)[ref.id].name

    def p_get(self, eqn: Any, env: dict) -> None:
        ref = self.indexed(env, eqn.invars[0], eqn.invars[1:], eqn.params.get("tree"), "a load")
        if ref.what != "buffer":
            raise self.unsupported("semaphore load", "loading from a semaphore")
        aval = eqn.outvars[0].aval
        sid = self.scalar_state(ref)
        self.bind_outs(env, eqn, [self.scalar_load(ref, sid, aval) if sid is not None else self.load(ref, aval)])

    # ---------------------------------------------------------------- SMEM scalar state

    def scalar_state(self, ref: RefB) -> int | None:
        """The scalar array of a buffer the kernel uses as its own integer state: SMEM
        integers that are scratch or an operand whose values are known, that no DMA
        copies and no data is stored into (``data_smem``). Their loads and stores are
        read when the program is compiled (SCHEMA.md ``scalar_load``); ``None`` for any
        other buffer."""
        if ref.what != "buffer":
            return None
        if ref.id in self.scalar_of:
            return self.scalar_of[ref.id]
        decl = self.buffers[ref.id]
        if decl.space != "smem" or np.dtype(decl.dtype).kind not in "iub":
            return None
        if (decl.role != "scratch" and decl.known is None) or ref.id in self.data_smem:
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

    def emit_quiet(self, stmt: dict) -> None:
        """A statement read when the program is compiled: no DMA, store or control flow
        for snapshots to see."""
        stmt["loc"] = self.loc
        self.blocks[-1].append(stmt)

    def scalar_load(self, ref: RefB, sid: int, aval: Any) -> ExprB:
        """``ref[i]`` on SMEM scalar state: its value from here on, a variable."""
        index = self.scalar_index(ref, "a load")
        if tuple(aval.shape) != ():
            raise self.unsupported("SMEM array access", f"a load of `{self.buffers[ref.id].name}` (SMEM integers the "
                                   "kernel uses as scalars) reads an array")
        var = self.fresh("smem")
        if ref.id in self.windows:
            self.read_window(ref)
        self.emit_quiet({"op": "scalar_load", "var": var, "scalar": sid, "index": index})
        return ExprB(("var", var), "b" if np.dtype(aval.dtype).kind == "b" else "i")

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
        if not isinstance(out, jax_core.DropVar) and _used_later(out):
            old = self.scalar_load(ref, sid, out.aval)
        self.scalar_store(ref, sid, value)
        self.bind_outs(env, eqn, [old])

    def p_swap(self, eqn: Any, env: dict) -> None:
        ref = self.indexed(env, eqn.invars[0], eqn.invars[2:], eqn.params.get("tree"), "a store")
        if ref.what != "buffer":
            raise self.unsupported("semaphore store", "storing into a semaphore")
        sid = self.scalar_state(ref)
        if sid is not None:
            self.scalar_swap(eqn, env, ref, sid, self.read(env, eqn.invars[1]))
            return
        self.swap(eqn, env, ref, self.as_value(self.read(env, eqn.invars[1])))

    def swap(self, eqn: Any, env: dict, ref: RefB, val: ValB) -> None:
        """A store that gives the old value: when that is used, a load just before the
        store (read where it was loaded, like any value kept past a store)."""
        out = eqn.outvars[0]
        if not isinstance(out, jax_core.DropVar) and _used_later(out):
            old = self.load(ref, out.aval)
        else:
            old = ValB(("const", "swapped"), tuple(out.aval.shape), str(out.aval.dtype), False)
        self.store(ref, val)
        self.bind_outs(env, eqn, [old])

    def p_addupdate(self, eqn: Any, env: dict) -> None:
        ref = self.indexed(env, eqn.invars[0], eqn.invars[2:], eqn.params.get("tree"), "an accumulation")
        sid = self.scalar_state(ref)
        if sid is not None:
            inc = self.read(env, eqn.invars[1])
            cur = self.scalar_load(ref, sid, eqn.invars[1].aval)
            if isinstance(inc, ExprB) and inc.kind != "f":
                inc = ExprB(E.op("add", cur.expr, inc.expr), cur.kind)
            self.scalar_store(ref, sid, inc)
            return
        val = self.as_value(self.read(env, eqn.invars[1]))
        cur = ValB(("load", ref, self.epoch, self.writes.get(ref.id, 0), self.loc, None), val.shape, val.dtype, True)
        self.store(ref, ValB(self.bounded(("add", cur.node, val.node)), val.shape, val.dtype, val.cellwise))

    def p_masked_load(self, eqn: Any, env: dict) -> None:
        args = eqn.params["args_tree"].unflatten(eqn.invars)
        ref, transforms, mask, other = args[0], args[1], args[2], args[3]
        if mask is not None or other is not None:
            raise self.unsupported("masked load", "pl.load with a mask is not supported")
        self.p_get_like(eqn, env, ref, transforms)

    def p_get_like(self, eqn: Any, env: dict, ref_node: Any, transforms: Any) -> None:
        ref = self.view(env, ref_node, "a load")
        for t in transforms or ():
            ref = self.apply_transform(env, ref, t, "a load")
        aval = eqn.outvars[0].aval
        sid = self.scalar_state(ref)
        self.bind_outs(env, eqn, [self.scalar_load(ref, sid, aval) if sid is not None else self.load(ref, aval)])

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
        return ValB(leaf, tuple(aval.shape), str(aval.dtype), True)

    def register(self, what: str, shape: tuple, dtype: str, itemsize: int) -> RefB:
        """A private VMEM buffer of ``shape`` and ``dtype``, named ``WHAT@LINE`` after the
        statement being read."""
        line = (self.loc or {}).get("line", "?")
        bid = self.declare_buffer(BufferDecl(name=f"{what}@{line}", space="vmem", role="scratch",
                                             shape=tuple(shape), dtype=dtype, itemsize=itemsize))
        return RefB("buffer", bid, tuple(("slice", E.const(0), n) for n in shape))

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
            snap["dst"] = self.register(src.name, ref.shape(), src.dtype, src.itemsize)
            self.loc = at
        return ("load", snap["dst"], self.epoch, self.writes.get(snap["dst"].id, 0), loc, None)

    def p_masked_swap(self, eqn: Any, env: dict) -> None:
        args = eqn.params["args_tree"].unflatten(eqn.invars)
        ref_node, transforms, val, mask = args[0], args[1], args[2], args[3]
        if mask is not None:
            raise self.unsupported("masked store", "pl.store with a mask is not supported")
        ref = self.view(env, ref_node, "a store")
        for t in transforms or ():
            ref = self.apply_transform(env, ref, t, "a store")
        sid = self.scalar_state(ref)
        if sid is not None:
            self.scalar_swap(eqn, env, ref, sid, self.read(env, val))
            return
        self.swap(eqn, env, ref, self.as_value(self.read(env, val)))

    def store(self, dst: RefB, val: ValB) -> None:
        self.static_view(dst, "a store")
        self.written.add(dst.id)
        val = dataclasses.replace(val, node=self.current(val.node))
        cellwise = val.cellwise and val.shape == dst.shape()
        if val.node[0] in ("zeros",) or (val.node[0] in ("const", "index") and val.shape == ()):
            cellwise = True
        self.emit({"op": "store", "dst": dst, "value": val.node, "cellwise": cellwise})

    # ---------------------------------------------------------------- control flow

    def sub_env(self, jaxpr: Any, args: Sequence[Any], consts: Sequence[Any] = ()) -> tuple[Any, dict]:
        """Binds a (closed) sub-jaxpr's constvars and invars."""
        inner = getattr(jaxpr, "jaxpr", jaxpr)
        env: dict = {}
        closed_consts = list(getattr(jaxpr, "consts", ()) or ())
        constvals = list(consts) if consts else [self.literal(c) if not isinstance(c, (ExprB, ValB, RefB)) else c
                                                  for c in closed_consts]
        for v, c in zip(inner.constvars, constvals):
            env[v] = c
        for v, a in zip(inner.invars, args):
            env[v] = a
        return inner, env

    def p_call(self, eqn: Any, env: dict) -> None:
        params = eqn.params
        sub = params.get("jaxpr") or params.get("call_jaxpr") or params.get("fun_jaxpr")
        if sub is None:
            raise self.unsupported(eqn.primitive.name, f"call primitive `{eqn.primitive.name}` without a jaxpr")
        args = [self.read_or_poisoned(env, x) for x in eqn.invars]
        loc = self.loc
        inner, sub_env = self.sub_env(sub, args)
        outs = self.walk(inner, sub_env)
        self.loc = loc
        self.bind_outs(env, eqn, outs)

    def block(self, fn: Any) -> tuple[list, Any]:
        self.blocks.append([])
        result = fn()
        return self.blocks.pop(), result

    def p_cond(self, eqn: Any, env: dict) -> None:
        # A condition that cannot be translated is recorded (or, poisoned, is a
        # consequence) and the branches are still walked for the constructs in them.
        tainted = False
        try:
            index = self.expr(env, eqn.invars[0], "the condition of pl.when / lax.cond")
        except Unsupported as u:
            self.errors.append(u)
            index, tainted = E.const(0), True
        except Tainted:
            index, tainted = E.const(0), True
        args = [self.read_or_poisoned(env, x) for x in eqn.invars[1:]]
        loc = self.loc
        bodies, outs = [], []
        start_epoch, start_writes = self.epoch, dict(self.writes)
        for br in eqn.params["branches"]:
            inner, sub_env = self.sub_env(br, args)
            self.epoch, self.writes = start_epoch, dict(start_writes)
            body, o = self.block(lambda: self.walk(inner, sub_env))
            self.loc = loc
            bodies.append(body)
            outs.append(o)
        self.epoch, self.writes = start_epoch, start_writes
        if tainted:
            raise Tainted()
        results = []
        for k in range(len(eqn.outvars)):
            branch_outs = [o[k] for o in outs]
            if any(isinstance(b, Poisoned) for b in branch_outs):
                results.append(POISONED)
            elif all(isinstance(b, ExprB) and b.kind != "f" for b in branch_outs):
                results.append(ExprB(E.op("select_n", index, *[b.expr for b in branch_outs]),
                                     branch_outs[0].kind))
            elif all(isinstance(b, RefB) for b in branch_outs) and len(set(branch_outs)) == 1:
                results.append(branch_outs[0])
            else:
                raise self.unsupported("cond result", "a lax.cond / pl.when branch returns data or refs")
        if any(map(_effectful, bodies)):
            if len(bodies) == 2 and not _effectful(bodies[0]):
                self.emit({"op": "when", "cond": index, "body": bodies[1]})
            elif len(bodies) == 2 and not _effectful(bodies[1]):
                self.emit({"op": "when", "cond": E.op("eq", index, E.const(0)), "body": bodies[0]})
            else:
                self.emit({"op": "switch", "index": index, "branches": bodies})
        self.bind_outs(env, eqn, results)

    def p_run_scoped(self, eqn: Any, env: dict) -> None:
        # An allocation that cannot be translated is recorded and poisoned, and the body
        # still walked for the constructs in it; the scope is then skipped.
        tainted = False

        def refuse(u: Unsupported) -> None:
            nonlocal tainted
            self.errors.append(u)
            tainted = True

        if eqn.params.get("collective_axes"):
            refuse(self.unsupported("run_scoped(collective_axes=...)", "a collective allocation is not supported"))
        if any(eqn.params.get("ref_transforms", ()) or ()):
            refuse(self.unsupported("run_scoped ref_transforms", "transformed scoped allocations are not supported"))
        jaxpr = eqn.params["jaxpr"]
        inner = getattr(jaxpr, "jaxpr", jaxpr)
        consts = [self.read_or_poisoned(env, x) for x in eqn.invars]
        names = tuple(inner.debug_info.arg_names) if inner.debug_info and inner.debug_info.arg_names else ()
        sems, bufs, allocs = [], [], []
        for k, v in enumerate(inner.invars):
            name = names[k] if k < len(names) and names[k] else f"scoped{len(self.semaphores) + len(self.buffers)}"
            try:
                b = self.ref_binding(v.aval, name, "scratch", scoped=True, shared_hbm=False)
            except Unsupported as u:
                refuse(u)
                allocs.append(POISONED)
                continue
            (sems if b.what == "sem" else bufs).append(b.id)
            allocs.append(b)
        env2: dict = {}
        for v, c in zip(inner.constvars, consts):
            env2[v] = c
        for v, a in zip(inner.invars, allocs):
            env2[v] = a
        loc = self.loc
        body, outs = self.block(lambda: self.walk(inner, env2))
        self.loc = loc
        if tainted:
            raise Tainted()
        for o in outs:
            if not isinstance(o, (ExprB, Poisoned)):
                raise self.unsupported("run_scoped result", "pl.run_scoped returns data or refs")
        self.emit({"op": "scoped", "semaphores": sems, "buffers": bufs, "body": body})
        self.bind_outs(env, eqn, outs)

    def loop(self, eqn: Any, env: dict, *, carries: list, count: int | None,
             cond: tuple | None, body: tuple, hint: str) -> tuple[list, list]:
        """Common part of scan and while: ``carries`` are the initial bindings;
        ``cond``/``body`` are ``(jaxpr, consts)`` pairs taking the carries."""
        loc = self.loc
        # Set when the loop cannot be translated for an error already recorded: its
        # body is still walked for the constructs in it, and the loop then skipped.
        tainted = False
        # The carries a while loop's condition reads: its bounds (fori_loop) or its own.
        bounds = _carries_read(cond[0], len(cond[1])) if cond is not None else set()
        names, init, var_b = [], [], []
        # Data carries (an accumulator array, a loaded value): each lives in a private
        # VMEM buffer of its own, stored before the loop and at the end of every
        # iteration, and read wherever the carry is used.
        registers: dict[int, RefB] = {}
        carries = [_as_data(c) for c in carries]
        for k, c in enumerate(carries):
            if isinstance(c, Poisoned):
                tainted = True
                var_b.append(POISONED)
            elif isinstance(c, ExprB) and c.kind != "f":
                names.append(self.fresh(hint if k == 0 else "c"))
                init.append(c.expr)
                var_b.append(ExprB(("var", names[-1]), c.kind))
            elif isinstance(c, ValB) and k not in bounds:
                registers[k] = self.register(f"carry{k}", c.shape, c.dtype, _itemsize(c.dtype))
                self.store(registers[k], c)
                var_b.append(ValB(("load", registers[k], 0, 0, self.loc, CARRY), c.shape, c.dtype, True))
            else:
                # Recorded, and the body still walked (with this carry poisoned) for the
                # constructs after it.
                if k in bounds:
                    self.errors.append(self.unsupported(
                        "run-time data", "the trip count of a loop (its bounds or its condition) depends on data "
                        "loaded from a buffer"))
                else:
                    self.errors.append(self.unsupported(
                        "loop carry", "a loop carries a value that is neither an integer index nor data (a ref, "
                        "a float index)"))
                var_b.append(POISONED)
        cond_expr = None
        reload: list[dict] = []
        if cond is not None:
            cjaxpr, cconsts = cond
            inner, cenv = self.sub_env(cjaxpr, list(cconsts) + var_b)
            before = len(self.blocks[-1])
            depth_epoch = self.epoch
            (c_out,) = self.walk(inner, cenv)
            emitted = self.blocks[-1][before:]
            # Loads of SMEM scalar state in the condition (with, for a window, the read of
            # its cell): made before the loop and again at the end of every iteration, so
            # the condition reads the current values.
            probes = {p.id for p in self.probes.values()}

            def reloaded(x: dict) -> bool:
                return x["op"] == "scalar_load" or (x["op"] == "store" and x["dst"].id in probes)

            quiet = all(reloaded(x) or x["op"] == "snapshot" for x in emitted)
            if quiet:
                # Before the loop its variables are their initial values; at the end of an
                # iteration, their next ones (the condition reads the values it will see).
                reload = [dict(x) for x in emitted if reloaded(x)]
                for x in emitted:
                    _substitute(x, dict(zip(names, init)))
            if (not quiet and _effectful(emitted)) or self.epoch != depth_epoch:
                self.errors.append(self.unsupported("while condition", "the condition of a while loop has effects"))
                tainted = True
            elif isinstance(c_out, Poisoned):
                tainted = True
            elif not isinstance(c_out, ExprB):
                self.errors.append(self.unsupported("run-time data",
                                                    "the condition of a while loop depends on run-time data"))
                tainted = True
            else:
                cond_expr = c_out.expr
            self.loc = loc
        bjaxpr, bconsts = body
        inner, benv = self.sub_env(bjaxpr, list(bconsts) + var_b)
        self.epoch += 1  # a load from before the loop is not the value of every iteration

        def iteration() -> list:
            """The body, then the data carries' next values stored into their buffers
            (after every one is computed: a next value that reads a carry stored before
            it in this order is refused)."""
            nonlocal tainted
            outs = [_as_data(o) for o in self.walk(inner, benv)]
            self.loc = loc
            stored: set[int] = set()
            for k, reg in registers.items():
                o = outs[k]
                if isinstance(o, Poisoned):
                    tainted = True
                elif not isinstance(o, ValB):
                    self.errors.append(self.unsupported("loop carry", "a loop's data carry becomes an index value"))
                    tainted = True
                elif any(leaf.id in stored for leaf in load_views(o.node)):
                    self.errors.append(self.unsupported(
                        "loop carry", "the next values of a loop's data carries read each other's (a swap)"))
                    tainted = True
                else:
                    self.store(reg, o)
                    stored.add(reg.id)
            return outs

        stmts, outs = self.block(iteration)
        stmts.extend(reload)
        self.loc = loc
        nexts = []
        for k, (b, o) in enumerate(zip(var_b, outs)):
            if isinstance(b, Poisoned) or k in registers:
                continue
            if isinstance(o, Poisoned):
                tainted = True
                continue
            if not (isinstance(o, ExprB) and o.kind != "f"):
                raise self.unsupported("loop carry", "an integer loop carry becomes data loaded from a buffer "
                                       "(run-time data in an index)")
            nexts.append(o.expr)
        for x in reload:
            _substitute(x, dict(zip(names, nexts)))
        if tainted:
            raise Tainted()
        self.emit({"op": "loop", "vars": names, "init": init, "count": count, "cond": cond_expr,
                   "next": nexts, "body": stmts})
        return var_b, outs

    def p_scan(self, eqn: Any, env: dict) -> None:
        p = eqn.params
        # `reverse` orders only xs and ys: a scan with neither (refused below otherwise) runs
        # its carries the same way in both directions.
        nc, ncarry = p["num_consts"], p["num_carry"]
        ins = [self.read_or_poisoned(env, x) for x in eqn.invars]
        consts, carries, xs = ins[:nc], ins[nc: nc + ncarry], ins[nc + ncarry:]
        if xs:
            raise self.unsupported("scan over xs", "lax.scan over arrays (xs) is not supported; use fori_loop")
        ys = eqn.outvars[ncarry:]
        if any(not isinstance(y, jax_core.DropVar) and _used_later(y) for y in ys):
            raise self.unsupported("scan outputs", "stacked outputs of lax.scan are not supported")
        var_b, _ = self.loop(eqn, env, carries=carries, count=int(p["length"]), cond=None,
                             body=(p["jaxpr"], consts), hint="i")
        self.bind_outs(env, eqn, var_b + [ValB(("const", "ys"), (), "", False)] * len(ys))

    def p_while(self, eqn: Any, env: dict) -> None:
        p = eqn.params
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        ins = [self.read_or_poisoned(env, x) for x in eqn.invars]
        cconsts, bconsts, carries = ins[:cn], ins[cn: cn + bn], ins[cn + bn:]
        var_b, _ = self.loop(eqn, env, carries=carries, count=None, cond=(p["cond_jaxpr"], cconsts),
                             body=(p["body_jaxpr"], bconsts), hint="i")
        self.bind_outs(env, eqn, var_b)


def _carries_read(closed: Any, nconsts: int) -> set[int]:
    """The positions of the carries (the invars after ``nconsts`` constants) that the
    output of a loop's condition jaxpr depends on."""
    inner = getattr(closed, "jaxpr", closed)
    needed = {v for v in inner.outvars if isinstance(v, jax_core.Var)}
    for eqn in reversed(inner.eqns):
        if any(v in needed for v in eqn.outvars):
            needed.update(v for v in eqn.invars if isinstance(v, jax_core.Var))
    return {k for k, v in enumerate(inner.invars[nconsts:]) if v in needed}


def _as_data(b: Any) -> Any:
    """An index array as the data it is (a loop carries arrays as data); anything else as is."""
    return b.data if isinstance(b, IdxVec) else b


def _substitute(stmt: dict, values: dict) -> None:
    """A reloaded statement of a while condition (a load of SMEM scalar state, or a
    window's cell read with it) with the loop's variables replaced by ``values``."""
    if stmt["op"] == "scalar_load":
        stmt["index"] = E.substitute(stmt["index"], values)
    elif stmt["op"] == "store" and stmt["value"][0] == "load":
        _, ref, *rest = stmt["value"]
        stmt["value"] = ("load", _substitute_ref(ref, values), *rest)


def _substitute_ref(ref: RefB, values: dict) -> RefB:
    """``ref`` with the loop's variables in its indices replaced by ``values``."""
    def entry(e: tuple | None) -> tuple | None:
        if e is None:
            return None
        return (e[0], *(E.substitute(p, values) if isinstance(p, tuple) else p for p in e[1:]))

    stages = tuple(st if st[0] != "index" else ("index", tuple((v, entry(x)) for v, x in st[1])) for st in ref.stages)
    return dataclasses.replace(ref, dims=tuple(entry(d) for d in ref.dims), stages=stages)


def load_views(node: tuple) -> list[RefB]:
    """The views a value tree reads."""
    if node[0] == "load":
        return [node[1]]
    if node[0] == "add":
        return load_views(node[1]) + load_views(node[2])
    if node[0] == "fn":
        return [r for a in node[2] for r in load_views(a)]
    return []


def _itemsize(dtype: str) -> int:
    """The bytes of one element of ``dtype`` (a name): ``float0`` counts 1, a name numpy
    does not know 4."""
    if dtype == "float0":
        return 1
    try:
        return int(np.dtype(dtype).itemsize)
    except TypeError:
        return 4


def _effectful(body: list[dict]) -> bool:
    """Whether statements do anything (a snapshot no store used does not)."""
    return any(s["op"] != "snapshot" or "dst" in s for s in body)


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


def _compose(dim: tuple, entry: tuple) -> tuple:
    """An array dimension's view ``dim`` (a slice) narrowed by ``entry``."""
    base_start, base_step = dim[1], slice_step(dim)
    offset = entry[1] if base_step == 1 else E.op("mul", entry[1], E.const(base_step))
    if entry[0] == "at":
        return ("at", E.op("add", base_start, offset))
    step = base_step * entry[3]
    return ("slice", E.op("add", base_start, offset), entry[2], *((step,) if step != 1 else ()))


def slice_step(dim: tuple) -> int:
    """The step of a slice entry of ``RefB.dims``."""
    return dim[3] if len(dim) > 3 else 1


def _transformed(ref: Any, transforms: Any) -> Any:
    from jax._src.state.types import TransformedRef

    if type(ref).__name__ == "TransformedRef":
        return TransformedRef(ref.ref, (*ref.transforms, *transforms))
    return TransformedRef(ref, tuple(transforms))


_USES: dict[int, bool] = {}


def _used_later(var: Any) -> bool:
    """Whether an outvar is used (set by :func:`mark_uses` before walking)."""
    return _USES.get(id(var), True)


def mark_uses(jaxpr: jax_core.Jaxpr) -> None:
    """Records, for every variable of ``jaxpr`` and its sub-jaxprs, whether it is read."""
    used: set[int] = set()

    def visit(j: Any) -> None:
        j = getattr(j, "jaxpr", j)
        for eqn in j.eqns:
            for x in eqn.invars:
                if isinstance(x, jax_core.Var):
                    used.add(id(x))
            for sub in sub_jaxprs(eqn):
                visit(sub)
        for x in j.outvars:
            if isinstance(x, jax_core.Var):
                used.add(id(x))

    def collect(j: Any) -> None:
        j = getattr(j, "jaxpr", j)
        for eqn in j.eqns:
            for v in eqn.outvars:
                _USES[id(v)] = id(v) in used
            for sub in sub_jaxprs(eqn):
                collect(sub)

    visit(jaxpr)
    collect(jaxpr)
