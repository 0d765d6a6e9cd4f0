"""Running a user's script unmodified and capturing its Pallas kernels, without running
any of them.

How: every jitted computation JAX is about to compile and run goes through
``jax._src.pjit._pjit_call_impl_python`` (a ``jax.jit`` call, an eager
``shard_map``, an eager ``pallas_call``: JAX dispatches each primitive through the same
path). The hook looks for ``pallas_call`` / ``mpmd_map`` (``pl.kernel``) equations in the
computation's jaxpr (through ``shard_map``, nested ``jit``, ``cond``, loops ...). A
computation without one runs normally, so the script's XLA reference computations still
execute. A computation with one is **not compiled or executed**: the hook records every
kernel equation with the meshes of its enclosing ``shard_map``s, optionally lowers the
computation for TPU (Mosaic's own checks; nothing runs), and returns zero-filled
placeholder arrays of the right shapes, dtypes and shardings, so the script goes on
(``np.asarray`` on results works; a comparison with the XLA result will fail, which is
reported as a note, not an error, once kernels were captured).

Requires ``XLA_FLAGS`` / ``JAX_PLATFORMS`` to be set before JAX is imported (see
:func:`semcheck.frontend.export.configure`).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import itertools
import os
import pickle
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from typing import Any, Callable

import numpy as np
import jax
from jax import lax
from jax._src import core as jax_core
from jax._src import source_info_util
from jax._src.interpreters import mlir

from . import jaxcompat, location
from .dataflow import KERNELS, has_kernel, fed_by_kernels, sub_jaxprs
from .errors import FrontendFailure, Unsupported, internal_error
from .kernel import Captured, note_traced_names
from .programs import Tracker
from .scripts import StderrTail, exit_message, run_as_main


#: Where the host callbacks of :meth:`Capture.prefetch_values` deliver: ``(lowered call,
#: kernel arguments reported, device coordinates, their values)``. Module-level because
#: JAX caches the compiled computation, callbacks included, across calls.
_SINK: list = []


class Capture:
    """The kernels captured while a script runs."""

    def __init__(self, lower: bool = True):
        self.kernels: list[Captured] = []
        self._keys: dict[Any, Captured] = {}
        self.lower = lower
        self.computations = 0
        #: The error record of a failure of the front end while the script ran (an
        #: ``internal error``, or a JAX layout it does not know): the script was stopped.
        self.failure: dict | None = None
        #: The kernels' calls in the order they ran, and the values between them.
        self.tracker = Tracker()
        #: With ``--interpret-values``: what the script's kernels copied into SMEM when it
        #: ran in JAX's TPU interpret mode first (:func:`run_interpreted`).
        self.interpreted: Interpreted | None = None

    # -- finding kernel equations -------------------------------------------------

    @staticmethod
    def find(jaxpr: jax_core.Jaxpr, shard_maps: list, out: list) -> None:
        """Appends ``(eqn, shard_maps, jaxpr it is in)`` for every kernel equation of
        ``jaxpr`` and its sub-jaxprs."""
        for eqn in jaxpr.eqns:
            name = eqn.primitive.name
            if name in KERNELS:
                out.append((eqn, list(shard_maps), jaxpr))
                continue
            ctx = shard_maps
            if name == "shard_map":
                ctx = shard_maps + [(jaxcompat.param(eqn, "mesh"), jaxcompat.shard_map_manual_axes(eqn))]
            for sub in sub_jaxprs(eqn):
                Capture.find(sub, ctx, out)

    def record(self, found: list, call_loc: dict | None, mosaic: list | None, known: Known) -> dict[int, list]:
        """Records the kernels ``found`` (once per kernel and set of prefetched values);
        returns the records of each equation, by ``id``, in the order its calls ran."""
        kernels_of: dict[int, list] = {}
        for k, (eqn, shard_maps, context) in enumerate(found):
            kj = jaxcompat.kernel_jaxpr(eqn)
            meshes = tuple((str(m), tuple(sorted(a))) for m, a in shard_maps)
            # A kernel with scalar-prefetch (or SMEM) operands is one kernel per set of values
            # it was called with.
            calls: list = [None]
            error = None
            if _prefetches(eqn) and id(eqn) in known.fed:
                # The CPU run computed them from another kernel's output, which it replaced by zeros.
                error = ("they are computed from the output of another kernel, which semcheck does not run "
                         "(it stands zeros in for it), so the values the script passes are not known")
            elif _prefetches(eqn):
                ran = known.calls.get(id(kj))
                calls = ran if ran else [None]
                if calls == [None]:
                    error = known.error or ("this call of the kernel did not run when the computation was run on the "
                                            "CPU (a branch not taken, or a loop that ran no iteration?)")
            body = KernelIdentity(eqn, kj, meshes)
            if self.interpreted is not None:
                calls = [self.interpreted.attach(values, kj, shard_maps) for values in calls]
            for values in calls:
                key = (body, _values_key(values))
                if key in self._keys:
                    self._keys[key].invocations += 1
                    kernels_of.setdefault(id(eqn), []).append(self._keys[key])
                    continue
                cap = Captured(eqn=eqn, shard_maps=shard_maps, call_loc=call_loc,
                               mosaic=mosaic[k] if mosaic and k < len(mosaic) else None,
                               prefetch=values, prefetch_error=error, context=context, body=body,
                               label=getattr(sys.modules.get("semcheck.routings"), "current", None),
                               interpret_error=self.interpreted.error if self.interpreted is not None else None)
                self._keys[key] = cap
                self.kernels.append(cap)
                kernels_of.setdefault(id(eqn), []).append(cap)
        return kernels_of

    # -- the hook -----------------------------------------------------------------

    def install(self) -> Callable[[], None]:
        """Installs the hooks; returns what uninstalls them. A failure of the hooks' own
        code raises :class:`~semcheck.frontend.errors.FrontendFailure` through the script."""
        pjit = jaxcompat.pjit_module()
        original = pjit._pjit_call_impl_python
        untrace = _watch_kernel_traces()
        unwatch = jaxcompat.watch_kernel_bodies()

        def hook(*args: Any, jaxpr: Any, **kw: Any) -> Any:
            found: list = []
            with ours("looking for kernels in a computation the script runs"):
                self.find(jaxpr.jaxpr, [], found)
            if not found:
                return original(*args, jaxpr=jaxpr, **kw)
            with ours("capturing the kernels of a computation the script runs"):
                return self.capture(original, args, jaxpr, kw, found)

        pjit._pjit_call_impl_python = hook

        def uninstall() -> None:
            pjit._pjit_call_impl_python = original
            untrace()
            unwatch()

        return uninstall

    def capture(self, original: Any, args: Any, jaxpr: Any, kw: dict, found: list) -> Any:
        """Records the kernels ``found`` in a computation and returns its placeholder
        results (the computation is neither compiled nor run)."""
        self.computations += 1
        mosaic = self.lower_for_tpu(args, jaxpr, kw, len(found)) if self.lower else None
        known = self.prefetch_values(original, args, jaxpr, kw, found)
        known.fed = fed_by_kernels(jaxpr.jaxpr, _operands_known)
        call_loc = _caller()
        kernels_of = self.record(found, call_loc, mosaic, known)
        outs = _placeholders(args, jaxpr, kw)
        self.tracker.computation(jaxpr.jaxpr, args, str(kw.get("name") or "jit"), kernels_of, call_loc, outs)
        return outs, None, None, []

    def prefetch_values(self, original: Any, args: Any, jaxpr: Any, kw: dict, found: list) -> Known:
        """The values each device passes to the scalar-prefetch operands (and whole-array
        integer SMEM inputs) of each kernel that has some: the computation is run on the
        CPU devices with every ``pallas_call`` (and JAX 0.10's ``pl.kernel``, see
        :func:`jaxcompat.kernel_lowering`) replaced by a host callback that reports
        those operands (with the device's mesh coordinates) and returns zeros, and without
        donating its arguments (the script still owns them). Nothing of a kernel runs."""
        axes = {id(jaxcompat.kernel_jaxpr(eqn)): _mesh_axes(sm) for eqn, sm, _ in found if _prefetches(eqn)}
        if not axes:
            return Known({}, None)

        lowered = itertools.count()

        def rule(ctx: Any, *in_nodes: Any, **params: Any) -> Any:
            kernel, which = _lowered_known_operands(params, len(in_nodes))
            jid = id(kernel)
            # One key per lowered call: two calls of one kernel body are told apart.
            key = (jid, next(lowered))
            names = axes.get(jid, ())
            outs = ctx.avals_out

            def fake(*operands: Any) -> list:
                if jid in axes:
                    ids = [lax.axis_index(a) for a in names]
                    jax.debug.callback(lambda *v: _SINK.append((key, which, v[: len(ids)], v[len(ids):])),
                                       *ids, *(operands[k] for k in which))
                # A semaphore the kernel hands out is lowered as its physical integers.
                phys = [jaxcompat.physical_aval(a) if jaxcompat.is_extended(a) else a for a in outs]
                return [jax.numpy.zeros(a.shape, a.dtype) for a in phys]

            return mlir.lower_fun(fake, multiple_results=True)(ctx, *in_nodes)

        rules = mlir._platform_specific_lowerings["cpu"]
        before = {p: rules.get(p) for p in jaxcompat.kernel_lowering()}
        for p in before:
            mlir.register_lowering(p, rule, platform="cpu")
        _SINK.clear()
        try:
            kept = dict(kw, donated_invars=(False,) * len(kw["donated_invars"]))
            outs = original(*args, jaxpr=jaxpr, **kept)[0]
            jax.block_until_ready(outs)
            jax.effects_barrier()
        except Exception as e:  # noqa: BLE001 - the kernel is then read without the values
            return Known({}, f"running the computation that calls it on the CPU failed ({_first_line(e)})")
        finally:
            for p, rule_before in before.items():
                if rule_before is None:
                    rules.pop(p, None)
                else:
                    rules[p] = rule_before
        # Each device reports the calls of one lowered call in execution order (a loop's
        # iterations run in turn): the i-th report of every device is the i-th call.
        reports: dict[Any, dict[tuple, list]] = {}
        for key, which, coords, operands in _SINK:
            reports.setdefault(key, {}).setdefault(tuple(int(c) for c in coords), []).append(
                {k: np.asarray(v) for k, v in zip(which, operands)})
        _SINK.clear()
        calls: dict[Any, list] = {}
        for (jid, _), per_device in sorted(reports.items(), key=lambda kv: kv[0][1]):
            counts = {len(r) for r in per_device.values()}
            if len(counts) != 1:
                return Known({}, "the devices called the kernel different numbers of times when the computation "
                                 "was run on the CPU")
            calls.setdefault(jid, []).extend({c: r[i] for c, r in per_device.items()} for i in range(counts.pop()))
        return Known(calls, None)

    def lower_for_tpu(self, args: Any, jaxpr: Any, kw: dict, count: int) -> list | None:
        """Mosaic's TPU lowering of the computation (nothing is run): its refusals and
        its ``has_communication`` per kernel, in the order of the custom calls."""
        try:
            pjit = jaxcompat.pjit_module()
            arg_types = [pjit.convert_to_metaty(a) for a in args]
            comp = pjit._resolve_and_lower(
                arg_types, jaxpr=jaxpr, in_shardings=kw["in_shardings"], out_shardings=kw["out_shardings"],
                in_layouts=kw["in_layouts"], out_layouts=kw["out_layouts"], donated_invars=kw["donated_invars"],
                ctx_mesh=kw["ctx_mesh"], name=kw["name"], keep_unused=kw["keep_unused"], inline=kw["inline"],
                lowering_platforms=("tpu",), lowering_parameters=mlir.LoweringParameters(), pgle_profiler=None,
                compiler_options_kvs=kw["compiler_options_kvs"])
            text = comp.as_text()
        except Exception as e:  # noqa: BLE001 - Mosaic's refusal is data here
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            return [{"lowered": False, "error": f"{type(e).__name__}: {msg}"}] * count
        calls = text.split("tpu_custom_call")[1:]
        out = []
        for c in calls:
            cfg = c[: c.find("}") + 1 if "}" in c else len(c)]
            out.append({"lowered": True, "has_communication": "has_communication\\22: true" in c.split("\n")[0]
                        or "has_communication\\22: true" in cfg})
        return out if len(out) == count else None


def _watch_kernel_traces() -> Callable[[], None]:
    """While JAX traces a kernel written ``def kernel(*refs)``, notes the names its body
    binds the refs to (``it = iter(refs); x_ref = next(it)``, ``a = refs[2] if flag else
    None``: whatever the Python did), read from its frame when it returns, into
    :data:`~.kernel.TRACED_NAMES`. Returns what stops it."""
    pc = jaxcompat.pallas_call_module()
    original = pc._trace_kernel_to_jaxpr

    def traced(fun: Any, debug_info: Any, *args: Any, **kwargs: Any) -> Any:
        code = getattr(_unwrapped(fun), "__code__", None)
        if code is None or not code.co_flags & inspect.CO_VARARGS:
            return original(fun, debug_info, *args, **kwargs)
        vararg = code.co_varnames[code.co_argcount + code.co_kwonlyargcount]
        names: dict[int, str] = {}

        def profile(frame: Any, event: str, _: Any) -> None:
            if event == "return" and frame.f_code is code and not names:
                with ours("reading the names a kernel body gives its refs"):
                    refs = frame.f_locals.get(vararg)
                    at = {id(r): i for i, r in enumerate(refs)} if isinstance(refs, tuple) else {}
                    for name, value in frame.f_locals.items():
                        if name != vararg and id(value) in at:
                            names.setdefault(at[id(value)], name)

        before = sys.getprofile()
        sys.setprofile(profile)
        try:
            jaxpr, consts = original(fun, debug_info, *args, **kwargs)
        finally:
            sys.setprofile(before)
        with ours("reading the names a kernel body gives its refs"):
            note_traced_names(jaxpr, names)
        return jaxpr, consts

    pc._trace_kernel_to_jaxpr = traced

    def stop() -> None:
        pc._trace_kernel_to_jaxpr = original

    return stop


def _unwrapped(fun: Any) -> Any:
    while isinstance(fun, functools.partial):
        fun = fun.func
    return inspect.unwrap(fun)


#: The environment variable that makes the export run the script in JAX's TPU interpret
#: mode first and read the integers its kernels copy into SMEM with the values that run
#: copied (``semcheck check --interpret-values``; see :class:`Interpreted`).
INTERPRET_ENV = "SEMCHECK_INTERPRET_VALUES"


def interpreting() -> bool:
    """Whether this export runs the script in JAX's TPU interpret mode first (:data:`INTERPRET_ENV`)."""
    return os.environ.get(INTERPRET_ENV, "") not in ("", "0")


class Interpreted:
    """What the script's kernels copied into SMEM (by local DMAs) when it ran in JAX's TPU
    interpret mode (:func:`run_interpreted`): per device id, its kernel runs in order, each
    the copies it made by site (:func:`location.site`), in order; or why there are none.

    The captured calls of a kernel body take its runs in order: the k-th call of a body
    whose copies into SMEM start at sites ``S`` takes, on each device, the k-th run whose
    copies were all made at sites of ``S`` (the script runs the same kernels in the same
    order both times; a script whose Python depends on a kernel's results may not)."""

    def __init__(self, events: list, error: str | None):
        self.error = f"running the script with its kernels in JAX's TPU interpret mode: {error}" if error else None
        self.runs: dict[int, list[dict[str, list]]] = {}
        for event in events:
            if event[0] == "start":
                self.runs.setdefault(event[1], []).append({})
            elif self.runs.get(event[1]):
                _, device, site, values = event
                self.runs[device][-1].setdefault(site, []).append(values)
        self.taken: dict[tuple[frozenset, int], int] = {}

    def attach(self, values: dict | None, kj: Any, shard_maps: list) -> dict | None:
        """``values`` (a call's known values per device coordinates, or ``None``) with the
        next run's recorded copies of kernel body ``kj`` added, each device's under
        :func:`location.recorded_key` of their site."""
        sites = frozenset(location.site(e.source_info) for e in _dma_starts(getattr(kj, "jaxpr", kj))
                          if _into_smem(e))
        if not sites or not self.runs:
            return values
        shape = tuple(int(shard_maps[-1][0].shape[a]) for a in _mesh_axes(shard_maps)) if shard_maps else ()
        out = {c: dict(v) for c, v in (values or {}).items()}
        for device, runs in self.runs.items():
            mine = [r for r in runs if r and set(r) <= sites]
            k = self.taken.get((sites, device), 0)
            if k >= len(mine):
                continue
            self.taken[(sites, device)] = k + 1
            coords = tuple(int(c) for c in np.unravel_index(device, shape)) if shape else ()
            per_device = out.setdefault(coords, {})
            for site, arrays in mine[k].items():
                per_device[location.recorded_key(site)] = arrays
        return out or values


#: Seconds the interpreted run may take (``SEMCHECK_INTERPRET_SECONDS`` overrides): a
#: kernel that deadlocks in JAX's interpreter, or that it fails on one device while the
#: others wait for it, never ends.
INTERPRET_SECONDS = 120.0


def run_interpreted(path: str, argv: list[str], devices: int) -> Interpreted:
    """Runs the script at ``path`` with every kernel in JAX's TPU interpret mode on
    ``devices`` CPU devices, in a child process (``python -m semcheck.frontend record``,
    :func:`record_interpreted`) stopped after :data:`INTERPRET_SECONDS`; returns what its
    kernels copied into SMEM until it ended. Its output goes to stderr."""
    seconds = float(os.environ.get("SEMCHECK_INTERPRET_SECONDS") or INTERPRET_SECONDS)
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (package, os.environ.get("PYTHONPATH")) if p))
    with tempfile.TemporaryDirectory(prefix="semcheck-interpret-") as tmp:
        out = os.path.join(tmp, "events.pickle")
        cmd = [sys.executable, "-m", "semcheck.frontend", "record", os.path.abspath(path), "--devices", str(devices),
               "--out", out, "--", *argv]
        sys.stderr.flush()
        try:
            stdout: Any = sys.stderr.fileno()  # the script's output goes to stderr
        except (AttributeError, OSError, ValueError):
            stdout = None
        child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stdout, env=env)
        error = None
        try:
            child.wait(timeout=seconds)
        except BaseException as e:
            child.kill()
            child.wait()
            if not isinstance(e, subprocess.TimeoutExpired):
                raise
            error = (f"the run did not end within {seconds:g} s (SEMCHECK_INTERPRET_SECONDS): a kernel that deadlocks "
                     "there, or that the interpreter failed on one device while the others wait for it")
        events = _read_events(out)
    if error is None and events and events[-1][0] == "error":
        error = events[-1][1]
    elif error is None and child.returncode != 0:
        error = f"the run ended with exit status {child.returncode}"
    return Interpreted([e for e in events if e[0] != "error"], error)


