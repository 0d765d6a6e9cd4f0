"""Every difference between the JAX versions the front end reads, in one place.

The front end reads kernels through JAX's private Pallas internals (``jax._src``): the
primitives' params and operand trees, how ``pl.kernel`` is staged, the memory-space
enums. They change between JAX releases. This module reads them for every supported
version and gives the rest of the front end one view of them; no other module looks at
``jax.__version__``.

Supported: JAX 0.8.1 to 0.12.x (:data:`SUPPORTED`; measured with every release of jax/jaxlib
from 0.8.1 to 0.12.1 the package registry serves; it serves 0.11 and 0.12 for Python 3.12
and later only). Under any other JAX the export writes a document with one ``unsupported jax``
error (:func:`unsupported_jax_error`) and reads nothing.

Differences found (comparing the kernel jaxprs of every test and seed kernel, their
``eqn.params`` and unflattened operand trees, under 0.8.3, 0.9.2 and 0.10.2; 15 to 19
comparing the documents of every seed and test kernel under 0.10.2, 0.11.2 and 0.12.0.1;
21 under 0.12.1):

1. **DMA operand tree** (``dma_start`` / ``dma_wait`` param ``tree``). 0.8, 0.9: nine
   entries ``(src, src_transforms, dst, dst_transforms, dst_sem, dst_sem_transforms,
   src_sem, src_sem_transforms, device_id)``, a ``PyTreeDef`` (transforms may hold
   ``TransformedRefTree`` wrappers). 0.10: five entries ``(src, dst, dst_sem, src_sem,
   device_id)``, each ref a ``TransformedRef`` node, a ``FlatTree``. Both are read with
   JAX's own ``primitives._dma_unflatten`` and normalised to the five
   (:func:`dma_operands`).
2. **wait_send vs wait_recv** (``dma_wait``). 0.11, 0.12: param ``is_wait_send`` (``True``
   on the swapped descriptor of ``.wait_send()``, which 0.12 also calls ``.wait_read()``;
   0.11 keeps ``insert_dummy_device`` beside it, 0.12 drops it). 0.10: param
   ``insert_dummy_device`` (``True`` on the swapped descriptor of ``.wait_send()``). 0.8, 0.9: no such param; the
   two equations differ only in which descriptor they carry, so the method is read from
   the equation's own traceback (the ``AsyncCopyDescriptor.wait_send`` /
   ``wait_recv`` frame JAX recorded; :func:`dma_wait_is_send`). A remote wait whose
   traceback names neither is an unsupported construct, never guessed.
3. **``pl.kernel`` staging.** 0.10: one ``mpmd_map`` equation (params ``jaxprs``,
   ``meshes``, ``out_avals``, ``input_output_aliases``), whose kernel jaxpr takes
   ``[*inputs, *outputs, *scratch]``. 0.8, 0.9: ``jit(wrapper)`` in which every operand
   and output becomes a ref (``new_ref``; outputs of ``empty``) closed over by a
   ``core_map`` equation (param ``mesh``, no outputs); the kernel body is the
   ``core_map`` jaxpr (0.9: its constvars are the closed-over refs, its invars the
   scratch) or the ``run_scoped`` inside it (0.8: the scratch are that ``run_scoped``'s
   allocations). The body's argument names and ``def`` are not in those jaxprs: the body
   function ``pl.kernel`` was given is recorded when it is called
   (:func:`watch_kernel_bodies`) and JAX's own ``api_util.debug_info`` names its
   arguments, as 0.10's ``mpmd_map`` does. :func:`kernel_call` rebuilds the 0.10 view.
   The integer operands a ``pl.kernel`` is called with are read (its CPU lowering
   replaced, :func:`kernel_lowering`) only for 0.10's ``mpmd_map``.
4. **Memory spaces.** A ``BlockSpec`` without a memory space: ``None`` (0.8, 0.9) or
   ``MemorySpace.DEFAULT`` (0.10, printed ``Ref<default>``), both VMEM on a TPU. A
   ``pl.kernel`` operand: ``MemorySpace.ANY`` (0.10) or no memory space (0.8, 0.9: the
   ``core_map`` discharge puts it in ``ANY``). :func:`memory_space`. (User API, not read
   here: ``pltpu.MemorySpace.ANY`` exists in 0.8 only; ``pl.ANY`` in all.)
5. **Ref transform classes**: ``RefBitcaster`` / ``RefReshaper`` (0.8) are
   ``BitcastTransform`` / ``ReshapeTransform`` (0.9, 0.10); :func:`transform_kind`.
6. **``shard_map`` manual axes**: param ``manual_axes`` (0.8, 0.9), ``newly_manual_axes``
   (0.10); :func:`shard_map_manual_axes`.
7. **``run_scoped``** has a ``ref_transforms`` param in 0.10 only;
   :func:`run_scoped_ref_transforms`.
8. **TPU sizes for ``SEMCHECK_TPU``**: ``tpu_info.get_tpu_info_for_chip`` exists in 0.9,
   0.10; 0.8's ``get_tpu_info`` matches the device kind and falls back on its
   ``registry``; :func:`pretend_tpu`.
9. **Params the walker checks and ignores**: ``mul`` has ``out_dtype`` (0.10 only);
   ``scan`` has ``linear`` and ``_split_transpose`` (0.8, 0.9); ``pallas_call`` has
   ``backend`` (0.8); ``CompilerParams`` has ``kernel_type`` (0.8, 0.9),
   ``disable_semaphore_checks`` (0.9, 0.10), ``needs_layout_passes`` (0.10).
   ``jnp.stack`` is a ``stack`` primitive in 0.10 and reshapes plus ``concatenate``
   before: the walker reads both. Each Pallas primitive the walker reads has the params
   of :data:`PARAMS` for its version, checked (:func:`check_params`): a param added or
   removed is an unsupported construct, not a silently different reading. 0.12.1 gives
   ``dma_start`` and ``dma_wait`` an ``_unsafe_no_write_effect`` param (which effect JAX
   records on the destination, for its own dead-code and ordering passes; the copy
   writes either way).
10. **Tracebacks**: from 0.9 an equation's traceback stops where its jaxpr started
    tracing (``TracebackScope`` in ``trace_to_jaxpr_dynamic``); 0.8 records the whole
    stack, so the ``stack`` of a location in a ``pl.when`` branch would also name the
    decorator's line. :func:`user_frames` cuts 0.8's at the same place.
11. **Compiler params** on a kernel equation: a ``FrozenDict`` by backend
    (``{'mosaic_tpu': CompilerParams(...)}``, 0.8), the ``CompilerParams`` (0.9, 0.10);
    :func:`mosaic_params`.
12. **Dead code in kernel bodies**: from 0.9, ``pallas_call`` runs JAX's
    ``pe.dce_jaxpr`` on the kernel body it traced (a ``fori_loop`` whose index and carry
    nothing reads loses them); 0.8 does not. And 0.9 gave ``semaphore_signal`` /
    ``semaphore_wait`` a ``SemaphoreEffect`` that DCE keeps; in 0.8 they have none.
    :func:`kernel_call` runs the same DCE under 0.8, those two counted as effects.
13. **User-facing API** (a script written for one version fails under another as a
    script error; the tests skip such kernels by name): ``pl.kernel(out_type=,
    scratch_types=)`` (0.10) is ``out_shape=``, ``scratch_shapes=`` (0.8, 0.9);
    ``pltpu.emit_pipeline(should_accumulate_out=)`` exists in 0.8, 0.9 only, ``tiling=``
    in 0.9, 0.10; ``pltpu.MemorySpace.ANY`` in 0.8 only; jax 0.9.2's
    ``jax.experimental.pallas.tpu`` imports ``absl`` without declaring it as a dependency.
    JAX's own library code may trace differently too: ``pltpu.emit_pipeline`` keeps its
    slot indices in SMEM scratch in 0.8 and 0.9 (more statements, the same copies).
14. **TPU interpret mode** (``--interpret-values``, :func:`interpreting_kernels`):
    ``force_tpu_interpret_mode``, ``_initialize_shared_memory`` and the ``DMA`` class live
    in ``jax._src.pallas.mosaic.interpret.interpret_pallas_call`` in 0.8, 0.9 and 0.10,
    with the same ``InterpretParams(dma_execution_mode=)``, the same ``DMA`` fields read
    here (``src_device_id``, ``dst_device_id``, ``dst_memory_space``, ``source_info``,
    ``data``) and ``execute_read``; the callbacks' signatures differ (0.10 threads a
    token first), so ``device_id`` is found by name.
15. **Barrier semaphores and collective ids** (0.11, 0.12): ``get_barrier_semaphore`` has a
    ``tag`` param (``pltpu.get_barrier_semaphore(tag=)``: XLA picks the kernel's
    ``collective_id`` by tag) and the ``jax_pallas_auto_assign_collective_ids`` option
    lets XLA choose or replace ``collective_id``: both are unsupported constructs
    (:func:`barrier_semaphore`, :func:`collective_id_assignment`), as JAX's refusals of
    such kernels depend on XLA's choice. With neither, JAX refuses a custom barrier without
    a ``collective_id`` as before, its message followed by ``(cannot auto-allocate without
    lowering context)``; the refusal keeps the words common to all versions.
16. **``scan``'s operands**: params ``num_consts`` and ``num_carry`` (0.8 to 0.10), or an
    operand tree ``ft_in`` of ``(consts, carry, xs)`` and ``ft_out`` (0.11, 0.12);
    :func:`scan_counts`.
17. **``TensorCoreMesh``** fields: ``devices`` and ``axis_names`` (0.8 to 0.10),
    ``axis_name`` and ``num_cores`` (0.11, 0.12); every version has the ``shape`` mapping
    :func:`core_mesh_axes` reads.
18. **Local copies** (0.12): ``make_async_copy`` takes ``src_sem=`` (a local copy with a
    source semaphore, awaited by ``.wait_read()``, a ``dma_wait`` with ``is_wait_send``)
    and no semaphore at all (``dst_sem`` ``None``); before, a local copy signals exactly
    its ``dst_sem``. Both are unsupported constructs (:func:`check_local_copy`). (0.12's
    ``.wait()`` of a remote copy binds the same two waits as before: the send's, then the
    receive's; ``device_id_type=`` and ``pl.DeviceIdType`` are deprecated, still staged.)
19. **User-facing API** (see 13): 0.11 removed ``pltpu.semaphore_signal``,
    ``pltpu.semaphore_wait``, ``pltpu.semaphore_read`` and ``pltpu.DeviceIdType``
    (``pl.*``, in every supported version); a script calling them fails under 0.11 as a
    script error (public kernels that do are skipped from 0.11 by the tests).
    ``pltpu.emit_pipeline`` traces its slot bookkeeping differently in 0.11 (other
    conditions, the same copies).

20. **The race detector of TPU interpret mode** (``InterpretParams(detect_races=True)``,
    ``replay --interpret``): 0.8 to 0.11 print each race and set ``races.races_found``;
    0.12's ``on_race`` param raises at the first race by default (``"raise"``), ending the
    run with no outputs, unless it is ``"warn"`` (0.8 to 0.11 behaviour):
    :func:`interpret_params` asks for that. The reports (``RACE DETECTED ...``) are
    printed on stdout up to 0.11 and logged as warnings in 0.12, which also resets
    ``races`` when the kernel ends: :func:`race_reports_to` collects them either way.

21. **Block mappings** (``pallas_call``'s ``grid_mapping.block_mappings``): the block's
    aval is ``transformed_block_aval`` and its transforms ``transforms`` (0.8 to 0.12.0.1);
    0.12.1 drops block transforms and has ``block_aval`` only. ``has_trivial_window`` is a
    method in every supported version. :func:`block_aval`, :func:`block_transforms`.

Where the front end relies on a layout (a tree's arity, a param's name, an enum member),
the expectation is checked here and a mismatch raises
:class:`~semcheck.frontend.errors.Unsupported` naming the primitive or param and the
installed JAX version (the walker adds the user's ``file.py:line``).

Importing this module imports JAX (the device count must be configured first) but no
private module of it: the version gate runs before anything private is touched. The
private modules the rest of the front end imports directly (``jax._src.core``,
``source_info_util``, ``tree_util``, ``interpreters.mlir``) are where they were in every
supported version.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import re
import sys
from typing import Any, Callable, Iterable, Protocol

import jax
import numpy as np

from .. import _jaxrange
from .errors import Unsupported

#: The JAX releases the front end reads (:mod:`semcheck._jaxrange`).
SUPPORTED = _jaxrange.SUPPORTED


# ---------------------------------------------------------------------------------------
# Versions and the gate


def jax_version() -> str:
    """The installed JAX's version (``0.10.2``). Tests fake it by replacing this function."""
    return jax.__version__


