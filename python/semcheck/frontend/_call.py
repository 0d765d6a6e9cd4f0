"""Child process of :func:`semcheck.api.export` for a callable:
``python -m semcheck.frontend._call FILE QUALNAME ARGS_PICKLE N OUT [KERNEL]``."""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import sys


def main() -> int:
    file, qualname, payload, devices, out = sys.argv[1:6]
    kernel = sys.argv[6] if len(sys.argv) > 6 else None
    from .export import configure

    configure(int(devices))
    from . import jaxcompat

    if jaxcompat.supports():
        # The module may call pl.kernel when it is imported, before the export starts.
        jaxcompat.watch_kernel_bodies()
    sys.path.insert(0, os.path.dirname(os.path.abspath(file)))
    spec = importlib.util.spec_from_file_location("__semcheck_target__", file)
    module = importlib.util.module_from_spec(spec)
    sys.modules["__semcheck_target__"] = module
    spec.loader.exec_module(module)
    fn = module
    for part in qualname.split("."):
        fn = getattr(fn, part)
    with open(payload, "rb") as f:
        args, kwargs = pickle.load(f)
    from .export import export_call

    doc = export_call(fn, args, kwargs, int(devices), kernel)
    with open(out, "w") as f:
        json.dump(doc, f)
    return 2 if doc["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