def _read_events(path: str) -> list:
    """The events a :func:`record_interpreted` child wrote, up to the first incomplete one."""
    events: list = []
    try:
        with open(path, "rb") as f:
            while True:
                events.append(pickle.load(f))
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, AttributeError, IndexError):
        pass
    return events


class _EventFile:
    """Appends each interpreter event to a file as it comes (the parent reads what was
    written if this process is stopped), a copy's ``source_info`` as its site."""

    def __init__(self, f: Any):
        self.f = f
        self.lock = threading.Lock()

    def append(self, event: tuple) -> None:
        if event[0] == "copy":
            event = ("copy", event[1], location.site(event[2]), event[3])
        with self.lock:
            pickle.dump(event, self.f)
            self.f.flush()


def record_interpreted(path: str, argv: list[str], out: str) -> int:
    """The child of :func:`run_interpreted`: runs the script with every kernel in JAX's TPU
    interpret mode (:func:`jaxcompat.interpreting_kernels`), writing to ``out`` each
    kernel's start and each local copy into SMEM it makes, then ``("error", why)`` if it
    did not run whole. A computation whose kernels the interpreter cannot run (a construct
    it does not implement) stops there, and the script goes on with zeros in place of its
    results, as in the capture run, so that its other kernel calls are recorded too."""
    path = os.path.abspath(path)
    error = None
    failures: list[str] = []
    pjit = jaxcompat.pjit_module()
    original = pjit._pjit_call_impl_python

    def hook(*args: Any, jaxpr: Any, **kw: Any) -> Any:
        if not has_kernel(jaxpr.jaxpr):
            return original(*args, jaxpr=jaxpr, **kw)
        try:
            result = original(*args, jaxpr=jaxpr, **kw)
            jax.block_until_ready(result[0])
            # The interpreter's ordered callbacks fail through the effects' tokens.
            jax.effects_barrier()
            return result
        except Exception as e:  # noqa: BLE001 - noted; what was recorded until then is used
            jaxcompat.drop_runtime_tokens()
            failures.append(_first_line(e))
            return _placeholders(args, jaxpr, kw), None, None, []

    pjit._pjit_call_impl_python = hook
    tail = StderrTail(sys.stderr)
    with open(out, "wb") as f:
        events = _EventFile(f)
        try:
            with tail.keeping(), jaxcompat.interpreting_kernels(events):
                run_as_main(path, argv)
                jax.effects_barrier()
        except SystemExit as e:
            error = exit_message(e, tail)
        except Exception as e:  # noqa: BLE001 - what was recorded until then is used
            error = f"the script failed ({_first_line(e)})"
        if error is None and failures:
            times = f"{len(failures)} of its computations" if len(failures) > 1 else "a computation"
            error = (f"JAX's TPU interpreter could not run {times} with kernels ({failures[0]}); the script went on "
                     "with zeros in place of their results")
        if error is not None:
            events.append(("error", error))
    return 0