def minor(version: str | None = None) -> tuple[int, int]:
    """``(major, minor)`` of a version string (the installed JAX's by default)."""
    return _jaxrange.minor(version or jax_version())


def supports(version: str | None = None) -> bool:
    """Whether the front end reads kernels under ``version`` (the installed JAX's)."""
    return _jaxrange.supports(version or jax_version())


supported_range = _jaxrange.supported_range
pip_requirement = _jaxrange.pip_requirement


def interpret_params(**params: Any) -> Any:
    """``pltpu.InterpretParams(**params)``, a race the detector finds reported and the run
    going on, as before 0.12 (difference 20)."""
    from jax.experimental.pallas import tpu as pltpu

    if params.get("detect_races") and "on_race" in {f.name for f in dataclasses.fields(pltpu.InterpretParams)}:
        params.setdefault("on_race", "warn")
    return pltpu.InterpretParams(**params)


@contextlib.contextmanager
def race_reports_to(stream: Any) -> Any:
    """While it is entered, the race reports JAX 0.12's detector logs are written to
    ``stream`` too, as earlier releases print them (difference 20; the caller redirects
    stdout to the same stream)."""
    import logging

    handler = logging.StreamHandler(stream)
    handler.addFilter(lambda record: "RACE DETECTED" in record.getMessage())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)


def unsupported_jax_error(version: str | None = None, function: str | None = None) -> dict[str, Any]:
    """The document's top-level error under a JAX outside :data:`SUPPORTED`; ``function``:
    of the Python API's export of that function (the pytest marker's test), which runs in
    the caller's interpreter, whatever ``SEMCHECK_PYTHON`` says."""
    v = version or jax_version()
    install = f"`{sys.executable or 'python'} -m pip install '{pip_requirement()}'`"
    head = (f"semcheck's front end reads Pallas kernels with JAX {supported_range()}; this interpreter "
            f"({sys.executable}) has jax {v}.")
    if function:
        ways = (f" The Python API and the pytest marker trace `{function}` with the interpreter that calls them: "
                f"install a supported JAX in it ({install}), or check the kernel's script with `semcheck check "
                "FILE`, which can use semcheck's managed environment (SEMCHECK_PYTHON=managed).")
    else:
        ways = (f" Either install a supported JAX in it ({install}), or let semcheck use its managed environment "
                "(SEMCHECK_PYTHON=managed).")
    return {"construct": "unsupported jax", "loc": None, "message": head + ways}


