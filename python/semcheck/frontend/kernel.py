"""One captured ``pallas_call`` / ``pl.kernel`` equation -> one kernel record of the
JSON document (SCHEMA.md)."""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import Any

import numpy as np

from . import blocks, cells, probes
from . import exprs as E
from . import jaxcompat
from . import location
from .errors import Refused, Unsupported, internal_error
from .accesses import resolve_snapshots
from .bindings import POISONED, BufferDecl, RefB
from .dataflow import mark_uses
from .walker import KernelWalker


@dataclasses.dataclass
class Captured:
    """What the capture hook found: the equation and where it runs."""

    eqn: Any
    #: ``[(mesh, manual_axes), ...]`` of the enclosing ``shard_map``s, outermost first.
    shard_maps: list
    #: The user frame that called the jitted function, if known.
    call_loc: dict | None
    #: Times the script invoked it.
    invocations: int = 1
    #: What Mosaic's TPU lowering said (``None`` if not attempted).
    mosaic: dict | None = None
    #: The values the script passed to the scalar-prefetch operands and whole-array
    #: integer SMEM inputs, per device coordinates, by kernel argument (``None``: there
    #: are none, or the values could not be computed).
    prefetch: dict | None = None
    #: Why the values of the scalar-prefetch operands are unknown.
    prefetch_error: str | None = None
    #: With ``--interpret-values``: why the script's run in JAX's TPU interpret mode
    #: stopped early (the copies it recorded until then are used).
    interpret_error: str | None = None
    #: The jaxpr the equation is in (``pl.kernel``'s wrapper, for jax 0.8/0.9's ``core_map``).
    context: Any = None
    #: What tells this kernel from another but the values it was called with: kernels
    #: equal in it are one kernel checked over several sets of values (routings, say).
    body: Any = None
    #: The name the script gave the routing it called the kernel with (``semcheck.routings.routing``).
    label: str | None = None


#: JAX's name for an argument a ``def kernel(*refs)`` kernel takes in its star: ``refs[3]``.
_STAR_ARG = re.compile(r"\w+\[(\d+)\]")

#: The names the body of a ``def kernel(*refs)`` kernel bound its refs to when JAX traced
#: it (``capture._watch_kernel_traces``), per (source, argument names) of its jaxpr:
#: ``{i: name}``, or ``None`` when two traces of it disagree.
TRACED_NAMES: dict[tuple, dict[int, str] | None] = {}


def _traced_key(jaxpr: Any) -> tuple | None:
    info = getattr(jaxpr, "debug_info", None)
    names = getattr(info, "arg_names", None) if info else None
    return (getattr(info, "func_src_info", None), tuple(names)) if names else None


def note_traced_names(jaxpr: Any, names: dict[int, str]) -> None:
    """Records what a kernel's body named its refs (see :data:`TRACED_NAMES`)."""
    key = _traced_key(jaxpr)
    if key is not None and names:
        TRACED_NAMES[key] = names if TRACED_NAMES.get(key, names) == names else None


def _arg_names(jaxpr: Any) -> tuple:
    key = _traced_key(jaxpr)
    if key is None:
        return ()
    names = key[1]
    traced = TRACED_NAMES.get(key)
    if traced:
        names = tuple(traced.get(int(m.group(1)), n) if (m := _STAR_ARG.fullmatch(n or "")) else n for n in names)
    return _forwarded_names(location.of_function(jaxpr)[1], names)