def _first_line(e: BaseException) -> str:
    """``Type: message`` of an exception, the message's line that says what failed (a
    failing host callback's error ends with the exception it raised)."""
    lines = [line for line in str(e).strip().splitlines() if line.strip()] or [type(e).__name__]
    return f"{type(e).__name__}: {lines[-1].strip() if 'Traceback' in str(e) else lines[0]}"


def _dma_starts(jaxpr: Any) -> list:
    """The ``dma_start`` equations of a kernel body and its sub-jaxprs."""
    out = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dma_start":
            out.append(eqn)
        for sub in sub_jaxprs(eqn):
            out.extend(_dma_starts(getattr(sub, "jaxpr", sub)))
    return out


def _into_smem(eqn: Any) -> bool:
    """Whether a ``dma_start`` copies into an SMEM buffer."""
    return jaxcompat.memory_space(_dst_aval(eqn)) == "smem"


def _dst_aval(eqn: Any) -> Any:
    """The aval of a ``dma_start``'s destination ref."""
    dst = jaxcompat.dma_operands(eqn).dst
    return getattr(getattr(dst, "ref", dst), "aval", None)


class Known:
    """What :meth:`Capture.prefetch_values` found: per kernel body (``id`` of its jaxpr),
    each call's scalar-prefetch (and SMEM input) values per device coordinates, by kernel
    argument; or why there are
    none."""

    def __init__(self, calls: dict[Any, list[dict[tuple, list]]], error: str | None):
        self.calls = calls
        self.error = error
        #: The ids of kernel equations whose values depend on another kernel's output.
        self.fed: set[int] = set()