def release(version: str | None = None) -> tuple[int, ...]:
    """The release numbers of a version string (the installed JAX's by default)."""
    return _jaxrange.release(version or jax_version())


#: The first release with each difference that an equation does not show by itself
#: (measured under every release of 0.8, 0.9 and 0.10 the package registry serves): from
#: 0.9.1, ``pallas_call`` runs JAX's DCE on the kernel body (difference 12) and
#: ``pl.kernel``'s ``core_map`` body is the kernel function itself (difference 3).
#: Everything else is read off the equation (its params, its operand tree, its
#: primitive) or off JAX itself (``TracebackScope``), whatever the version says.
_KERNEL_DCE = _CORE_MAP_BODY_IS_KERNEL = (0, 9, 1)


def _from(first: tuple[int, ...]) -> bool:
    """Whether the installed JAX is release ``first`` or later."""
    return release() >= first


def layout_error(primitive: str, what: str, expected: str) -> Unsupported:
    """A param layout the front end does not know for the installed JAX: the construct is
    the primitive, the message names what was found, what was expected and the version.
    (The walker adds the user's location.)"""
    return Unsupported(primitive, f"{what}, where semcheck's front end expects {expected} under jax "
                                  f"{jax_version()} (it reads JAX {supported_range()}; this JAX's Pallas internals "
                                  "differ from the ones it was written against)")


# ---------------------------------------------------------------------------------------
# Params


#: The param sets of the Pallas primitives the walker reads, as the supported releases
#: have them (the walker reads each param by its presence: ``add`` from 0.8.1, ``dma_wait``'s
#: ``insert_dummy_device`` and ``run_scoped``'s ``ref_transforms`` in later releases of
#: 0.10; ``dma_wait``'s ``is_wait_send`` and ``get_barrier_semaphore``'s ``tag`` from 0.11,
#: ``insert_dummy_device`` gone in 0.12). Any other set is a layout this front end does not know.
PARAMS: dict[str, tuple[frozenset[str], ...]] = {
    "dma_start": (frozenset({"tree", "device_id_type", "priority", "add"}),
                  frozenset({"tree", "device_id_type", "priority"}),
                  frozenset({"tree", "device_id_type", "priority", "add", "_unsafe_no_write_effect"})),
    "dma_wait": (frozenset({"tree", "device_id_type"}),
                 frozenset({"tree", "device_id_type", "insert_dummy_device"}),
                 frozenset({"tree", "device_id_type", "insert_dummy_device", "is_wait_send"}),
                 frozenset({"tree", "device_id_type", "is_wait_send"}),
                 frozenset({"tree", "device_id_type", "is_wait_send", "_unsafe_no_write_effect"})),
    "semaphore_signal": (frozenset({"args_tree", "device_id_type"}),),
    "semaphore_wait": (frozenset({"args_tree"}),),
    "semaphore_read": (frozenset({"args_tree"}),),
    "get_barrier_semaphore": (frozenset(), frozenset({"tag"})),
    "run_scoped": (frozenset({"jaxpr", "collective_axes"}),
                   frozenset({"jaxpr", "collective_axes", "ref_transforms"})),
    "get": (frozenset({"tree"}),),
    "swap": (frozenset({"tree"}),),
    "program_id": (frozenset({"axis"}),),
    "num_programs": (frozenset({"axis"}),),
}


def check_params(eqn: Any) -> None:
    """Raises :func:`layout_error` when a Pallas primitive the walker reads has a param set
    :data:`PARAMS` does not know."""
    name = eqn.primitive.name
    if name not in PARAMS:
        return
    have = frozenset(eqn.params)
    if have not in PARAMS[name]:
        raise layout_error(name, f"`{name}` has params {_names(have)}",
                           " or ".join(_names(known) for known in PARAMS[name]))


def _names(params: Iterable[str] | None) -> str:
    return "{" + ", ".join(sorted(params or ())) + "}"


def param(eqn: Any, name: str) -> Any:
    """``eqn.params[name]``, or a layout error naming the primitive and the param."""
    if name not in eqn.params:
        prim = eqn.primitive.name
        raise layout_error(prim, f"`{prim}` has no param `{name}` (its params: {_names(eqn.params)})",
                           f"a `{name}` param")
    return eqn.params[name]


# ---------------------------------------------------------------------------------------
# Private modules


def backend_started() -> bool:
    """Whether JAX has started a backend in this process (after which its device count is
    fixed). Private: ``xla_bridge._backends``, the same in 0.8 to 0.10."""
    from jax._src import xla_bridge

    return bool(getattr(xla_bridge, "_backends", True))


def can_restart_backend() -> bool:
    """Whether this JAX lets one process end its CPU backend and start another with a
    different device count: public ``jax.extend.backend.clear_backends`` and the
    ``jax_num_cpu_devices`` option (which a backend started later obeys, whatever
    ``XLA_FLAGS`` said when XLA first read it). Both are in 0.8 to 0.10."""
    import jax

    try:
        from jax.extend import backend
    except ImportError:
        return False
    return callable(getattr(backend, "clear_backends", None)) and "jax_num_cpu_devices" in jax.config.values


def set_cpu_devices(devices: int) -> None:
    """Makes the next CPU backend have ``devices`` devices (no backend may be running:
    :func:`end_backend` first). Only where :func:`can_restart_backend`."""
    import jax

    jax.config.update("jax_num_cpu_devices", devices)


def end_backend() -> None:
    """Ends JAX's backends and every cache that refers to them (arrays, executables,
    traces), so that the next computation starts a new backend."""
    from jax.extend import backend

    backend.clear_backends()


def config_values() -> dict[str, Any]:
    """JAX's options and their values now (``jax.config.values``, public in 0.8 to
    0.10), for :func:`restore_config`."""
    import jax

    return dict(jax.config.values)


def restore_config(saved: dict[str, Any]) -> bool:
    """Sets back every option that changed since ``saved`` was taken (no backend may be
    running); ``False`` when one cannot be set back or an option appeared."""
    import jax

    now = jax.config.values
    if set(now) != set(saved):
        return False
    for name, value in saved.items():
        if now[name] != value:
            try:
                jax.config.update(name, value)
            except Exception:  # noqa: BLE001 - a validator refused: not restorable
                return False
    return True


def use_compilation_cache(path: str) -> None:
    """Keeps the XLA executables the script's own computations compile (on the CPU: its
    inputs, its reference results, the runs that compute scalar-prefetch values) in a
    persistent cache at ``path``, so that running the script again, or at another size
    where a computation is the same, loads them instead of compiling. A cached executable
    is the one the compile would have made: the values are the same. Public options
    (``jax_compilation_cache_dir`` and the ``jax_persistent_cache_*`` ones), the same in
    0.8 to 0.10; an option a JAX lacks is skipped, and a cache that fails is only a
    warning of JAX's (``jax_raise_persistent_cache_errors`` is off by default). Its size
    is not JAX's to bound (``jax_compilation_cache_max_size`` needs the ``filelock``
    package): the ``semcheck`` binary prunes the folder."""
    import jax

    for name, value in (("jax_compilation_cache_dir", path),
                        ("jax_persistent_cache_min_compile_time_secs", 0.0),
                        ("jax_persistent_cache_min_entry_size_bytes", -1)):
        try:
            jax.config.update(name, value)
        except (AttributeError, KeyError, ValueError):
            if name == "jax_compilation_cache_dir":
                return