def _forwarded_names(loc: dict | None, names: tuple) -> tuple:
    """``names`` with each ``args[i]`` of a kernel written ``def kernel(*args, **kw)``
    that hands its arguments on (``f(seq_idx, *args, **kw)``, ``f`` a function of its
    module) named after the parameter it reaches, read from the source. (What the body
    binds them to itself, ``x_ref, o_ref = args[:2]``, is read as it is traced:
    :data:`TRACED_NAMES`.)"""
    if not loc or not any(_STAR_ARG.fullmatch(n or "") for n in names):
        return names
    try:
        with open(loc["file"]) as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return names
    defs = [f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    # The function defined at the kernel's line (its name may be the pallas_call's `name`).
    kernel = next((f for f in defs if loc["line"] in (f.lineno, *(d.lineno for d in f.decorator_list))), None)
    if kernel is None or kernel.args.vararg is None:
        return names
    vararg = kernel.args.vararg.arg
    found = _handed_on(kernel, vararg, {f.name: f for f in defs})
    out = []
    for n in names:
        m = re.fullmatch(rf"{re.escape(vararg)}\[(\d+)\]", n or "")
        out.append(found.get(int(m.group(1)), n) if m else n)
    return tuple(out)


def _handed_on(kernel: ast.AST, vararg: str, funcs: dict[str, Any]) -> dict[int, str]:
    """``{i: name}`` from a call ``f(a, *args, ...)`` in ``kernel``: ``f``'s parameters."""
    for call in ast.walk(kernel):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in funcs):
            continue
        starred = [k for k, a in enumerate(call.args)
                   if isinstance(a, ast.Starred) and isinstance(a.value, ast.Name) and a.value.id == vararg]
        if len(starred) != 1 or any(isinstance(a, ast.Starred) for a in call.args[:starred[0]]):
            continue
        callee = funcs[call.func.id].args
        return dict(enumerate(a.arg for a in (callee.posonlyargs + callee.args)[starred[0]:]))
    return {}


def _compiler_param(cp: Any, name: str, default: Any = None) -> Any:
    cp = jaxcompat.mosaic_params(cp)
    if cp is None:
        return default
    return getattr(cp, name, default)