#: The most elements of an integer input in HBM or VMEM whose values are read for the
#: kernel's copies into SMEM (see :func:`_known_operands`).
MAX_COPIED_ELEMENTS = 1 << 16


def _known_operands(gm: Any, kernel_jaxpr: Any) -> list[int]:
    """The operands of a ``pallas_call`` whose values the kernel may read as its scalar
    state: the scalar-prefetch operands, and of its inputs those :func:`_known_inputs`
    picks (only whole-array blocks: a block the grid moves is not one table)."""
    n = gm.num_index_operands
    inputs = [(bm.array_aval, jaxcompat.memory_space(jaxcompat.block_aval(bm))) if bm.has_trivial_window() else None
              for bm in gm.block_mappings[: gm.num_inputs]]
    return list(range(n)) + [n + k for k in _known_inputs(inputs, kernel_jaxpr)]


def _known_inputs(inputs: list[tuple[Any, str] | None], kernel_jaxpr: Any) -> list[int]:
    """Of a kernel's whole-array inputs (aval and memory space; ``None`` for another), the
    ones whose values the kernel may read as its scalar state: integer SMEM inputs, and
    when the kernel copies integers by a DMA or loads integers from VMEM, its (not too
    large) integer inputs in other memories, which it may read that way (an index window,
    top-k ids, a routing table)."""
    out = []
    copies = None
    for k, given in enumerate(inputs):
        if given is None:
            continue
        aval, space = given
        # A semaphore operand (an extended dtype) carries no values.
        if jaxcompat.is_extended(aval) or np.dtype(aval.dtype).kind not in "iub":
            continue
        if space != "smem":
            if copies is None:
                copies = _copies_into_smem(kernel_jaxpr)
            if not copies or int(np.prod(aval.shape)) > MAX_COPIED_ELEMENTS:
                continue
        out.append(k)
    return out