def source_info_util() -> Any:
    from jax._src import source_info_util as s

    return s


def pjit_module() -> Any:
    from jax._src import pjit

    return pjit


def pallas_call_primitive() -> Any:
    from jax._src.pallas.pallas_call import pallas_call_p

    return pallas_call_p


def pallas_call_module() -> Any:
    from jax._src.pallas import pallas_call

    return pallas_call


def drop_runtime_tokens() -> None:
    """Forgets the tokens of the effects of the computations run so far (after one failed:
    its failure is not raised again by every later one)."""
    from jax._src import dispatch

    dispatch.runtime_tokens.clear()


def _interpreter() -> Any:
    """JAX's TPU interpret mode (difference 14)."""
    from jax._src.pallas.mosaic.interpret import interpret_pallas_call as m

    return m


class EventSink(Protocol):
    """Where :func:`interpreting_kernels` puts the interpreter's events (a list, or a
    file that appends each as it comes)."""

    def append(self, event: tuple) -> None:
        """Takes one event."""


@contextlib.contextmanager
def interpreting_kernels(sink: EventSink) -> Any:
    """While inside, every ``pallas_call`` traced runs in JAX's TPU interpret mode
    (``force_tpu_interpret_mode``), every DMA executed when it starts
    (``dma_execution_mode="eager"``), and ``sink`` gets, per device, in the order each
    device ran them: ``("start", device id)`` when a kernel starts, and ``("copy", device
    id, source_info of its dma_start, copied values)`` for each local DMA into SMEM (the
    values read from its source, as the interpreter read them)."""
    import inspect

    from jax._src.pallas.mosaic import core as mosaic_core
    from jax.experimental.pallas.tpu import InterpretParams

    m = _interpreter()
    smem = m.TPU_MEMORY_SPACE_IDXS[mosaic_core.MemorySpace.SMEM]
    cls, read, init = m.DMA, m.DMA.execute_read, m._initialize_shared_memory
    device_of = inspect.signature(init)

    def execute_read(self: Any) -> None:
        read(self)
        if (self.dst_memory_space == smem and self.src_device_id == self.dst_device_id
                and self.data is not None):
            sink.append(("copy", int(self.src_device_id), self.source_info, np.array(self.data)))

    @functools.wraps(init)
    def initialize(*args: Any, **kwargs: Any) -> Any:
        sink.append(("start", int(device_of.bind(*args, **kwargs).arguments["device_id"])))
        return init(*args, **kwargs)

    from jax._src import callback

    impl = callback.io_callback_impl

    def host_callback(*args: Any, callback: Any, **_: Any) -> Any:
        # JAX places a host callback's operands on CPU device 0 first, by copies the CPU
        # client runs on its thread pool, which the devices' threads blocked in the
        # interpreter's callbacks may fill (2 cores: a kernel with large operands never
        # finishes): the interpreter takes the host's arrays as they are.
        return jax.tree.map(np.asarray, callback(*(np.asarray(a) for a in args)))

    cls.execute_read = execute_read
    m._initialize_shared_memory = initialize
    callback.io_callback_impl = host_callback
    try:
        # A copy of no elements at the end of a buffer is an out-of-bounds read to the
        # interpreter (not to Mosaic): read as uninitialised.
        params = InterpretParams(dma_execution_mode="eager", out_of_bounds_reads="uninitialized")
        with m.force_tpu_interpret_mode(params):
            yield sink
    finally:
        cls.execute_read = read
        m._initialize_shared_memory = init
        callback.io_callback_impl = impl


def transformed_ref(ref: Any, transforms: Iterable[Any]) -> Any:
    """``ref`` viewed through ``transforms`` (after its own, if it is a ``TransformedRef``)."""
    from jax._src.state.types import TransformedRef

    transforms = tuple(transforms)
    if isinstance(ref, TransformedRef):
        return TransformedRef(ref.ref, (*ref.transforms, *transforms))
    return TransformedRef(ref, transforms)


# ---------------------------------------------------------------------------------------
# Tracebacks

#: The JAX functions whose frame roots an equation's traceback from 0.9 on (each opens a
#: ``TracebackScope``): what is outside a jaxpr's own trace is not recorded.
_TRACE_ROOTS = ("trace_to_jaxpr", "trace_to_jaxpr_dynamic")


def user_frames(traceback: Any) -> list:
    """The user frames (``source_info_util.Frame``, innermost first) of a traceback JAX
    recorded, as JAX 0.9 and later record them (difference 10): JAX 0.8 records the whole
    Python stack, so a statement in a ``pl.when`` branch also names the kernel's line
    that applied the decorator; from 0.9 a traceback stops where the jaxpr it belongs to
    started tracing. Under 0.8 the frames outside the innermost ``trace_to_jaxpr`` are
    dropped to read the same."""
    s = source_info_util()
    if traceback is None:
        return []
    codes, lastis = traceback.raw_frames()
    from jax._src.interpreters import partial_eval as pe

    if not hasattr(pe, "TracebackScope"):
        roots = [i for i, c in enumerate(codes) if c.co_name in _TRACE_ROOTS
                 and c.co_filename.replace(os.sep, "/").endswith("interpreters/partial_eval.py")]
        if roots:
            codes, lastis = codes[:roots[0]], lastis[:roots[0]]
    return [s.raw_frame_to_frame(c, i) for c, i in zip(codes, lastis) if s.is_user_filename(c.co_filename)]


# ---------------------------------------------------------------------------------------
# Operand trees


@dataclasses.dataclass(frozen=True)
class Dma:
    """A DMA descriptor as ``dma_start`` / ``dma_wait`` carry it: refs (jaxpr atoms or
    ``TransformedRef`` nodes), ``src_sem`` and ``device_id`` ``None`` for a local copy."""

    src: Any
    dst: Any
    dst_sem: Any
    src_sem: Any
    device_id: Any


def dma_operands(eqn: Any) -> Dma:
    """The descriptor of a ``dma_start`` / ``dma_wait`` equation (difference 1)."""
    name = eqn.primitive.name
    tree = param(eqn, "tree")
    try:
        parts = _dma_parts(tree, list(eqn.invars))
    except (TypeError, ValueError) as e:
        raise layout_error(name, f"`{name}`'s `tree` param does not unflatten over its {len(eqn.invars)} operands "
                                 f"({e})", "the DMA operand tree") from None
    if not isinstance(parts, (tuple, list)) or len(parts) not in (5, 9):
        found = len(parts) if isinstance(parts, (tuple, list)) else type(parts).__name__
        raise layout_error(name, f"`{name}`'s `tree` param holds {found} entries", "5 or 9")
    if len(parts) == 5:
        return Dma(*parts)
    src, src_t, dst, dst_t, dst_sem, dst_sem_t, src_sem, src_sem_t, device_id = parts
    return Dma(_view(src, src_t), _view(dst, dst_t), _view(dst_sem, dst_sem_t), _view(src_sem, src_sem_t), device_id)