class KernelBuilder:
    """Builds the kernel record of one captured equation."""

    def __init__(self, cap: Captured, forced: dict[int, list[int]] | None = None):
        self.cap = cap
        #: Cell sizes a program of several kernels imposes on some buffers (by buffer
        #: index: a size per dimension that the buffer's cells must divide), so that the
        #: kernels that share an array cut it alike.
        self.forced = forced or {}
        #: Per kernel argument, what it was declared as: ``{"buffer": i}``,
        #: ``{"semaphore": i}`` or ``None`` (not read).
        self.arguments: list[dict | None] = []
        #: The kernel launch, read for the installed JAX (``None`` when it cannot be:
        #: ``call_error`` says why).
        self.call: jaxcompat.KernelCall | None = None
        self.call_error: Unsupported | None = None
        try:
            self.call = jaxcompat.kernel_call(cap.eqn, cap.context)
        except Unsupported as u:
            u.loc = u.loc or cap.call_loc
            self.call_error = u
        self.prim = self.call.primitive if self.call else ("pallas_call" if cap.eqn.primitive.name == "pallas_call"
                                                           else "mpmd_map")
        fname, floc = location.of_function(self.call.jaxpr) if self.call else (None, None)
        self.function = fname
        self.function_loc = floc
        given = self.call.name if self.call else cap.eqn.params.get("name")
        self.name = given if isinstance(given, str) and given else (fname or self.prim)
        #: The operands whose blocks Pallas copies around grid steps (``blocks``).
        self.pipes: list[blocks.Pipelined] = []
        #: Per buffer, the dimensions kept in its cell shape for slices of dynamic size.
        self.kept: dict[int, set[int]] = {}
        #: The walker of the current walk (its ``loc``: where a failure happened).
        self.walker: KernelWalker | None = None
        self.record: dict[str, Any] = {
            "name": self.name,
            "primitive": self.prim,
            "function": floc,
            "call": cap.call_loc,
            "invocations": cap.invocations,
            "status": "ok",
            "errors": [],
        }

    def launch(self) -> jaxcompat.KernelCall:
        """The kernel launch (``call``), read by the steps of :meth:`build` only: it raises
        ``call_error`` before them when the launch could not be read."""
        assert self.call is not None, "build() raises call_error before reading the launch"
        return self.call

    # ------------------------------------------------------------------ mesh and grid

    def mesh(self) -> tuple[str, dict[str, int], tuple[str, ...]]:
        """The kernel's mesh: its kind, its axes, and the axes beside them whose
        ``axis_index`` reads 0 (a one-core TensorCore mesh inside a ``shard_map``)."""
        if self.prim == "pallas_call":
            return *self.shard_map_mesh(), ()
        meshes = self.launch().meshes
        if len(meshes) != 1:
            raise Unsupported("several meshes", f"pl.kernel over {len(meshes)} meshes", self.function_loc)
        mesh = meshes[0]
        kind = type(mesh).__name__
        if kind != "TensorCoreMesh":
            raise Unsupported(kind, f"pl.kernel over a {kind} (SparseCore and other meshes are not supported)",
                              self.function_loc)
        axes = jaxcompat.core_mesh_axes(mesh)
        if self.cap.shard_maps:
            cores = int(np.prod(list(axes.values())))
            if cores != 1:
                raise Unsupported("TensorCore mesh inside shard_map",
                                  f"a pl.kernel over {cores} TensorCores of each chip inside a shard_map over chips: "
                                  "the cores of one chip share its HBM, which semcheck models only for a pl.kernel "
                                  "over a TensorCore mesh alone (one chip)", self.function_loc)
            # One core per chip: the kernel runs once on each device of the shard_map,
            # and the core axis only ever reads 0.
            return *self.shard_map_mesh(), tuple(axes)
        return "tensorcore", axes, ()

    def shard_map_mesh(self) -> tuple[str, dict[str, int]]:
        """The mesh of a kernel that runs once on each device of its ``shard_map`` (none
        outside one); JAX's refusal when the ``shard_map`` is manual over only some axes."""
        if not self.cap.shard_maps:
            return "none", {}
        mesh, _ = self.cap.shard_maps[-1]
        manual: set = set()
        for _, m in self.cap.shard_maps:
            manual |= set(m or ())
        axes = dict(zip(mesh.axis_names, (int(s) for s in mesh.axis_sizes)))
        if manual and manual != set(axes):
            raise Refused("Mosaic kernels cannot be automatically partitioned. Please wrap the call in a "
                          f"shard_map. (the shard_map is manual over {sorted(manual)} of mesh axes {list(axes)})",
                          "partial shard_map")
        return "shard_map", axes

    def grid(self) -> tuple[int, ...]:
        if self.prim != "pallas_call":
            return ()
        gm = self.launch().grid_mapping
        if getattr(gm, "num_dynamic_grid_bounds", 0):
            raise Unsupported("dynamic grid", "the grid has dynamic bounds", self.function_loc)
        return tuple(int(g) for g in gm.grid)

    # ------------------------------------------------------------------ arguments

    def declare_arguments(self, w: KernelWalker, kind: str) -> dict:
        call = self.launch()
        invars = call.jaxpr.invars
        traced = _arg_names(call.jaxpr)
        names = [n if (i < len(traced) and n) else f"arg{i}" for i, n in enumerate(list(traced) + [""] * len(invars))]
        env: dict = {}
        n_in, n_out = call.num_inputs, call.num_outputs
        roles = ["input"] * n_in + ["output"] * n_out + ["scratch"] * (len(invars) - n_in - n_out)
        aliases = call.input_output_aliases
        pipelined = self.pipelined_blocks(call.grid_mapping) if call.grid_mapping is not None else {}
        shared = kind == "tensorcore"
        out_start = roles.index("output") if "output" in roles else len(roles)
        self.arguments = [None] * len(invars)
        for i, (v, role) in enumerate(zip(invars, roles)):
            src = [k for k, o in aliases.items() if o == i - out_start] if role == "output" else []
            if src and isinstance(env.get(invars[src[0]]), RefB) and env[invars[src[0]]].what == "sem":
                # A semaphore operand handed back out: the same semaphore.
                env[v] = env[invars[src[0]]]
                self.arguments[i] = {"semaphore": env[v].id}
                w.semaphores[env[v].id].role = "input_output"
                continue
            if src and (src[0] in pipelined) != (i in pipelined):
                w.errors.append(Unsupported("BlockSpec pipelining", f"`{names[i]}` is aliased to `{names[src[0]]}`, "
                                            "and Pallas pipelines the blocks of only one of them", self.pipeline_loc()))
                env[v] = POISONED
                continue
            if src and i not in pipelined:
                in_ref = env.get(invars[src[0]])
                if isinstance(in_ref, RefB) and in_ref.what == "buffer" and w.buffers[in_ref.id].space == "hbm":
                    decl = w.buffers[in_ref.id]
                    decl.role = "input_output"
                    decl.aliases.append(names[i])
                    env[v] = in_ref
                    self.arguments[i] = {"buffer": in_ref.id}
                    continue
            w.loc = self.function_loc
            if i in pipelined:
                self.pipeline(w, env, v, i, pipelined[i], names[i], role, src[0] if src else None)
                arrays = [p.array for p in self.pipes if p.index == i]
                self.arguments[i] = {"buffer": arrays[0]} if arrays else None
                continue
            try:
                env[v] = w.ref_binding(v.aval, names[i], role, scoped=False, shared_hbm=shared,
                                       default_space=call.default_space)
                self.arguments[i] = {"buffer" if env[v].what == "buffer" else "semaphore": env[v].id}
                if env[v].what == "sem":
                    w.semaphores[env[v].id].role = role
                if self.cap.prefetch is not None and all(i in vs for vs in self.cap.prefetch.values()):
                    w.buffers[env[v].id].known = {c: vs[i] for c, vs in self.cap.prefetch.items()}
            except Unsupported as u:
                # Recorded; what uses the argument is skipped, the rest still read.
                w.errors.append(u)
                env[v] = POISONED
        for v in call.jaxpr.constvars:
            w.errors.append(Unsupported("captured constant", f"the kernel closes over a constant array ({v.aval})",
                                        self.function_loc))
            env[v] = POISONED
        return env

    def pipeline(self, w: KernelWalker, env: dict, v: Any, i: int, bm: Any, name: str, role: str,
                 alias: int | None) -> None:
        """Binds argument ``v`` to the VMEM block Pallas copies around grid steps, and
        declares its array (an output aliased to pipelined input ``alias`` shares its)."""
        array = None
        if alias is not None:
            arrays = [p.array for p in self.pipes if p.index == alias]
            if not arrays:  # the input could not be read: its error is recorded
                env[v] = POISONED
                return
            array = arrays[0]
            decl = w.buffers[array]
            decl.role = "input_output"
            decl.aliases.append(name)
        try:
            p = blocks.declare(w, v, bm, name, role, self.pipeline_loc(), array)
        except Unsupported as u:
            w.errors.append(u)
            env[v] = POISONED
            return
        p.index = i
        self.pipes.append(p)
        env[v] = p.block

    def num_index_operands(self) -> int:
        """The number of scalar-prefetch operands (they come first)."""
        gm = self.launch().grid_mapping
        if gm is None:
            return 0
        return int(gm.num_index_operands)

    def pipeline_loc(self) -> dict | None:
        """Where Pallas's pipeline copies are said to happen: the ``pallas_call``."""
        return self.cap.call_loc or self.function_loc

    def pipelined_blocks(self, gm: Any) -> dict[int, Any]:
        """The kernel arguments whose blocks Pallas copies around grid steps (see
        :mod:`~semcheck.frontend.blocks`), by argument index: their block mappings."""
        n_idx = gm.num_index_operands
        return {n_idx + k: bm for k, bm in enumerate(gm.block_mappings) if blocks.is_pipelined(bm)}

    def recorded(self) -> dict[str, dict[tuple, list]]:
        """The values the kernel's copies into SMEM carried in JAX's interpreted run
        (``--interpret-values``), by site, then device coordinates."""
        out: dict[str, dict[tuple, list]] = {}
        prefix = location.recorded_key("")
        for coords, values in (self.cap.prefetch or {}).items():
            for k, arrays in values.items():
                if isinstance(k, str) and k.startswith(prefix):
                    out.setdefault(k[len(prefix):], {})[coords] = arrays
        return out

    def record_prefetch(self, w: KernelWalker) -> None:
        """Says which scalar-prefetch and SMEM operands the kernel was read with (their
        values, per device), or why their values are unknown, and which copies into SMEM
        it was read with the values of JAX's interpreted run."""
        if self.cap.prefetch_error is not None:
            self.record["prefetch"] = {"error": self.cap.prefetch_error}
        if w.recorded_tables:
            runs = self.recorded()
            self.record.setdefault("prefetch", {})["recorded"] = [
                {"name": rec.name,
                 "copies": [{"device": list(c), "count": len(a)} for c, a in sorted(runs[site].items())]}
                for site, rec in w.recorded_tables.items()]
        if self.cap.interpret_error:
            self.record.setdefault("prefetch", {})["interpret_error"] = self.cap.interpret_error
        known = [sc for sc in w.scalars if sc["init"] and "recorded" not in sc]
        if known:
            self.record.setdefault("prefetch", {})["operands"] = [
                {"name": sc["name"], "shape": list(w.buffers[sc["buffer"]].shape), "values": sc["init"],
                 "space": w.buffers[sc["buffer"]].space,
                 **({"copied": True} if sc["buffer"] in w.table_of else {})}
                for sc in known]

    # ------------------------------------------------------------------ build rules

    def build_rules(self, w: KernelWalker, kind: str) -> dict:
        cp = self.launch().compiler_params
        collective_id = _compiler_param(cp, "collective_id")
        skip = bool(_compiler_param(cp, "skip_device_barrier", False))
        allow = bool(_compiler_param(cp, "allow_collective_id_without_custom_barrier", False))
        custom = w.barrier is not None
        comm = w.communicates
        if custom or collective_id is not None:
            jaxcompat.collective_id_assignment(self.function_loc)
        entry: dict[str, Any] = {
            "collective_id": None if collective_id is None else int(collective_id),
            "uses_barrier_semaphore": custom,
            "has_communication": comm,
            "skip_device_barrier": skip,
            "allow_collective_id_without_custom_barrier": allow,
            "implicit_entry_barrier": comm and not custom and not skip,
            "dimension_semantics": _dimension_semantics(cp),
        }
        if self.cap.mosaic is not None:
            entry["mosaic"] = self.cap.mosaic
        return entry

    @staticmethod
    def refusal(entry: dict) -> Refused | None:
        """JAX's own refusal (``jax/_src/tpu_custom_call.py``), word for word."""
        if entry["uses_barrier_semaphore"]:
            if entry["collective_id"] is None:
                return Refused("collective_id has to be specified when using a custom barrier",
                               "barrier without collective_id")
        elif entry["collective_id"] is not None and not entry["allow_collective_id_without_custom_barrier"]:
            return Refused("collective_id has to be unspecified or None when not using a custom barrier",
                           "collective_id without barrier")
        return None

    # ------------------------------------------------------------------ the record

    def build(self) -> dict:
        rec = self.record
        try:
            if self.call_error is not None:
                raise self.call_error
            kind, axes, unit_axes = self.mesh()
            rec["mesh"] = {"kind": kind, "axes": [{"name": n, "size": s} for n, s in axes.items()]}
            grid = self.grid()
            rec["grid"] = list(grid)
            jaxpr = self.launch().jaxpr
            mark_uses(jaxpr)
            # SMEM integers a DMA copies, or data is stored into, hold data, not scalar
            # state: when the walk finds some it read as scalar state, it walks again with
            # those read as data.
            # The SMEM buffers filled by copies of known integers (window_copy) read their
            # cells at every load: when the walk finds new ones, it walks again too. An
            # input such a copy reads that the kernel writes is data.
            data: set[int] = set()
            windows: set[int] = set()
            core_axis = next(iter(axes)) if kind == "tensorcore" and len(axes) == 1 else None
            while True:
                w = KernelWalker(kernel_function=self.function, mesh_axes=axes, data_smem=data, windows=windows,
                                 core_axis=core_axis, unit_axes=unit_axes, recorded=self.recorded())
                self.walker = w
                self.pipes = []
                env = self.declare_arguments(w, kind)
                prefetch = [env[v] for v in jaxpr.invars[:self.num_index_operands()]]
                blocks.copy_in(w, self.pipes, grid, prefetch, self.pipeline_loc())
                w.walk(jaxpr, env)
                blocks.copy_out(w, self.pipes, grid, prefetch, self.pipeline_loc())
                tables = set(w.table_of) | {sc["buffer"] for sc in w.scalars if "recorded" in sc}
                again = (({sc["buffer"] for sc in w.scalars} - tables) & w.dma_touched) | w.data_stored
                again |= tables & w.written
                if not again - data and not w.windows_found - windows:
                    break
                data |= again
                windows |= w.windows_found
            w.body[:] = resolve_snapshots(w.body)
            probes.guard_window_probes(w.body, {p.id for p in w.probes.values()})
            self.record_prefetch(w)
            rec["ignored"] = w.ignored
            rec["communicates"] = w.communicates or (kind == "tensorcore" and _has_shared(w))
            if w.errors:
                # Every unsupported construct the walk met, in kernel order, once per
                # construct, line and message (a function called from several places is
                # one thing to change).
                rec["status"] = "unsupported"
                seen = set()
                for e in w.errors:
                    key = (e.construct, e.message, (e.loc or {}).get("file"), (e.loc or {}).get("line"))
                    if key not in seen:
                        seen.add(key)
                        rec["errors"].append(e.record())
                return rec
            entry = self.build_rules(w, kind)
            rec["entry"] = entry
            refused = self.refusal(entry)
            if refused is not None:
                rec["status"] = "refused"
                rec["refusal"] = refused.record()
            gran = cells.Granularity(w.buffers, w.body, axes, grid, w.scalars, forced=self.forced)
            g = gran.run()
            self.kept = gran.kept
            for loc, name, index in gran.outside.values():
                rec["ignored"].append({
                    "construct": "SMEM load out of range", "loc": loc,
                    "why": f"loads `{name}` outside the array (index {index} on some device): Mosaic does not check an "
                           "SMEM index, so the word read is not the array's; its value reaches nothing the protocol "
                           "uses (a select discards it)"})
            rec["buffers"] = [self.buffer_json(b, g[i], self.kept.get(i, set())) for i, b in enumerate(w.buffers)]
            rec["semaphores"] = [{"name": s.name, "kind": s.kind, "shape": list(s.shape),
                                  "len": int(np.prod(s.shape)) if s.shape else None, "scoped": s.scoped,
                                  "role": s.role}
                                 for s in w.semaphores]
            rec["arguments"] = self.arguments
            rec["body"] = [self.stmt_json(s, w.buffers, g) for s in w.body]
            rec["scalars"] = [{"name": sc["name"], "len": sc["len"], "init": sc["init"]} for sc in w.scalars]
        except Refused as r:
            rec["status"] = "refused"
            rec["refusal"] = r.record()
        except Unsupported as u:
            rec["status"] = "unsupported"
            rec["errors"].append(u.record())
        return rec

    @staticmethod
    def buffer_json(b: BufferDecl, g: list[int], kept: set[int]) -> dict:
        return {
            "name": b.name,
            "space": b.space,
            "role": b.role,
            "shape": cells.cell_shape(b, g, kept),
            "array_shape": list(b.shape),
            "cell": list(g),
            "cell_dims": cells.cell_dims(b, g, kept),
            "dtype": b.dtype,
            "cell_bytes": int(np.prod(g or [1])) * b.itemsize,
            "shared": b.shared,
            "scoped": b.scoped,
            "aliases": b.aliases,
        }

    def stmt_json(self, s: dict, bufs: list[BufferDecl], g: list[list[int]]) -> dict:
        op = s["op"]

        def view(r: RefB, cover: bool = False) -> dict:
            return cells.view_json(r, bufs[r.id], g[r.id], self.kept.get(r.id, set()), cover=cover)

        out: dict[str, Any] = {"op": op}
        if op == "when":
            out["cond"] = E.to_json(s["cond"])
            out["body"] = [self.stmt_json(x, bufs, g) for x in s["body"]]
        elif op == "switch":
            out["index"] = E.to_json(s["index"])
            out["branches"] = [[self.stmt_json(x, bufs, g) for x in br] for br in s["branches"]]
        elif op == "scoped":
            out["semaphores"] = s["semaphores"]
            out["buffers"] = s["buffers"]
            out["body"] = [self.stmt_json(x, bufs, g) for x in s["body"]]
        elif op == "loop":
            out["vars"] = s["vars"]
            out["init"] = [E.to_json(e) for e in s["init"]]
            out["count"] = s["count"]
            out["cond"] = None if s["cond"] is None else E.to_json(s["cond"])
            out["next"] = [E.to_json(e) for e in s["next"]]
            out["body"] = [self.stmt_json(x, bufs, g) for x in s["body"]]
        elif op in ("dma_start", "dma_wait"):
            d = s["dma"]
            dj: dict[str, Any] = {"kind": d["kind"], "src": view(d["src"]), "dst": view(d["dst"])}
            if d["kind"] == "local":
                dj["sem"] = _sem_json(d["sem"])
            else:
                dj["send_sem"] = _sem_json(d["send_sem"])
                dj["recv_sem"] = _sem_json(d["recv_sem"])
                dj["device"] = _dest_json(d["device"])
            out["dma"] = dj
            if op == "dma_wait":
                out["part"] = s["part"]
        elif op == "scalar_load":
            out.update(var=s["var"], scalar=s["scalar"], index=E.to_json(s["index"]))
        elif op == "scalar_store":
            out.update(scalar=s["scalar"], index=E.to_json(s["index"]), value=E.to_json(s["value"]))
        elif op == "scalar_copy":
            ranges = {k: {"start": E.to_json(s[k]["start"]), "dims": [list(d) for d in s[k]["dims"]],
                          **({"count": E.to_json(s[k]["count"])} if "count" in s[k] else {})}
                      for k in ("dst", "src")}
            out.update(scalar=s["scalar"], source=s["source"], **ranges)
        elif op == "signal":
            out["sem"] = _sem_json(s["sem"])
            out["inc"] = E.to_json(s["inc"])
            out["device"] = _dest_json(s["device"])
        elif op == "wait":
            out["sem"] = _sem_json(s["sem"])
            out["amount"] = E.to_json(s["amount"])
        elif op == "store":
            out["dst"] = view(s["dst"])
            # A value of every cell it reads reads the cells around each load.
            out["value"] = _value_json(s["value"], view if s["cellwise"] else lambda r: view(r, cover=True))
            out["cellwise"] = s["cellwise"]
        else:  # pragma: no cover
            raise AssertionError(op)
        out["loc"] = s.get("loc")
        if s.get("implicit"):
            out["implicit"] = True
        return out