def _pl_kernel_known_operands(jaxpr: Any, operands: int) -> list[int]:
    """The operands of a ``pl.kernel`` (its kernel jaxpr's first ``operands`` arguments,
    refs to whole arrays) whose values :func:`_known_inputs` picks."""
    avals = [v.aval for v in jaxpr.invars[:operands]]
    return _known_inputs([(getattr(a, "inner_aval", a), jaxcompat.memory_space(a)) for a in avals], jaxpr)


def _copies_into_smem(jaxpr: Any) -> bool:
    """Whether a kernel body starts a DMA into an SMEM buffer or of integers, or loads
    integers from a buffer outside SMEM: how it may read an integer input's values."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dma_start":
            if _into_smem(eqn) or _integers(getattr(_dst_aval(eqn), "inner_aval", None)):
                return True
        if eqn.primitive.name in ("get", "load", "masked_load") and eqn.invars and eqn.outvars:
            aval = getattr(eqn.invars[0], "aval", None)
            if jaxcompat.memory_space(aval) != "smem" and _integers(eqn.outvars[0].aval):
                return True
        if any(_copies_into_smem(sub) for sub in sub_jaxprs(eqn)):
            return True
    return False


def _integers(aval: Any) -> bool:
    dtype = getattr(aval, "dtype", None)
    try:
        return dtype is not None and np.dtype(dtype).kind in "iu"
    except TypeError:  # a semaphore type
        return False


def _operands_known(eqn: Any) -> list[int]:
    """The operands of a kernel equation whose values :meth:`Capture.prefetch_values` reads
    (of a ``pl.kernel``, only as JAX 0.10 stages it: see :func:`jaxcompat.kernel_lowering`)."""
    if eqn.primitive.name == "pallas_call":
        return _known_operands(jaxcompat.param(eqn, "grid_mapping"), jaxcompat.param(eqn, "jaxpr"))
    if eqn.primitive.name == "mpmd_map":
        return _pl_kernel_known_operands(jaxcompat.kernel_jaxpr(eqn), len(eqn.invars))
    return []


def _lowered_known_operands(params: dict, operands: int) -> tuple[Any, list[int]]:
    """For a kernel equation being lowered (its ``params``, ``operands`` operands): the
    kernel jaxpr that names it in :class:`Known` and the operands whose values are read."""
    jaxpr = jaxcompat.kernel_jaxpr_of(params)
    if "grid_mapping" in params:
        return jaxpr, _known_operands(params["grid_mapping"], jaxpr)
    return jaxpr, _pl_kernel_known_operands(jaxpr, operands)


def _prefetches(eqn: Any) -> bool:
    return bool(_operands_known(eqn))


def _mesh_axes(shard_maps: list) -> tuple:
    """The axis names of the innermost ``shard_map``'s mesh, in mesh order (the kernel's
    device coordinates, as :meth:`KernelBuilder.mesh` reads them)."""
    if not shard_maps:
        return ()
    return tuple(shard_maps[-1][0].axis_names)


class KernelIdentity:
    """What tells a captured kernel from another (the values it was called with apart):
    its primitive, its kernel jaxpr and the parameters that shape it (grid, compiler
    parameters, meshes, name), all as printed, and the meshes of the ``shard_map``s around
    it. Printing a large kernel's jaxpr takes a tenth of a second, so it is done only to
    compare two kernels that agree on everything cheaper (the hash is over that part
    alone): a script with one kernel never prints it."""

    __slots__ = ("_eqn", "_kj", "_cheap", "_printed")

    def __init__(self, eqn: Any, kj: Any, meshes: tuple):
        self._eqn, self._kj = eqn, kj
        # Equal printed jaxprs have as many equations and inputs.
        self._cheap = (eqn.primitive.name, meshes, len(kj.eqns), len(kj.invars))
        self._printed: tuple | None = None

    def printed(self) -> tuple:
        """The kernel jaxpr and its shaping parameters, as printed (computed once)."""
        if self._printed is None:
            params = {p: v for p, v in self._eqn.params.items()
                      if p in ("grid_mapping", "compiler_params", "meshes", "mesh", "name")}
            self._printed = (str(self._kj), str(params))
        return self._printed

    def __hash__(self) -> int:
        return hash(self._cheap)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KernelIdentity):
            return NotImplemented
        return self is other or (self._cheap == other._cheap and self.printed() == other.printed())


def _values_key(values: dict | None) -> Any:
    if values is None:
        return None
    return tuple(sorted((c, tuple((str(k), _array_key(v)) for k, v in sorted(vs.items(), key=lambda kv: str(kv[0]))))
                        for c, vs in values.items()))


def _array_key(v: Any) -> Any:
    """An array (or a list of arrays: recorded copies) as a hashable key."""
    if isinstance(v, list):
        return tuple(_array_key(a) for a in v)
    return (v.dtype.str, v.shape, v.tobytes())


def _placeholders(args: Any, jaxpr: Any, kw: dict) -> list:
    """Zeros in place of a computation's results (see :func:`_placeholder`)."""
    mesh = next((a.sharding.mesh for a in args if isinstance(getattr(a, "sharding", None),
                                                              jax.sharding.NamedSharding)), None)
    return [_placeholder(aval, sharding, mesh) for aval, sharding in zip(jaxpr.out_avals, kw["out_shardings"])]