def check_local_copy(dma: Dma, swapped: bool = False) -> None:
    """Raises :class:`Unsupported` for the local copies jax 0.12 added (difference 18): a
    local copy signals exactly one semaphore, its ``dst_sem``, in 0.8 to 0.11; from 0.12
    ``make_async_copy`` takes ``src_sem=`` (awaited by ``.wait_read()``) and ``sem=None``.
    The same words at a copy's start and at each of its waits (whose descriptors JAX may
    have swapped: ``swapped``, a ``.wait_send()`` / ``.wait_read()``), so that the waits of
    a copy whose start failed are not reported again."""
    if swapped:
        dma = dataclasses.replace(dma, src=dma.dst, dst=dma.src, dst_sem=dma.src_sem, src_sem=dma.dst_sem)
    if dma.device_id is None and (dma.src_sem is not None or dma.dst_sem is None):
        if dma.src_sem is not None:
            raise Unsupported("make_async_copy(src_sem=...)",
                              "a local copy with a source semaphore (jax 0.12's make_async_copy(..., src_sem=...), "
                              "awaited by .wait_read()) is not supported: a local copy signals one semaphore")
        raise Unsupported("make_async_copy(sem=None)",
                          "a local copy without a semaphore (jax 0.12's make_async_copy(src, dst)) is not "
                          "supported: a local copy signals one semaphore")


def _dma_parts(tree: Any, operands: list) -> Any:
    """The entries of a DMA operand tree, by JAX's own ``_dma_unflatten``."""
    from jax._src.pallas.mosaic import primitives as tpu_primitives

    return tpu_primitives._dma_unflatten(tree, operands)


def _view(ref: Any, transforms: Any) -> Any:
    if ref is None or not transforms:
        return ref
    return transformed_ref(ref, transforms)


def dma_wait_is_send(eqn: Any, dma: Dma) -> bool:
    """Whether a ``dma_wait`` is ``.wait_send()`` (whose descriptor JAX swapped) rather
    than ``.wait_recv()`` or a local copy's ``.wait()`` (difference 2)."""
    if "is_wait_send" in eqn.params:
        return bool(eqn.params["is_wait_send"])
    if "insert_dummy_device" in eqn.params:
        return bool(eqn.params["insert_dummy_device"])
    if dma.device_id is None and dma.src_sem is None:
        return False
    method = _descriptor_method(eqn)
    if method is None:
        raise layout_error("dma_wait", "a remote `dma_wait` whose traceback shows neither "
                                       "`AsyncCopyDescriptor.wait_send` nor `wait_recv`",
                           "one of them (jax 0.8 and 0.9 tell the two waits apart only by the method that bound them)")
    return method == "wait_send"


def _descriptor_method(eqn: Any) -> str | None:
    """``wait_send`` / ``wait_recv``: the innermost ``AsyncCopyDescriptor`` method in the
    equation's traceback (a frame of JAX's ``pallas/mosaic/primitives.py``)."""
    tb = getattr(eqn.source_info, "traceback", None)
    for frame in (tb.frames if tb is not None else ()):
        method = frame.function_name.rsplit(".", 1)[-1]
        if method in ("wait_send", "wait_recv") and frame.file_name.replace(os.sep, "/").endswith(
                "pallas/mosaic/primitives.py"):
            return method
    return None


def collective_id_assignment(loc: Any = None) -> None:
    """Raises :class:`Unsupported` when the script set JAX's
    ``jax_pallas_auto_assign_collective_ids`` option (0.11, 0.12; difference 15) to other
    than its default ``"no"``: XLA then chooses or replaces the ``collective_id`` of a
    kernel with a barrier semaphore or a collective id, and JAX's refusals of such a
    kernel (which semcheck states word for word) depend on that choice."""
    mode = jax.config.values.get("jax_pallas_auto_assign_collective_ids")
    if mode not in (None, "no"):
        raise Unsupported("jax_pallas_auto_assign_collective_ids",
                          f"jax_pallas_auto_assign_collective_ids={mode!r} (jax {jax_version()}): XLA assigns the "
                          "kernel's collective_id, which semcheck reads only as CompilerParams(collective_id=...) "
                          "gives it (the option's default, 'no')", loc)


def barrier_semaphore(eqn: Any) -> None:
    """Checks a ``get_barrier_semaphore`` equation (difference 15): from 0.11 it has a
    ``tag`` param, ``None`` unless the kernel gave ``pltpu.get_barrier_semaphore(tag=)``,
    which makes XLA pick the kernel's ``collective_id`` by tag (shared with the other
    kernels of that tag) instead of the ``CompilerParams``' own: not read here."""
    tag = eqn.params.get("tag")
    if tag is not None:
        raise Unsupported("get_barrier_semaphore(tag=...)",
                          f"a barrier semaphore with a collective-id tag ({tag!r}; jax {jax_version()}): which "
                          "collective_id the kernel gets, and whether another kernel shares its barrier, is XLA's "
                          "choice by tag; semcheck reads the barrier of a kernel whose CompilerParams give its "
                          "collective_id")


def semaphore_signal_operands(eqn: Any) -> tuple[Any, Any, Any, Any, Any]:
    """``(sem, sem_transforms, inc, device_id, core_index)`` of a ``semaphore_signal``."""
    return _args(eqn, 5, "(sem, transforms, inc, device_id, core_index)")


def semaphore_wait_operands(eqn: Any) -> tuple[Any, Any, Any, Any]:
    """``(sem, sem_transforms, value, decrement)`` of a ``semaphore_wait``."""
    return _args(eqn, 4, "(sem, transforms, value, decrement)")


def semaphore_read_operands(eqn: Any) -> tuple[Any, Any]:
    """``(sem, sem_transforms)`` of a ``semaphore_read``."""
    return _args(eqn, 2, "(sem, transforms)")


def masked_access_operands(eqn: Any) -> tuple[Any, Any, Any, Any]:
    """``(ref, transforms, mask, other)`` of a ``masked_load``, ``(ref, transforms, value,
    mask)`` of a ``masked_swap`` (``pl.load`` / ``pl.store``)."""
    return _args(eqn, 4, "(ref, transforms, mask or value, other or mask)")


def _args(eqn: Any, arity: int, layout: str) -> tuple:
    name = eqn.primitive.name
    try:
        args = param(eqn, "args_tree").unflatten(list(eqn.invars))
    except (TypeError, ValueError) as e:
        raise layout_error(name, f"`{name}`'s `args_tree` does not unflatten over its operands ({e})",
                           f"{arity} entries {layout}") from None
    if not isinstance(args, (tuple, list)) or len(args) != arity:
        found = len(args) if isinstance(args, (tuple, list)) else type(args).__name__
        raise layout_error(name, f"`{name}`'s `args_tree` holds {found} entries", f"{arity} {layout}")
    return tuple(args)


def scan_counts(params: Any) -> tuple[int, int]:
    """``(num_consts, num_carry)`` of a ``scan`` equation's params (difference 16): params
    of those names (0.8 to 0.10), or the operand tree ``ft_in`` (0.11, 0.12: a
    ``FlatTree`` of ``(consts, carry, xs)``, each part unpacked as JAX's own rules do)."""
    if "num_consts" in params:
        return int(params["num_consts"]), int(params["num_carry"])
    if "ft_in" not in params:
        raise layout_error("scan", f"`scan` has params {_names(params)}",
                           "`num_consts` and `num_carry`, or an operand tree `ft_in`")
    try:
        consts, carry, _ = params["ft_in"].unpack()
        return len(list(consts)), len(list(carry))
    except (AttributeError, TypeError, ValueError) as e:
        raise layout_error("scan", f"`scan`'s `ft_in` does not unpack into (consts, carry, xs) ({e})",
                           "the scan operand tree") from None


