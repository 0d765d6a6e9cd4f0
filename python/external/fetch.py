"""Fetching the public packages the external kernels come from, at pinned versions.

Nothing of them is copied into this repository: each driver calls :func:`module`
(through :func:`package`),
which runs ``pip download --no-deps`` into a cache directory (``SEMCHECK_EXTERNAL_CACHE``,
else ``external/`` in semcheck's cache: ``$SEMCHECK_CACHE_DIR``, ``$XDG_CACHE_HOME/semcheck``
or ``~/.cache/semcheck``, the order the binary finds its environment in) and unpacks the
wheel there, once.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import types
import zipfile


def cache_dir() -> str:
    root = os.environ.get("SEMCHECK_EXTERNAL_CACHE")
    if not root:
        base = os.environ.get("SEMCHECK_CACHE_DIR") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "semcheck")
        root = os.path.join(base, "external")
    os.makedirs(root, exist_ok=True)
    return root


def package(name: str, version: str, python_version: str | None = None) -> str:
    """The directory holding the unpacked wheel of ``name==version``.

    ``python_version`` (``"3.12"``) asks pip for the wheel that Python would get: for a
    pure-Python wheel whose metadata requires a newer Python than the one running here
    (its driver says why the kernel's own module still imports)."""
    target = os.path.join(cache_dir(), f"{name}-{version}")
    if os.path.isdir(os.path.join(target, ".complete")):
        return target
    wheels = os.path.join(cache_dir(), "wheels")
    os.makedirs(wheels, exist_ok=True)
    pin = ["--python-version", python_version] if python_version else []
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q",
                    *pin, "-d", wheels, f"{name}=={version}"], check=True, stdout=sys.stderr)
    norm = name.replace("-", "_").lower()
    wheel = [w for w in os.listdir(wheels) if w.lower().startswith(f"{norm}-{version}-") and w.endswith(".whl")]
    if not wheel:
        raise RuntimeError(f"pip download gave no wheel for {name}=={version}")
    with zipfile.ZipFile(os.path.join(wheels, wheel[0])) as z:
        z.extractall(target)
    os.makedirs(os.path.join(target, ".complete"), exist_ok=True)
    return target


def namespace(root: str, *dotted: str) -> None:
    """Registers ``dotted`` packages (``tpu_inference``, ``tpu_inference.kernels``) as
    plain namespaces over ``root``, so their sub-modules import without running the
    packages' ``__init__`` (which for serving frameworks imports the whole server)."""
    for name in dotted:
        path = os.path.join(root, *name.split("."))
        mod = types.ModuleType(name)
        mod.__path__ = [path]
        sys.modules[name] = mod


def module(name: str, version: str, dotted: str, python_version: str | None = None) -> types.ModuleType:
    """Imports module ``dotted`` of the package ``name==version`` (fetched by
    :func:`package`, ``python_version`` passed on), every package above it a plain
    :func:`namespace`, so that none of their ``__init__`` runs."""
    root = package(name, version, python_version)
    if root not in sys.path:
        sys.path.insert(0, root)
    parts = dotted.split(".")
    namespace(root, *(".".join(parts[:i]) for i in range(1, len(parts))))
    return importlib.import_module(dotted)


def stub(name: str, **attrs: object) -> None:
    """Registers a module ``name`` with ``attrs``, in place of one whose imports are out
    of scope (a serving framework's logger); every use is documented by its driver."""
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod


def logger(name: str) -> object:
    """A standard logger with vLLM's ``*_once`` methods, for :func:`stub`."""
    import logging

    log = logging.getLogger(name)
    for level in ("debug", "info", "warning", "error"):
        setattr(log, f"{level}_once", getattr(log, level))
    return log


def pretend_tpu(chip: str = "v6e") -> None:
    """Makes ``pltpu.get_tpu_info()`` answer with a TPU ``chip``'s sizes on this CPU host
    (``semcheck.frontend.export.pretend_tpu``; a driver could set ``SEMCHECK_TPU`` instead,
    but the driver, not its caller, knows the chip its library expects)."""
    from semcheck.frontend.export import pretend_tpu as pretend

    pretend(chip)
