"""Walking a kernel jaxpr into statements.

The walker interprets the kernel jaxpr abstractly, binding every jaxpr variable to an
index expression, a view of a buffer or semaphore, or data (:mod:`.bindings`). Its
parts: views (:mod:`.views`), compute on indices and data (:mod:`.compute`), SMEM scalar
state (:mod:`.scalars`), loads and stores (:mod:`.accesses`), control flow
(:mod:`.control`); this module walks the equations and reads the semaphore and DMA
primitives.

Effectful equations become statements (dicts, element-level; :mod:`.cells` turns views
into cells). Anything the walker cannot translate faithfully raises
:class:`~semcheck.frontend.errors.Unsupported` with the construct and its location.

One unsupported construct does not end the walk: the equation that uses it is recorded in
``errors``, its results are bound to :class:`Poisoned`, and the walk goes on, so a kernel
author learns of every unsupported construct at once. An equation that reads a poisoned
binding is skipped without a second error (it is a consequence of the first) and poisons
its own results. The statements of a kernel with errors are never checked.
"""

from __future__ import annotations

from typing import AbstractSet, Any, Sequence

import numpy as np
from jax._src import core as jax_core

from . import exprs as E
from . import jaxcompat
from . import location
from .accesses import Accesses
from .bindings import (POISONED, BufferDecl, ExprB, Poisoned, RefB, SemDecl, SemRead, Tainted, ValB, itemsize,
                       mesh_of)
from .compute import Compute
from .control import Control
from .errors import Unsupported
from .scalars import RecordedCopy, Scalars
from .vectors import IdxVec
from .views import Views

# Primitives that only annotate or time a kernel: recorded in the kernel's "ignored" list.
IGNORED = {"debug_print", "delay", "trace_start", "trace_stop", "trace_value", "debug_callback"}

# Identity on their single operand.
IDENTITY = {"multiple_of", "optimization_barrier", "pvary", "copy", "copy_p", "reduce_precision"}

CALLS = {"pjit", "jit", "closed_call", "core_call", "remat", "checkpoint", "custom_jvp_call",
         "custom_vjp_call", "custom_vjp_call_jaxpr", "custom_lin"}

SEM_KINDS = {"dma_sem": "dma", "semaphore": "regular", "barrier_semaphore": "barrier"}


def fmt_const(v: Any) -> str:
    v = np.asarray(v)
    if v.shape == ():
        x = v.item()
        if isinstance(x, float) and x.is_integer():
            return str(int(x))
        return repr(x)
    return f"const{list(v.shape)}"