def core_mesh_axes(mesh: Any) -> dict[str, int]:
    """The axes of a ``pl.kernel`` mesh (a ``TensorCoreMesh``) and their sizes
    (difference 17): its ``shape`` mapping (every supported JAX; 0.8 to 0.10 also have
    ``devices`` and ``axis_names``, 0.11 and 0.12 only ``axis_name`` and ``num_cores``)."""
    shape = getattr(mesh, "shape", None)
    if isinstance(shape, dict):
        return {str(a): int(s) for a, s in shape.items()}
    if hasattr(mesh, "devices") and hasattr(mesh, "axis_names"):
        return dict(zip(mesh.axis_names, (int(s) for s in np.shape(mesh.devices))))
    raise layout_error(type(mesh).__name__, f"a `{type(mesh).__name__}` with neither a `shape` mapping nor "
                                            "`devices` and `axis_names`", "the mesh's axes and sizes")


def run_scoped_ref_transforms(eqn: Any) -> tuple:
    """The ``ref_transforms`` of a ``run_scoped`` (difference 7: none before 0.10.2)."""
    return tuple(eqn.params.get("ref_transforms") or ())


def shard_map_manual_axes(eqn: Any) -> frozenset:
    """The mesh axes a ``shard_map`` equation makes manual (difference 6)."""
    name = "newly_manual_axes" if "newly_manual_axes" in eqn.params else "manual_axes"
    return frozenset(param(eqn, name) or ())


#: Ref transform classes by kind (difference 5).
_TRANSFORMS = {
    "NDIndexer": "indexer",
    "RefBitcaster": "bitcast", "BitcastTransform": "bitcast",
    "RefReshaper": "reshape", "ReshapeTransform": "reshape",
    "TransposeRef": "transpose", "SelectTransform": "select_ref", "RefNewAxis": "new axis",
}


def transform_kind(t: Any) -> str:
    """What a ref transform does: ``indexer``, ``bitcast``, ``reshape``, ``transpose``,
    ``select_ref``, ``new axis``, or its class name when it is none of them."""
    name = type(t).__name__
    return _TRANSFORMS.get(name, name)


#: Canonical memory-space names (difference 4): ``default`` is a block without one.
_SPACES = {"": "default", "none": "default", "default": "default", "any": "any", "hbm": "hbm", "vmem": "vmem",
           "smem": "smem", "semaphore_mem": "semaphore", "semaphore": "semaphore"}


def memory_space(aval: Any) -> str:
    """The memory space of a ref's aval: ``any``, ``hbm``, ``vmem``, ``smem``,
    ``semaphore``, ``default`` (none given), or the enum's own name for any other."""
    space = getattr(aval, "memory_space", None)
    text = "" if space is None else str(space).lower()
    return _SPACES.get(text, text)


def block_aval(bm: Any) -> Any:
    """The aval of a block mapping's block, its transforms applied (difference 21)."""
    aval = getattr(bm, "transformed_block_aval", None)
    return bm.block_aval if aval is None else aval


def block_transforms(bm: Any) -> tuple:
    """The transforms of a block mapping's block (difference 21): none from 0.12.1."""
    return tuple(getattr(bm, "transforms", ()) or ())


# ---------------------------------------------------------------------------------------
# Semaphore-typed arrays (the ``pltpu.SEMAPHORE``-space operands a kernel hands out): an
# extended dtype (``dma_sem``, ``semaphore``) whose arrays are ``jax._src.earray.EArray``
# over a physical integer array. The same private API under 0.8, 0.9 and 0.10.


def is_extended(aval: Any) -> bool:
    """Whether an aval's dtype is one of JAX's extended dtypes (a semaphore type, a
    PRNG key), which NumPy cannot make arrays of."""
    from jax._src import dtypes

    dtype = getattr(aval, "dtype", None)
    return dtype is not None and dtypes.issubdtype(dtype, dtypes.extended)


def physical_aval(aval: Any) -> Any:
    """The aval of the physical array an extended-dtype array of ``aval`` is made of
    (``int32[]`` for a semaphore)."""
    from jax._src import core as jax_core

    element = aval.dtype._rules.physical_element_aval(aval.dtype)
    return jax_core.ShapedArray(tuple(aval.shape) + tuple(element.shape), element.dtype)


def extended_zeros(aval: Any, place: Callable[[Any], Any]) -> Any:
    """An array of extended-dtype ``aval`` over physical zeros placed by ``place`` (a
    ``device_put``), usable as a jitted computation's argument."""
    import numpy as np
    from jax._src import earray

    phys = physical_aval(aval)
    return earray.EArray(aval, place(np.zeros(phys.shape, phys.dtype)))


# ---------------------------------------------------------------------------------------
# Kernel equations


#: The primitives of kernels: ``pallas_call``, ``pl.kernel`` as ``mpmd_map`` (0.10) or
#: ``core_map`` (0.8, 0.9).
KERNEL_PRIMITIVES = ("pallas_call", "mpmd_map", "core_map")


@dataclasses.dataclass
class KernelCall:
    """One kernel launch as the 0.10 equations give it, whatever JAX staged it as."""

    #: ``pallas_call``, or ``mpmd_map`` for ``pl.kernel`` (staged as ``core_map`` by 0.8, 0.9).
    primitive: str
    #: The kernel body, open; its invars are the kernel's arguments, in order
    #: (``[*scalar prefetch, *inputs, *outputs, *scratch]``).
    jaxpr: Any
    #: ``pl.kernel``'s operands and outputs (``pallas_call``'s come from ``grid_mapping``).
    num_inputs: int
    num_outputs: int
    #: The ``name=`` given, if any.
    name: str | None
    compiler_params: Any
    input_output_aliases: dict
    #: ``pallas_call``'s grid mapping; ``None`` for ``pl.kernel``.
    grid_mapping: Any
    #: ``pl.kernel``'s meshes.
    meshes: tuple
    #: The memory space of an argument that names none (``vmem``: a ``pallas_call``
    #: block; ``any``: a ``pl.kernel`` operand).
    default_space: str


def kernel_jaxpr(eqn: Any) -> Any:
    """The (open) kernel body of a kernel equation as staged, for telling kernels apart."""
    return kernel_jaxpr_of(eqn.params)


def kernel_jaxpr_of(params: dict) -> Any:
    """The (open) kernel body of a kernel equation's ``params`` (as its lowering rule is
    given them too): ``pallas_call``'s ``jaxpr``, ``mpmd_map``'s one of ``jaxprs``."""
    j = (params.get("jaxprs") or (None,))[0] if "jaxprs" in params else params.get("jaxpr")
    return getattr(j, "jaxpr", j)


def kernel_lowering() -> list[Any]:
    """The kernel primitives whose CPU lowering :meth:`Capture.prefetch_values` replaces
    to read the integer operands each device passes: ``pallas_call``, and ``mpmd_map``
    (0.10's ``pl.kernel``). 0.8 and 0.9 stage ``pl.kernel`` as refs a ``core_map``
    closes over, lowered with the computation around it: its operands are not read."""
    out = [pallas_call_primitive()]
    try:
        from jax._src.pallas.mpmd import mpmd_map_p
    except ImportError:
        return out
    return out + [mpmd_map_p]


