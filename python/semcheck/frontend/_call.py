"""Child process of :func:`semcheck.api.export` for a callable:
``python -m semcheck.frontend._call FILE QUALNAME PAYLOAD N OUT [KERNEL]``; the export
server's workers run :func:`main` with the same arguments for a request with ``call``.

``PAYLOAD`` is a pickle of ``(args, kwargs, sys_path, module, instance)``: the call's
arguments, the parent's import path, the name the parent imported ``FILE`` under (a test
module imported by pytest may import its neighbours, or be part of a package) and, for a
method bound to an instance, the instance pickled again on its own (read once ``FILE`` is
loaded, its classes found there even when the parent ran ``FILE`` as ``__main__``), else
``None``."""

from __future__ import annotations

import importlib.util
import inspect
import io
# Bound when the front end is imported, before a script runs: a script that replaces
# `json.dumps` (or the like) does not change how the export is written.
from json import dump
import os
import pickle
import sys
from typing import Any


class _Unpickler(pickle.Unpickler):
    """Finds the classes of the module the parent knew as ``name`` in ``module``, the one
    this process loaded from the same file."""

    def __init__(self, data: io.BytesIO, name: str | None, module: Any):
        super().__init__(data)
        self.name, self.module = name, module

    def find_class(self, module: str, name: str) -> Any:
        if module == self.name:
            found = self.module
            for part in name.split("."):
                found = getattr(found, part)
            return found
        return super().find_class(module, name)


def _resolve(module: Any, qualname: str, instance: bytes | None = None, name: str | None = None) -> Any:
    """The function ``qualname`` names in ``module``: a method bound to the instance
    ``instance`` pickles (the parent's ``name`` for ``module``), else to an instance made
    without arguments (as pytest makes test classes)."""
    if instance is not None:
        return getattr(_Unpickler(io.BytesIO(instance), name, module).load(), qualname.rpartition(".")[2])
    owner, fn = None, module
    for part in qualname.split("."):
        owner, fn = fn, getattr(fn, part)
    if inspect.isclass(owner) and inspect.isfunction(fn) and "self" in inspect.signature(fn).parameters:
        return getattr(owner(), fn.__name__)
    return fn


def _load(file: str, name: str | None) -> Any:
    """The module of ``file``: imported under the parent's name for it when that name
    leads to the same file (so package-relative imports work), else loaded from the file."""
    if name and name not in ("__main__", "__semcheck_target__"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin and os.path.realpath(spec.origin) == os.path.realpath(file):
            return importlib.import_module(name)
    spec = importlib.util.spec_from_file_location("__semcheck_target__", file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {file} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules["__semcheck_target__"] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    file, qualname, payload, devices, out = argv[:5]
    kernel = argv[5] if len(argv) > 5 else None
    from .export import configure

    configure(int(devices))
    from . import jaxcompat

    # The module may call pl.kernel when it is imported, before the export starts.
    stop_watching = jaxcompat.watch_kernel_bodies()
    try:
        with open(payload, "rb") as f:
            args, kwargs, parent_path, name, instance = pickle.load(f)
        sys.path[:0] = [os.path.dirname(os.path.abspath(file))] + [p for p in parent_path if p not in sys.path]
        fn = _resolve(_load(file, name), qualname, instance, name)
        from .export import export_call

        # Without Mosaic's lowering cross-check, as `check` exports (only the front end's
        # tests compare their refusals with it).
        doc = export_call(fn, args, kwargs, int(devices), kernel, lower=False)
    finally:
        stop_watching()  # a worker's next export watches afresh
    with open(out, "w") as f:
        dump(doc, f)
    return 2 if doc["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