def _placeholder(aval: Any, sharding: Any, mesh: Any = None) -> Any:
    """Zeros of ``aval``, placed as the computation would have placed its result: its
    out sharding, else (an eager ``shard_map``, whose results are sharded by their
    type) the aval's own spec on the mesh of the arguments."""
    def place(z: Any) -> Any:
        try:
            if isinstance(sharding, jax.sharding.Sharding):
                return jax.device_put(z, sharding)
            spec = getattr(getattr(aval, "sharding", None), "spec", None)
            if mesh is not None and spec is not None:
                return jax.device_put(z, jax.sharding.NamedSharding(mesh, spec))
        except Exception:  # noqa: BLE001 - fall back to the default device
            pass
        return jax.device_put(z)

    if jaxcompat.is_extended(aval):
        # A semaphore a kernel hands out: an array of its semaphore type, which the
        # script may pass to a later computation's kernel.
        return jaxcompat.extended_zeros(aval, place)
    return place(np.zeros(aval.shape, dtype=aval.dtype))


def _caller() -> dict | None:
    """The innermost user frame of the current Python stack (the script's call), with
    the user frames that led to it in ``stack``."""
    frames = location.user_frames(source_info_util.current().traceback)
    if not frames:
        return None
    rec = location.frame_record(frames[0])
    rec["stack"] = [{"file": location.file_name(f.file_name), "line": f.start_line, "function": f.function_name,
                     "text": location.frame_record(f)["text"]} for f in frames[1:9]]
    return rec