def kernel_call(eqn: Any, context: Any = None) -> KernelCall:
    """The kernel launch of ``eqn`` (difference 3). ``context``: the jaxpr the equation
    is in (``pl.kernel``'s wrapper, for ``core_map``)."""
    name = eqn.primitive.name
    if name == "pallas_call":
        return _pallas_call(eqn)
    if name == "mpmd_map":
        return _mpmd_map(eqn)
    if name == "core_map":
        return _core_map(eqn, context)
    raise layout_error(name, f"`{name}` is not a kernel primitive", f"one of {', '.join(KERNEL_PRIMITIVES)}")


def _pallas_call(eqn: Any) -> KernelCall:
    gm = param(eqn, "grid_mapping")
    jaxpr = param(eqn, "jaxpr")
    return KernelCall(primitive="pallas_call", jaxpr=_as_traced_from_0_9(getattr(jaxpr, "jaxpr", jaxpr)),
                      num_inputs=int(gm.num_index_operands) + int(gm.num_inputs), num_outputs=int(gm.num_outputs),
                      name=eqn.params.get("name"), compiler_params=eqn.params.get("compiler_params"),
                      input_output_aliases=dict(eqn.params.get("input_output_aliases") or ()),
                      grid_mapping=gm, meshes=(), default_space="vmem")


def _as_traced_from_0_9(jaxpr: Any) -> Any:
    """A ``pallas_call`` kernel body as 0.9 and later trace it (difference 12): they run
    JAX's own dead-code elimination on it (``pe.dce_jaxpr``, every argument kept), which
    drops, say, a ``fori_loop``'s index and carry that nothing reads; 0.8 does not, so it
    is run here, with the one difference in effects 0.9 made: ``semaphore_signal`` and
    ``semaphore_wait`` (and what contains one) carry 0.9's ``SemaphoreEffect``, which DCE
    keeps, and have no effect in 0.8 (so 0.8's DCE would drop a wait)."""
    if _from(_KERNEL_DCE):
        return jaxpr
    from jax._src.interpreters import partial_eval as pe

    original = pe.has_effects

    def has_effects(eqn: Any) -> bool:
        return original(eqn) or _signals_or_waits(eqn)

    pe.has_effects = has_effects
    _clear_dce_caches(pe)  # results cached with 0.8's own effects must not be reused
    try:
        return pe.dce_jaxpr(jaxpr, used_outputs=[True] * len(jaxpr.outvars), instantiate=True)[0]
    finally:
        pe.has_effects = original
        _clear_dce_caches(pe)


def _signals_or_waits(eqn: Any) -> bool:
    """Whether an equation is, or contains, a ``semaphore_signal`` / ``semaphore_wait``."""
    from .dataflow import sub_jaxprs

    if eqn.primitive.name in ("semaphore_signal", "semaphore_wait"):
        return True
    return any(_signals_or_waits(e) for sub in sub_jaxprs(eqn) for e in sub.eqns)


def _clear_dce_caches(pe: Any) -> None:
    for cached in (pe._dce_jaxpr, pe._cached_closed_call_dce):
        cached.cache_clear()


def _mpmd_map(eqn: Any) -> KernelCall:
    jaxprs = param(eqn, "jaxprs")
    meshes = tuple(param(eqn, "meshes"))
    jaxpr = jaxprs[0] if jaxprs else None
    return KernelCall(primitive="mpmd_map", jaxpr=getattr(jaxpr, "jaxpr", jaxpr), num_inputs=len(eqn.invars),
                      num_outputs=len(param(eqn, "out_avals") or ()), name=eqn.params.get("name"),
                      compiler_params=eqn.params.get("compiler_params"),
                      input_output_aliases=dict(eqn.params.get("input_output_aliases") or {}),
                      grid_mapping=None, meshes=meshes, default_space="any")


# -- pl.kernel under jax 0.8 and 0.9: core_map inside pl.kernel's wrapper


def _core_map(eqn: Any, context: Any) -> KernelCall:
    """``pl.kernel`` as jax 0.8, 0.9 stage it: ``new_ref`` of each operand, ``new_ref`` of
    ``empty`` for each output, then ``core_map`` closing over those refs."""
    body, scratch = _core_map_body(eqn)
    inputs, outputs = _kernel_refs(eqn, context)
    refs = inputs + outputs
    # The body's closed-over vars, as the core_map's operands they stand for.
    closed = dict(zip(body.constvars, _closed_operands(eqn, body)))
    by_operand = {id(op): v for v, op in closed.items() if op is not None}
    args = [by_operand[id(r)] if id(r) in by_operand else _unused_var(r.aval) for r in refs]
    others = [v for v, op in closed.items() if op is None or not any(op is r for r in refs)]
    mesh = param(eqn, "mesh")
    name = eqn.params.get("name")
    fun = find_kernel_body(name, body)
    if fun is None:
        raise layout_error("core_map", f"the function pl.kernel was given for `{name}` was not seen when pl.kernel "
                                       "was called (its argument names and def are not in the staged core_map)",
                           "pl.kernel's `_make_kernel`, which semcheck watches, to have been called for it")
    jaxpr = body.replace(constvars=others, invars=[*args, *scratch],
                         debug_info=_body_debug_info(fun, [*args, *scratch]))
    return KernelCall(primitive="mpmd_map", jaxpr=jaxpr, num_inputs=len(inputs), num_outputs=len(outputs),
                      name=None, compiler_params=eqn.params.get("compiler_params"), input_output_aliases={},
                      grid_mapping=None, meshes=(mesh,), default_space="any")


def _core_map_body(eqn: Any) -> tuple[Any, list]:
    """The kernel body of a ``core_map`` and its scratch invars: the ``core_map`` jaxpr
    (0.9), or the one ``run_scoped`` that is its body (0.8)."""
    jaxpr = param(eqn, "jaxpr")
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    if _from(_CORE_MAP_BODY_IS_KERNEL):
        return jaxpr, list(jaxpr.invars)
    if jaxpr.invars or len(jaxpr.eqns) != 1 or jaxpr.eqns[0].primitive.name != "run_scoped":
        raise layout_error("core_map", "`core_map`'s body is not one `run_scoped` of the kernel function",
                           "pl.kernel's body as jax 0.8 stages it")
    scoped = param(jaxpr.eqns[0], "jaxpr")
    scoped = getattr(scoped, "jaxpr", scoped)
    return scoped, list(scoped.invars)


def _closed_operands(eqn: Any, body: Any) -> list:
    """For each constvar of the kernel body, the ``core_map`` operand it stands for
    (``None`` for a constant the body closes over)."""
    outer = param(eqn, "jaxpr")
    outer = getattr(outer, "jaxpr", outer)
    operand_of = dict(zip(outer.constvars, eqn.invars))
    if body is outer:
        return [operand_of.get(v) for v in body.constvars]
    scoped = outer.eqns[0]
    inner_of = dict(zip(body.constvars, scoped.invars))
    return [operand_of.get(inner_of.get(v)) for v in body.constvars]


