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
        import jax

        if jax.device_count() != devices:
            raise RuntimeError(f"JAX is already initialised with {jax.device_count()} devices, not {devices}")
        return
    flags = os.environ.get("XLA_FLAGS", "")
    flags = re.sub(r"--xla_force_host_platform_device_count=\S*", "", flags).strip()
    os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={devices}".strip()
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


#: The environment variable naming the TPU chip whose sizes ``pltpu.get_tpu_info()``
#: gives while a script is traced (``v6e``): on a CPU host JAX has none to give.
TPU_VARIABLE = "SEMCHECK_TPU"


def pretend_tpu(chip: str) -> None:
    """Makes ``pltpu.get_tpu_info()`` answer with a TPU ``chip``'s sizes (one TensorCore
    per device) on this CPU host, for kernels and launchers that size their blocks or
    pipelines from it (``pltpu.emit_pipeline`` does; on a CPU it raises ``Unsupported
    TPU device kind: cpu``). Uses JAX's own registry of device kinds
    (``jax._src.pallas.mosaic.tpu_info.registry``, private, pinned jax). Raises
    ``ValueError`` naming the chips JAX knows when ``chip`` is not one."""
    from jax._src.pallas.mosaic import tpu_info

    try:
        version = tpu_info.ChipVersion(chip)
    except ValueError:
        known = ", ".join(v.value for v in tpu_info.ChipVersion)
        raise ValueError(f"{TPU_VARIABLE}={chip}: not a TPU chip JAX knows; one of: {known}") from None
    tpu_info.registry["cpu"] = lambda: tpu_info.get_tpu_info_for_chip(version, 1)


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


def document(script: dict, captured: list, devices: int, kernel: str | None) -> dict:
    """Builds the document from the script record and the captured kernels."""
    import jax
    import jaxlib

    from .kernel import KernelBuilder

    kernels, names = [], {}
    for cap in captured:
        t = time.perf_counter()
        rec = KernelBuilder(cap).build()
        rec["export_seconds"] = round(time.perf_counter() - t, 3)
        n = names.get(rec["name"], 0) + 1
        names[rec["name"]] = n
        if n > 1:
            rec["name"] = f"{rec['name']}#{n}"
        kernels.append(rec)
    errors, warnings = [], []
    if kernel is not None:
        chosen = [k for k in kernels if k["name"] == kernel]
        if not chosen:
            errors.append({"construct": "kernel not found",
                           "message": f"no kernel named `{kernel}`; the script has: "
                                      + (", ".join(k["name"] for k in kernels) or "no kernels"),
                           "loc": None})
        kernels = chosen
    if script["status"] != "ok":
        if kernels:
            warnings.append({"message": "the script raised after its kernels were captured; kernel outputs are "
                                        "zero-filled placeholders, so host-side checks of the results fail",
                             "error": script["error"]})
        else:
            errors.append(script["error"])
    elif not captured:
        errors.append({"construct": "no kernel", "loc": None,
                       "message": "the script ran to the end without calling a Pallas kernel (pallas_call or pl.kernel)"})
    if jax.device_count() != devices:
        errors.append({"construct": "device count", "loc": None,
                       "message": f"JAX sees {jax.device_count()} devices, not the {devices} requested "
                                  "(does the script set XLA_FLAGS itself?)"})
    doc = {
        "format": FORMAT,
        "producer": {"package": "semcheck", "version": VERSION, "jax": jax.__version__,
                     "jaxlib": jaxlib.__version__, "tpu": os.environ.get(TPU_VARIABLE) or None},
        "devices": devices,
        "script": script,
        "kernels": kernels,
        "errors": errors,
        "warnings": warnings,
    }
    files: set = set()
    _files({"s": script, "k": kernels}, files)
    doc["files"] = {f: sha256(f) for f in sorted(files) if os.path.isfile(f)}
    return doc


def export_file(path: str, devices: int, kernel: str | None = None, argv: list[str] | None = None,
                lower: bool = True) -> dict:
    """Runs the script at ``path`` with ``devices`` devices and exports its kernels."""
    configure(devices)
    error = _chip_from_environment()
    if error is not None:
        script = {"file": os.path.abspath(path), "argv": list(argv or []), "status": "raised", "error": error}
        return document(script, [], devices, kernel)
    from .capture import Capture, run_script

    cap = Capture(lower=lower)
    script = run_script(path, list(argv or []), cap)
    script["sha256"] = sha256(os.path.abspath(path))
    return document(script, cap.kernels, devices, kernel)


def export_call(fn: Any, args: tuple, kwargs: dict, devices: int, kernel: str | None = None,
                lower: bool = True) -> dict:
    """Calls ``fn(*args, **kwargs)`` with ``devices`` devices and exports its kernels."""
    configure(devices)
    error = _chip_from_environment()
    if error is not None:
        return document({"file": None, "argv": [], "status": "raised", "error": error}, [], devices, kernel)
    from .capture import Capture, capture_call

    cap = Capture(lower=lower)
    script = capture_call(fn, args, kwargs, cap)
    if script.get("file"):
        script["sha256"] = sha256(script["file"])
    return document(script, cap.kernels, devices, kernel)