class _Interrupts:
    """Tells a real interrupt (SIGINT delivered to this process) from a
    ``KeyboardInterrupt`` the user's code raised itself: the first ends the export, the
    second is the script's error like any other exception."""

    def __init__(self) -> None:
        self.received = False
        self._previous: Any = None

    def _on_sigint(self, signum: int, frame: Any) -> None:
        self.received = True
        signal.default_int_handler(signum, frame)

    def __enter__(self) -> "_Interrupts":
        # Only Python's own handler is wrapped (a handler someone installed stays theirs),
        # and only from the main thread (the only one that may install handlers).
        if threading.current_thread() is threading.main_thread() \
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None and signal.getsignal(signal.SIGINT) == self._on_sigint:
            signal.signal(signal.SIGINT, self._previous)

    def reraise(self, e: BaseException) -> bool:
        """Whether ``e`` is to be raised on, not recorded as the user's error."""
        return isinstance(e, KeyboardInterrupt) and (self.received or self._previous is None)


def run_script(path: str, argv: list[str], capture: Capture) -> dict:
    """Runs ``path`` as ``__main__`` with the hook installed; the script's own stdout
    goes to stderr. Returns the script record of the document."""
    path = os.path.abspath(path)
    script: dict[str, Any] = {"file": path, "argv": argv, "status": "ok", "error": None}
    uninstall = capture.install()
    start = time.perf_counter()
    interrupts = _Interrupts()
    tail = StderrTail(sys.stderr)
    try:
        with tail.keeping(), interrupts, contextlib.redirect_stdout(sys.stderr):
            run_as_main(path, argv)
    except SystemExit as e:
        said = exit_message(e, tail)
        if said is not None:
            script["status"] = "raised"
            script["error"] = _error_record(e, path, said)
    except FrontendFailure as e:
        script["status"] = "raised"
        script["error"] = capture.failure = e.record
    except BaseException as e:  # noqa: BLE001 - the user's error is reported, not raised
        if interrupts.reraise(e):
            raise
        script["status"] = "raised"
        script["error"] = _error_record(e, path, f"{type(e).__name__}: {e}")
    finally:
        uninstall()
    script["seconds"] = round(time.perf_counter() - start, 3)
    return script