def _kernel_refs(eqn: Any, context: Any) -> tuple[list, list]:
    """The refs ``pl.kernel``'s wrapper makes, in order: of its operands (inputs) and of
    ``empty`` arrays (outputs). Every operand of the ``core_map`` must be one."""
    if context is None:
        raise layout_error("core_map", "a `core_map` outside pl.kernel's wrapper", "pl.kernel's wrapper around it")
    made_by = {id(v): e for e in context.eqns for v in e.outvars}
    inputs, outputs = [], []
    for e in context.eqns:
        if e.primitive.name != "new_ref":
            continue
        src = e.invars[0]
        maker = made_by.get(id(src))
        if maker is not None and maker.primitive.name == "empty":
            outputs.append(e.outvars[0])
        elif maker is None and any(src is v for v in context.invars):
            inputs.append(e.outvars[0])
    known = {id(r) for r in inputs + outputs}
    if not all(id(v) in known for v in eqn.invars):
        raise Unsupported("pl.core_map", "a `core_map` over refs other than the operands and outputs pl.kernel makes "
                                         f"(a direct `pl.core_map`, read under jax {jax_version()} only as "
                                         "pl.kernel's)")
    return inputs, outputs


def _unused_var(aval: Any) -> Any:
    """A fresh variable for a kernel argument the body never reads (it is still declared)."""
    from jax._src import core as jax_core

    return jax_core.Var(aval)


#: The body functions ``pl.kernel`` was given under jax 0.8, 0.9, with the ``name=``
#: given (see :func:`watch_kernel_bodies`), most recent last.
_BODIES: list[tuple[Callable, str | None]] = []


def watch_kernel_bodies() -> Callable[[], None]:
    """Records each body function ``pl.kernel`` is given: where ``pl.kernel`` is staged as
    a ``core_map`` (jax 0.8, 0.9, 0.10.0), its argument names and ``def`` are not in the
    staged equation. Returns what stops it."""
    if not supports():
        return lambda: None
    from jax._src.pallas import helpers

    original = getattr(helpers, "_make_kernel", None)
    if original is None or getattr(original, "_semcheck_original", None) is not None:
        # Not there: a pl.kernel is then unsupported (find_kernel_body finds no body).
        return lambda: None

    @functools.wraps(original)
    def make_kernel(body: Callable, *args: Any, **kwargs: Any) -> Any:
        _BODIES.append((body, kwargs.get("name")))
        return original(body, *args, **kwargs)

    make_kernel._semcheck_original = original  # type: ignore[attr-defined]
    helpers._make_kernel = make_kernel

    def stop() -> None:
        helpers._make_kernel = original

    return stop


def find_kernel_body(name: str | None, body: Any) -> tuple[Callable, str | None] | None:
    """The function ``pl.kernel`` was given for the ``core_map`` named ``name`` whose
    body jaxpr is ``body``: among the recorded ones of that name, the one whose code the
    body's equations were traced in. (jax 0.8.1's ``pl.kernel`` takes no ``name=``: its
    ``core_map`` is named after a wrapper of its own, so when no recorded body has the
    name, every recorded body is matched by its code alone.)"""
    from jax._src import util

    named = [(f, n) for f, n in reversed(_BODIES) if (n or util.fun_name(f)) == name]
    codes = {id(c) for c in _traced_codes(body)}
    for f, n in named or list(reversed(_BODIES)):
        if id(getattr(_unwrapped(f), "__code__", None)) in codes:
            return f, n
    return named[0] if len({id(_unwrapped(f)) for f, _ in named}) == 1 else None


def _traced_codes(jaxpr: Any) -> list:
    """The code objects of every frame that bound an equation of ``jaxpr`` (top level)."""
    out = []
    for e in jaxpr.eqns:
        tb = getattr(e.source_info, "traceback", None)
        if tb is not None:
            out.extend(tb.raw_frames()[0])
    return out


def _unwrapped(fun: Any) -> Any:
    import inspect

    while isinstance(fun, functools.partial):
        fun = fun.func
    return inspect.unwrap(fun)


def _body_debug_info(found: tuple[Callable, str | None], args: list) -> Any:
    """The debug info 0.10's ``mpmd_map`` gives the kernel body: JAX's own
    ``api_util.debug_info`` of the function, its name replaced by the ``name=`` given."""
    from jax._src import api_util

    fun, given = found
    info = api_util.debug_info("mpmd_map", fun, [a.aval for a in args], {})
    info = info._replace(result_paths=())  # the body returns nothing
    return info.replace_func_name(given) if given else info


def mosaic_params(compiler_params: Any) -> Any:
    """The TPU ``CompilerParams`` of a kernel equation (difference 11): 0.8 keeps them in
    a ``FrozenDict`` by backend (``{'mosaic_tpu': CompilerParams(...)}``), 0.9 and 0.10
    the object itself. ``None`` when there are none."""
    from collections.abc import Mapping

    if compiler_params is None:
        return None
    if isinstance(compiler_params, Mapping):
        return compiler_params.get("mosaic_tpu") or compiler_params.get("mosaic")
    return compiler_params


# ---------------------------------------------------------------------------------------
# TPU sizes


def pretend_tpu(chip: str) -> None:
    """Makes ``pltpu.get_tpu_info()`` answer with a TPU ``chip``'s sizes (one TensorCore
    per device) on this CPU host (difference 8). Raises ``ValueError`` naming the chips
    JAX knows when ``chip`` is not one, or when this JAX has no TPU sizes to pretend with."""
    try:
        from jax._src.pallas.mosaic import tpu_info
    except ImportError:
        raise ValueError(f"SEMCHECK_TPU={chip}: jax {jax_version()} has no TPU sizes for a CPU host to pretend "
                         "with (`jax._src.pallas.mosaic.tpu_info`, from jax 0.8.1); leave SEMCHECK_TPU unset "
                         "or use a later JAX") from None

    try:
        version = tpu_info.ChipVersion(chip)
    except ValueError:
        known = ", ".join(v.value for v in tpu_info.ChipVersion)
        raise ValueError(f"SEMCHECK_TPU={chip}: not a TPU chip JAX knows; one of: {known}") from None
    if hasattr(tpu_info, "get_tpu_info_for_chip"):
        tpu_info.registry["cpu"] = lambda: tpu_info.get_tpu_info_for_chip(version, 1)
    else:
        tpu_info.registry["cpu"] = functools.partial(_info_as_device_kind, tpu_info, version)


#: The device kind JAX 0.8's ``get_tpu_info`` matches for each chip.
_DEVICE_KINDS = {"v2": "TPU v2", "v3": "TPU v3", "v4i": "TPU v4 lite", "v4": "TPU v4", "v5e": "TPU v5 lite",
                 "v5p": "TPU v5", "v6e": "TPU v6 lite", "7x": "TPU7x"}


def keep_tpu_registry() -> Callable[[], None]:
    """Returns what puts ``get_tpu_info``'s registry of device kinds back as it is now,
    undoing :func:`pretend_tpu` (which changes it in place); nothing to do where JAX has
    no such registry (jax 0.8.0 has no ``tpu_info``)."""
    try:
        from jax._src.pallas.mosaic import tpu_info
    except ImportError:
        return lambda: None

    registry = getattr(tpu_info, "registry", None)
    if not isinstance(registry, dict):
        return lambda: None
    saved = dict(registry)

    def restore() -> None:
        registry.clear()
        registry.update(saved)

    return restore


def _info_as_device_kind(tpu_info: Any, version: Any) -> Any:
    """JAX 0.8's own ``get_tpu_info`` for ``version``'s device kind, one core per device."""
    core = tpu_info.core
    kind, cores = core.get_device_kind, core.get_num_device_cores
    core.get_device_kind = lambda: _DEVICE_KINDS[version.value]
    core.get_num_device_cores = lambda: 1
    try:
        return getattr(tpu_info.get_tpu_info, "__wrapped__", tpu_info.get_tpu_info)()
    finally:
        core.get_device_kind, core.get_num_device_cores = kind, cores