class KernelWalker(Views, Compute, Scalars, Accesses, Control):
    """Walks one kernel jaxpr. After :meth:`walk`, ``body`` holds the statements and
    ``buffers``/``semaphores`` the declarations (kernel arguments first, then the
    barrier semaphore and ``run_scoped`` allocations in the order met)."""

    def __init__(self, *, kernel_function: str | None, mesh_axes: dict[str, int],
                 data_smem: AbstractSet[int] = frozenset(), windows: AbstractSet[int] = frozenset(),
                 core_axis: str | None = None, unit_axes: tuple[str, ...] = (),
                 recorded: dict[str, dict[tuple, list]] | None = None):
        self.kernel_function = kernel_function
        self.mesh_axes = mesh_axes
        # Axes of size one beside the mesh (a one-core TensorCore mesh inside a
        # shard_map): axis_index reads 0 there.
        self.unit_axes = unit_axes
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
        # With --interpret-values: the values the copies into SMEM carried in JAX's
        # interpreted run, by site, then device coordinates (see recorded_copy), and the
        # scalar arrays made of them, by site.
        self.recorded: dict[str, dict[tuple, list]] = recorded or {}
        self.recorded_tables: dict[str, RecordedCopy] = {}
        self.source_info: Any = None
        self.written: set[int] = set()
        self.probes: dict[int, RefB] = {}
        # The VMEM blocks Pallas's pipeline copies around grid steps (see blocks.py).
        self.pipelined: set[int] = set()
        # Reading the descriptor of a DMA wait, and its buffer views (see Views.offset).
        self.waiting = False

    def unsupported(self, construct: str, message: str) -> Unsupported:
        return Unsupported(construct, message, self.loc)

    def unknown_primitive(self, name: str, what: str) -> Unsupported:
        """A primitive the walker does not read (``what``: how it was used), naming the JAX
        version: one a newer JAX traces may be new to this front end."""
        return self.unsupported(name, f"primitive `{name}` {what} is not supported (not one semcheck's front end "
                                      f"reads, under jax {jaxcompat.jax_version()})")

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

    def emit_quiet(self, stmt: dict) -> None:
        """A statement read when the program is compiled: no DMA, store or control flow
        for snapshots to see."""
        stmt["loc"] = self.loc
        self.blocks[-1].append(stmt)

    def declare_buffer(self, decl: BufferDecl) -> int:
        self.buffers.append(decl)
        return len(self.buffers) - 1

    def declare_sem(self, decl: SemDecl) -> int:
        self.semaphores.append(decl)
        return len(self.semaphores) - 1

    def ref_binding(self, aval: Any, name: str, role: str, *, scoped: bool, shared_hbm: bool,
                    default_space: str = "vmem") -> RefB:
        """Declares a kernel argument or allocation from its ``AbstractRef`` aval (in
        ``default_space`` when it names no memory space)."""
        inner = getattr(aval, "inner_aval", None)
        if inner is None:
            raise self.unsupported("scalar argument", f"kernel argument `{name}` is not a Ref ({aval})")
        dtype_name = str(getattr(inner.dtype, "name", inner.dtype))
        space = jaxcompat.memory_space(aval)
        shape = tuple(int(s) for s in inner.shape)
        for s in inner.shape:
            if not isinstance(s, (int, np.integer)):
                raise self.unsupported("dynamic shape", f"`{name}` has a dynamic shape {inner.shape}")
        if dtype_name in SEM_KINDS or space == "semaphore":
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
        # A block without a memory space of its own is in VMEM on a TPU (Pallas's default);
        # a pl.kernel operand in ANY.
        if space == "default":
            space = default_space
        spaces = {"any": "hbm", "hbm": "hbm", "vmem": "vmem", "smem": "smem"}
        if space not in spaces:
            raise self.unsupported(f"memory space {space}", f"`{name}` lives in memory space `{space}`")
        width = itemsize(dtype_name)
        decl = BufferDecl(name=name, space=spaces[space], role=role, shape=shape, dtype=dtype_name,
                          itemsize=width, scoped=scoped,
                          shared=shared_hbm and spaces[space] == "hbm")
        bid = self.declare_buffer(decl)
        return RefB("buffer", bid, tuple(("slice", E.const(0), s) for s in shape))

    def read(self, env: dict, x: Any, raw: bool = False) -> Any:
        """The binding of a jaxpr atom (or a static Python value inside a tree). An index
        array (:class:`~semcheck.frontend.vectors.IdxVec`) is read as the data it is, unless
        ``raw`` (for the primitives that compute on it element by element)."""
        if isinstance(x, jax_core.Literal):
            return self.literal(x.val)
        if isinstance(x, jax_core.Var):
            if x not in env:
                raise self.unsupported("unbound variable", f"jaxpr variable {x} has no binding")
            if isinstance(env[x], Poisoned):
                raise Tainted()
            if isinstance(env[x], SemRead):
                raise self.steers(env[x])
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
            return ValB(("const", fmt_const(arr)), (), str(arr.dtype), True)
        if arr.size and (arr == 0).all():
            return ValB(("zeros",), tuple(arr.shape), str(arr.dtype), True)
        return ValB(("const", fmt_const(arr)), tuple(arr.shape), str(arr.dtype), False)

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

    def walk(self, jaxpr: jax_core.Jaxpr, env: dict) -> list:
        """Walks the equations of ``jaxpr`` with ``env`` binding its variables; returns
        the bindings of its outvars (:data:`POISONED` where an error left none). An
        unsupported construct is recorded in ``errors`` and the walk goes on."""
        # An equation with no user frame of its own (inside a library's traced code, like
        # emit_pipeline's) is put at the user statement that led to it.
        outer = self.loc
        for eqn in jaxpr.eqns:
            self.loc = location.of_eqn(eqn, self.kernel_function) or outer
            self.source_info = eqn.source_info
            try:
                self.equation(eqn, env)
            except Unsupported as u:
                if u.loc is None:
                    u.loc = self.loc  # a layout error of jaxcompat: the user's line
                self.errors.append(u)
                self.bind_outs(env, eqn, [POISONED] * len(eqn.outvars))
            except Tainted:
                self.bind_outs(env, eqn, [POISONED] * len(eqn.outvars))
        return [self.read_or_poisoned(env, v) for v in jaxpr.outvars]

    def read_or_poisoned(self, env: dict, v: Any) -> Any:
        """The binding of ``v``, :data:`POISONED` included (for values handed on to a
        sub-jaxpr, whose own equations skip what they cannot use), and a semaphore's value
        (:class:`SemRead`), which the sub-jaxpr may only print."""
        if isinstance(v, jax_core.Var) and isinstance(env.get(v), SemRead):
            return env[v]
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
        jaxcompat.check_params(eqn)
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
        read = next((env[x] for x in eqn.invars if isinstance(x, jax_core.Var) and isinstance(env.get(x), SemRead)),
                    None)
        if read is not None:
            # Compute on a semaphore's value: still that value, for debug output only.
            self.bind_outs(env, eqn, [read] * len(eqn.outvars))
            return
        if name in IDENTITY and len(eqn.invars) >= 1:
            self.bind_outs(env, eqn, [self.read(env, x, raw=True) for x in eqn.invars[: len(eqn.outvars)]])
            return
        ins = [self.read(env, x, raw=True) for x in eqn.invars]
        if any(isinstance(b, RefB) for b in ins):
            raise self.unknown_primitive(name, "on a Ref")
        if eqn.effects:
            raise self.unknown_primitive(name, f"(with effects {set(map(str, eqn.effects))})")
        if all(isinstance(b, ExprB) for b in ins) and all(getattr(v.aval, "shape", None) == () for v in eqn.outvars):
            self.index_primitive(eqn, env, ins)
            return
        outs = self.data_values(eqn, ins)
        self.bind_outs(env, eqn, self.index_vector(eqn, ins, outs) or outs)

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
            if n in self.unit_axes:
                continue
            if n not in self.mesh_axes:
                raise self.unsupported("axis_index", f"axis_index({n!r}): `{n}` is not an axis of the kernel's mesh ({mesh_of(list(self.mesh_axes))})")
            r = E.op("add", E.op("mul", r, E.const(self.mesh_axes[n])), ("axis_index", n))
        self.bind_outs(env, eqn, [ExprB(r, "i")])

    def p_get_barrier_semaphore(self, eqn: Any, env: dict) -> None:
        jaxcompat.barrier_semaphore(eqn)
        if self.barrier is None:
            self.barrier = self.declare_sem(SemDecl(name="barrier", kind="barrier", shape=()))
        self.communicates = True
        self.bind_outs(env, eqn, [RefB("sem", self.barrier, ())])

    def p_semaphore_read(self, eqn: Any, env: dict) -> None:
        """``pl.semaphore_read``: a semaphore's count at one moment of one schedule. Read
        only where its value reaches debug output (``pl.debug_print``) or nothing, which
        the protocol never sees (listed in ``ignored``); any other use is refused where
        it happens (:meth:`steers`)."""
        (sem, transforms) = jaxcompat.semaphore_read_operands(eqn)
        if transforms:
            sem = jaxcompat.transformed_ref(sem, transforms)
        sid, _ = self.sem_ref(env, sem, "the semaphore of semaphore_read")
        self.ignored.append({"construct": "semaphore_read", "loc": self.loc,
                             "why": "its value reaches only debug output, or nothing"})
        self.bind_outs(env, eqn, [SemRead(self.loc, self.semaphores[sid].name)] * len(eqn.outvars))

    def steers(self, read: SemRead) -> Unsupported:
        """The error of a semaphore's value (``pl.semaphore_read``) used where it steers
        the kernel: control flow, an index, an amount, a device id, stored data."""
        return self.unsupported(
            "semaphore_read", f"the value of `{read.semaphore}` that pl.semaphore_read gives at "
            f"{location.short(read.loc)} steers the kernel here: a semaphore's count depends on the schedule, so "
            "semcheck reads pl.semaphore_read only where its value reaches debug output (pl.debug_print) or nothing")

    def p_semaphore_signal(self, eqn: Any, env: dict) -> None:
        sem, transforms, inc, device_id, core_index = jaxcompat.semaphore_signal_operands(eqn)
        if core_index is not None and (self.core_axis is None or device_id is not None):
            raise self.unsupported(
                "semaphore_signal(core_index=...)",
                "core_index names a core of a chip: read in a pl.kernel over a TensorCore mesh (the cores are its "
                "devices) without a device_id; here " + ("with a device_id too" if self.core_axis is not None else
                                                         "each device is one core"))
        if transforms:
            sem = jaxcompat.transformed_ref(sem, transforms)
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
        sem, transforms, value, decrement = jaxcompat.semaphore_wait_operands(eqn)
        dec = self.read(env, decrement) if decrement is not None else ExprB(E.const(1), "b")
        if not (isinstance(dec, ExprB) and dec.expr == ("const", 1)):
            raise self.unsupported("semaphore_wait(decrement=False)", "a semaphore wait that does not decrement is not supported")
        if transforms:
            sem = jaxcompat.transformed_ref(sem, transforms)
        sid, idx = self.sem_ref(env, sem, "the semaphore of semaphore_wait")
        self.emit({"op": "wait", "sem": (sid, idx), "amount": self.expr(env, value, "the amount of semaphore_wait")})

    def dma(self, env: dict, src: Any, dst: Any, dst_sem: Any, src_sem: Any, device_id: Any, id_type: Any) -> dict:
        s = self.buffer_view(env, src, "the DMA source")
        d = self.buffer_view(env, dst, "the DMA destination")
        if s.packed or d.packed:
            raise self.unsupported("bitcast ref transform", "a DMA copies a bitcast view of a type of another width")
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

    def wait_descriptor(self, env: dict, src: Any, dst: Any, dst_sem: Any, src_sem: Any, device_id: Any,
                        id_type: Any) -> dict:
        """The descriptor of a DMA wait, read as Mosaic reads it: its semaphores and the
        shapes of its views (their offsets may be run-time data, see :meth:`offset`); its
        device id is not read (a wait waits on this device's semaphore)."""
        # Only the buffer views' offsets may be run-time data: the semaphores are waited on.
        self.waiting = True
        try:
            s = self.buffer_view(env, src, "the DMA source")
            d = self.buffer_view(env, dst, "the DMA destination")
        finally:
            self.waiting = False
        if device_id is None and src_sem is None:
            return {"kind": "local", "src": s, "dst": d, "sem": self.sem_ref(env, dst_sem, "the DMA semaphore"),
                    "window": None}
        if src_sem is None or device_id is None:
            raise self.unsupported("dma", "a remote DMA needs both a send semaphore and a device id")
        return {"kind": "remote", "src": s, "dst": d, "send_sem": self.sem_ref(env, src_sem, "the send semaphore"),
                "recv_sem": self.sem_ref(env, dst_sem, "the receive semaphore"), "device": ("own",)}

    def p_dma_start(self, eqn: Any, env: dict) -> None:
        if eqn.params.get("add"):
            raise self.unsupported("dma_start(add=True)", "an accumulating DMA (add=True) is not supported")
        op = jaxcompat.dma_operands(eqn)
        if op.device_id is not None:
            self.communicates = True
        try:
            jaxcompat.check_local_copy(op)
            d = self.dma(env, op.src, op.dst, op.dst_sem, op.src_sem, op.device_id, eqn.params.get("device_id_type"))
        except Unsupported as u:
            self.failed_starts.add((u.construct, u.message))
            raise
        self.emit({"op": "dma_start", "dma": d, "priority": int(eqn.params.get("priority", 0) or 0)})
        if d.get("window") is not None and d["window"][0] == "recorded":
            self.copy_recorded(d["dst"], *d["window"][1:])
        elif d.get("window") is not None:
            self.copy_scalars(d["src"], d["dst"], *d["window"])

    def p_dma_wait(self, eqn: Any, env: dict) -> None:
        op = jaxcompat.dma_operands(eqn)
        id_type = eqn.params.get("device_id_type")
        try:
            send = jaxcompat.dma_wait_is_send(eqn, op)
            jaxcompat.check_local_copy(op, swapped=send)
            if send:
                # wait_send: JAX swapped the descriptor (src<->dst, sems swapped).
                d = self.wait_descriptor(env, op.dst, op.src, op.src_sem, op.dst_sem, op.device_id, id_type)
                part = "send"
            else:
                d = self.wait_descriptor(env, op.src, op.dst, op.dst_sem, op.src_sem, op.device_id, id_type)
                part = "recv" if d["kind"] == "remote" else "all"
        except Unsupported as u:
            if (u.construct, u.message) in self.failed_starts:
                raise Tainted() from u
            raise
        self.emit({"op": "dma_wait", "part": part, "dma": d})