#: pytest's own frames (``pytest.fail`` raising in ``_pytest/outcomes.py``): the error is
#: at the test's line that called it.
_TEST_RUNNER = re.compile(r"[/\\](_pytest|pluggy)[/\\]")


def _error_record(e: BaseException, path: str, message: str) -> dict:
    frames = traceback.extract_tb(e.__traceback__)
    user = [f for f in frames if source_info_util.is_user_filename(f.filename)
            and not location.is_ours(f.filename) and not f.filename.startswith("<frozen")
            and not _TEST_RUNNER.search(f.filename)]
    where = user[-1] if user else None
    loc = None
    if isinstance(e, SyntaxError) and e.filename and e.lineno:
        # The script does not compile: the error is at the offending line, not at the
        # interpreter's frame that read the file.
        text = (e.text or "").strip()
        loc = {"file": location.file_name(e.filename), "line": e.lineno, "function": "<module>", "text": text, "code": text,
               "stack": []}
    elif where is not None:
        loc = {"file": location.file_name(where.filename), "line": where.lineno, "function": where.name,
               "text": (where.line or "").strip(), "code": (where.line or "").strip(), "stack": []}
    if "Unsupported TPU device kind: cpu" in message:
        message += (" (the script asks JAX for the TPU's sizes, pltpu.get_tpu_info(), which a CPU host does not "
                    "have: set SEMCHECK_TPU to the chip to trace it for, e.g. SEMCHECK_TPU=v6e)")
    if "attempted relative import with no known parent package" in message:
        message += (" (semcheck runs a file that imports relatively as `python -m package.module` runs it when its "
                    "folder is a package: add an __init__.py to the folder, or import absolutely)")
    # The traceback from the first frame of the user's code: the front end's and runpy's
    # frames that called it say nothing to the user.
    tb = e.__traceback__
    while tb is not None and (location.is_ours(tb.tb_frame.f_code.co_filename)
                              or tb.tb_frame.f_code.co_filename.startswith("<frozen")):
        tb = tb.tb_next
    # (None when every frame is: a script that does not compile, or cannot be read.)
    lines = traceback.format_exception(type(e), e, tb)
    text = "".join(lines)
    if len(text) > 8000:
        text = "...\n" + text[-8000:]
    record = {"construct": "script error", "message": message.strip()[:2000], "loc": loc, "traceback": text}
    outcome = _test_outcome(e)
    if outcome is not None:
        record["test_outcome"] = outcome
    return record


def _test_outcome(e: BaseException) -> str | None:
    """``skipped`` or ``xfailed`` when ``e`` is a test skipping (pytest's skip,
    ``unittest.SkipTest``) or xfailing; else ``None``. pytest is not imported for it: a
    script that raised pytest's exceptions has imported it."""
    import unittest

    outcomes = sys.modules.get("_pytest.outcomes")
    if isinstance(e, unittest.SkipTest) or (outcomes is not None and isinstance(e, outcomes.Skipped)):
        return "skipped"
    if outcomes is not None and isinstance(e, outcomes.XFailed):
        return "xfailed"
    return None


def capture_call(fn: Any, args: tuple, kwargs: dict, capture: Capture) -> dict:
    """Calls ``fn(*args, **kwargs)`` with the hook installed (the Python API)."""
    record: dict[str, Any] = {"file": getattr(fn, "__code__", None) and fn.__code__.co_filename, "argv": [],
                              "status": "ok", "error": None}
    uninstall = capture.install()
    start = time.perf_counter()
    interrupts = _Interrupts()
    try:
        with interrupts, contextlib.redirect_stdout(sys.stderr):
            fn(*args, **kwargs)
    except FrontendFailure as e:
        record["status"] = "raised"
        record["error"] = capture.failure = e.record
    except BaseException as e:  # noqa: BLE001
        if interrupts.reraise(e):
            raise
        record["status"] = "raised"
        record["error"] = _error_record(e, record["file"] or "", f"{type(e).__name__}: {e}")
    finally:
        uninstall()
    record["seconds"] = round(time.perf_counter() - start, 3)
    return record


@contextlib.contextmanager
def ours(what: str) -> Any:
    """Runs the front end's own code inside the user's script. An exception it raises is
    semcheck's (:class:`~semcheck.frontend.errors.FrontendFailure`, at the script's
    statement that led to it), never the script's error: an ``internal error``, or, for a
    JAX layout :mod:`~semcheck.frontend.jaxcompat` does not know, that unsupported
    construct."""
    try:
        yield
    except FrontendFailure:
        raise
    except Unsupported as u:
        raise FrontendFailure({**u.record(), "loc": u.loc or _caller()}) from u
    except Exception as e:  # noqa: BLE001 - ours, reported as semcheck's
        raise FrontendFailure(internal_error(what, e, _caller())) from e


__all__ = ["Capture", "run_script", "capture_call", "io", "ours"]