def _sem_json(sem: tuple) -> dict:
    sid, idx = sem
    return {"sem": sid, "index": None if idx is None else E.to_json(idx)}


def _dest_json(d: tuple) -> dict:
    if d[0] == "own":
        return {"kind": "own"}
    if d[0] == "mesh":
        return {"kind": "mesh", "coords": [E.to_json(e) for e in d[1]]}
    if d[0] == "axes":
        return {"kind": "axes", "axes": [{"axis": n, "index": E.to_json(e)} for n, e in d[1]]}
    return {"kind": "logical", "id": E.to_json(d[1])}


def _value_json(node: tuple, view: Any) -> dict:
    kind = node[0]
    if kind == "zeros":
        return {"kind": "zeros"}
    if kind == "const":
        return {"kind": "const", "name": node[1]}
    if kind == "index":
        return {"kind": "index", "expr": E.to_json(node[1])}
    if kind == "load":
        return {"kind": "load", "view": view(node[1])}
    if kind == "add":
        return {"kind": "add", "args": [_value_json(node[1], view), _value_json(node[2], view)]}
    return {"kind": "fn", "name": node[1], "args": [_value_json(a, view) for a in node[2]]}


def _dimension_semantics(cp: Any) -> list[str] | None:
    ds = _compiler_param(cp, "dimension_semantics")
    if ds is None:
        return None
    return [str(getattr(d, "name", d)).lower() for d in ds]


def _has_shared(w: KernelWalker) -> bool:
    return any(b.shared for b in w.buffers)


def build_kernel(cap: Captured, forced: dict[int, list[int]] | None = None) -> dict:
    """The kernel record of ``cap`` (with the cell sizes ``forced`` on some buffers, see
    :class:`KernelBuilder`). A failure of the front end's own code while reading it makes
    the kernel ``unsupported`` with one ``internal error`` (SCHEMA.md), at the user's
    statement it was reading when known: the other kernels are still read."""
    builder = None
    try:
        builder = KernelBuilder(cap, forced)
        return builder.build()
    except Exception as e:  # noqa: BLE001 - semcheck's failure, reported as such
        name = builder.name if builder is not None else str(cap.eqn.params.get("name") or cap.eqn.primitive.name)
        loc = builder.walker.loc if builder is not None and builder.walker is not None else None
        keep = ("name", "primitive", "function", "call", "invocations")
        rec = {k: v for k, v in (builder.record if builder is not None else {"name": name}).items() if k in keep}
        rec.update(status="unsupported", errors=[internal_error(f"reading kernel {name}", e, loc or cap.call_loc)])
        return rec


__all__ = ["Captured", "KernelBuilder", "build_kernel"]
