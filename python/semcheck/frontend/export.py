"""Exporting a script's kernels as a JSON document (SCHEMA.md).

:func:`configure` must run before JAX is imported: the trace is specific to the number
of devices, which JAX fixes when its CPU backend starts.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import time
from typing import Any

FORMAT = "semcheck-kernel 1"
VERSION = "0.1.0"


def configure(devices: int) -> None:
    """Makes JAX see ``devices`` CPU devices and no accelerator. Must run before
    ``import jax``; raises if JAX was already imported with another device count."""
    if "jax" in sys.modules:
        from . import jaxcompat

        # Imported but no backend started yet (a child of the export server): the device
        # count is still to be fixed, by XLA_FLAGS as before a fresh import.
        if jaxcompat.backend_started():
            import jax

            if jax.device_count() != devices:
                raise RuntimeError(f"JAX is already initialised with {jax.device_count()} devices, not {devices}")
            return
    flags = os.environ.get("XLA_FLAGS", "")
    flags = re.sub(r"--xla_force_host_platform_device_count=\S*", "", flags).strip()
    os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={devices}".strip()
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def forget_exports() -> None:
    """Drops what the front end's modules keep from one export (host-callback results,
    the uses of a kernel's variables, the kernel bodies ``pl.kernel`` was given, cached
    source lines), so that a process exporting again reads only what the next script
    does (:mod:`~semcheck.frontend.worker`)."""
    import linecache

    from . import capture, dataflow, jaxcompat

    capture._SINK.clear()
    dataflow._USES.clear()
    jaxcompat._BODIES.clear()
    linecache.clearcache()


def prepare_server() -> None:
    """What :func:`configure` sets that does not depend on the device count, for a
    process that imports JAX once and forks an export per device count
    (:mod:`~semcheck.frontend.server`; each child then calls :func:`configure`)."""
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


#: The environment variable naming the TPU chip whose sizes ``pltpu.get_tpu_info()``
#: gives while a script is traced (``v6e``): on a CPU host JAX has none to give.
TPU_VARIABLE = "SEMCHECK_TPU"


def pretend_tpu(chip: str) -> None:
    """Makes ``pltpu.get_tpu_info()`` answer with a TPU ``chip``'s sizes (one TensorCore
    per device) on this CPU host, for kernels and launchers that size their blocks or
    pipelines from it (``pltpu.emit_pipeline`` does; on a CPU it raises ``Unsupported
    TPU device kind: cpu``). Uses JAX's own registry of device kinds (private: see
    :func:`~semcheck.frontend.jaxcompat.pretend_tpu`). Raises ``ValueError`` naming the
    chips JAX knows when ``chip`` is not one."""
    from . import jaxcompat

    jaxcompat.pretend_tpu(chip)


def _chip_from_environment() -> dict | None:
    """Applies ``SEMCHECK_TPU`` if it is set; the error record of the document when it
    names no chip JAX knows."""
    chip = os.environ.get(TPU_VARIABLE)
    try:
        if chip:
            pretend_tpu(chip)
    except ValueError as e:
        return {"construct": TPU_VARIABLE, "message": str(e), "loc": None}
    return None


def sha256(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _files(obj: Any, out: set) -> None:
    if isinstance(obj, dict):
        f = obj.get("file")
        if isinstance(f, str):
            out.add(f)
        for v in obj.values():
            _files(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _files(v, out)


def document(script: dict, captured: list, devices: int, kernel: str | None, failure: dict | None = None,
             tracker: Any = None) -> dict:
    """Builds the document from the script record and the captured kernels. ``failure``:
    the front end's own failure while the script ran, which stopped it (a top-level
    error, whatever was captured before). ``tracker``: the order the kernels ran in and
    the values between them (:mod:`~semcheck.frontend.programs`), for the programs of
    several kernels."""
    import jax

    from .kernel import build_kernel

    kernels: list[dict] = []
    names: dict[str, int] = {}
    # One kernel called with several sets of values (routings): each set says which of
    # how many it is, and the first one's name (the group).
    sets: dict = {}
    for cap in captured:
        if cap.prefetch is not None:
            sets.setdefault(cap.body, []).append(cap)
    for cap in captured:
        t = time.perf_counter()
        rec = build_kernel(cap)
        rec["export_seconds"] = round(time.perf_counter() - t, 3)
        rec["name"] = numbered(names, rec["name"])
        group = sets.get(cap.body, [])
        prefetch = rec.get("prefetch")
        if len(group) > 1 and isinstance(prefetch, dict) and ("operands" in prefetch or "recorded" in prefetch):
            first = next(k for k, c in zip(kernels + [rec], captured) if c is group[0])
            index = next(i for i, c in enumerate(group) if c is cap)
            rec["prefetch"]["set"] = {"index": index + 1, "of": len(group), "group": first["name"],
                                      **({"name": cap.label} if cap.label is not None else {})}
        kernels.append(rec)
    errors: list[dict] = []
    warnings: list[dict] = []
    programs: list = []
    if tracker is not None:
        from .programs import export_programs

        def rebuild(k: int, forced: dict) -> dict:
            return {**build_kernel(captured[k], forced), "name": kernels[k]["name"]}

        programs = export_programs(tracker, captured, kernels, rebuild)
        warnings.extend({"message": note} for note in tracker.notes)
    if kernel is not None:
        # The names the script has, as `semcheck check --kernel` lists them, taken before
        # the selection replaces the lists (with empty ones, when nothing has that name).
        named = [f"{p['name']} (program: {', '.join(kernels[k]['name'] for k in p['kernels'])})" for p in programs]
        named += [k["name"] for k in kernels]
        kernels, programs, found = _select(kernels, programs, kernel)
        if not found:
            errors.append({"construct": "kernel not found",
                           "message": f"no kernel named `{kernel}`; the script has: "
                                      + (", ".join(named) or "no kernels"),
                           "loc": None})
    if failure is not None:
        errors.append(failure)
    elif script["status"] != "ok":
        if kernels:
            warnings.append({"message": "the script raised after its kernels were captured (kernel outputs are "
                                        "zero-filled placeholders, so host-side checks of the results fail); "
                                        "any kernel it would have called after that point was not captured",
                             "error": script["error"]})
        else:
            errors.append(script["error"])
    elif not captured:
        ran = f"`{script['function']}` returned" if script.get("function") else "the script ran to the end"
        errors.append({"construct": "no kernel", "loc": None,
                       "message": f"{ran} without calling a Pallas kernel (pallas_call or pl.kernel)"})
    if jax.device_count() != devices:
        errors.append({"construct": "device count", "loc": None,
                       "message": f"JAX sees {jax.device_count()} devices, not the {devices} requested "
                                  "(does the script set XLA_FLAGS itself?)"})
    return _document(script, kernels, devices, errors, warnings, programs)


def numbered(seen: dict[str, int], name: str) -> str:
    """``name`` the first time ``seen`` meets it, ``name#n`` the ``n``-th time (kernels
    and programs of one document have distinct names)."""
    seen[name] = seen.get(name, 0) + 1
    return name if seen[name] == 1 else f"{name}#{seen[name]}"


def _select(kernels: list, programs: list, name: str) -> tuple[list, list, bool]:
    """The kernel named ``name`` (no program), or the program named ``name`` and its
    kernels (renumbered); and whether either was found."""
    program = next((p for p in programs if p["name"] == name), None)
    if program is None:
        chosen = [k for k in kernels if k["name"] == name]
        return chosen, [], bool(chosen)
    keep = sorted(set(program["kernels"]))
    renumber = {old: new for new, old in enumerate(keep)}
    return [kernels[k] for k in keep], [{**program, "kernels": [renumber[k] for k in program["kernels"]]}], True


def _producer() -> dict:
    import jax
    import jaxlib

    return {"package": "semcheck", "version": VERSION, "jax": jax.__version__, "jaxlib": jaxlib.__version__,
            "tpu": os.environ.get(TPU_VARIABLE) or None}


def _document(script: dict, kernels: list, devices: int, errors: list, warnings: list,
              programs: list | None = None) -> dict:
    doc = {
        "format": FORMAT,
        "producer": _producer(),
        "devices": devices,
        "script": script,
        "kernels": kernels,
        "programs": programs or [],
        "errors": errors,
        "warnings": warnings,
    }
    files: set = set()
    _files({"s": script, "k": kernels}, files)
    doc["files"] = {f: sha256(f) for f in sorted(files) if os.path.isfile(f)}
    return doc


def _refused(script: dict, devices: int, error: dict) -> dict:
    """A document with one top-level ``error`` and nothing read."""
    script = {**script, "status": "raised", "error": error}
    return _document(script, [], devices, [error], [])


#: The environment variable naming the folder of the persistent cache of the XLA
#: executables a script's own computations compile (set by the ``semcheck`` binary to
#: ``<cache>/xla``; unset or empty: no cache). See
#: :func:`~semcheck.frontend.jaxcompat.use_compilation_cache`.
XLA_CACHE_ENV = "SEMCHECK_XLA_CACHE"


def _gate(script: dict, devices: int) -> dict | None:
    """The document to write instead of reading anything, if there is one: under a JAX
    the front end does not read (``unsupported jax``), or with ``SEMCHECK_TPU`` naming no
    chip JAX knows. Otherwise the compilation cache is set up (:data:`XLA_CACHE_ENV`)."""
    from . import jaxcompat

    if not jaxcompat.supports():
        return _refused(script, devices, jaxcompat.unsupported_jax_error(function=script.get("function")))
    error = _chip_from_environment()
    if error is not None:
        return _refused(script, devices, error)
    cache = os.environ.get(XLA_CACHE_ENV)
    if cache:
        jaxcompat.use_compilation_cache(cache)
    return None


def _guarded(script: dict, devices: int, run: Any) -> dict:
    """``run()``'s document; a failure of the front end's own code outside the script
    (assembling the document, say) is a document with one top-level ``internal error``."""
    try:
        return run()
    except Exception as e:  # noqa: BLE001 - semcheck's failure, reported as such
        from .errors import internal_error

        return _refused(script, devices, internal_error("exporting the script's kernels", e))


def export_file(path: str, devices: int, kernel: str | None = None, argv: list[str] | None = None,
                lower: bool = True) -> dict:
    """Runs the script at ``path`` with ``devices`` devices and exports its kernels."""
    configure(devices)
    script = {"file": os.path.abspath(path), "argv": list(argv or []), "status": "ok", "error": None}

    def run() -> dict:
        gated = _gate(script, devices)
        if gated is not None:
            return gated
        from .capture import Capture, interpreting, run_interpreted, run_script

        cap = Capture(lower=lower)
        if interpreting():
            cap.interpreted = run_interpreted(path, list(argv or []), devices)
        done = run_script(path, list(argv or []), cap)
        done["sha256"] = sha256(os.path.abspath(path))
        return document(done, cap.kernels, devices, kernel, cap.failure, cap.tracker)

    return _guarded(script, devices, run)


def export_call(fn: Any, args: tuple, kwargs: dict, devices: int, kernel: str | None = None,
                lower: bool = True) -> dict:
    """Calls ``fn(*args, **kwargs)`` with ``devices`` devices and exports its kernels."""
    configure(devices)
    script: dict[str, Any] = {"file": getattr(getattr(fn, "__code__", None), "co_filename", None), "argv": [],
                              "status": "ok", "error": None,
                              "function": getattr(fn, "__qualname__", None) or repr(fn)}

    def run() -> dict:
        gated = _gate(script, devices)
        if gated is not None:
            return gated
        from .capture import Capture, capture_call

        cap = Capture(lower=lower)
        done = {**capture_call(fn, args, kwargs, cap), "function": script["function"]}
        if done.get("file"):
            done["sha256"] = sha256(done["file"])
        return document(done, cap.kernels, devices, kernel, cap.failure, cap.tracker)

    return _guarded(script, devices, run)
