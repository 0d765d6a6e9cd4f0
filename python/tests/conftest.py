"""Shared fixtures: exporting many scripts with one JAX start per device count."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# The package lives next to the tests: importable whichever directory pytest starts in.
if os.path.dirname(HERE) not in sys.path:
    sys.path.insert(0, os.path.dirname(HERE))
SEEDS = os.path.join(REPO, "protocols", "pallas")
KERNELS = os.path.join(HERE, "kernels")


def _installed_jax() -> tuple[str, tuple[int, int], tuple[int, ...]]:
    """The version of the JAX the exports run under (this interpreter's), read without
    importing JAX (the tests' own process never starts it): the string, ``(major,
    minor)`` and the release numbers (``0.9.0.1`` -> ``(0, 9, 0, 1)``)."""
    import re
    from importlib.metadata import version

    v = version("jax")
    release = tuple(int(p) for p in re.match(r"\d+(?:\.\d+)*", v).group(0).split("."))
    return v, (release[0], release[1]), release


JAX_VERSION, JAX_MINOR, JAX_RELEASE = _installed_jax()


def needs_jax(first: tuple[int, ...], why: str) -> pytest.MarkDecorator:
    """Skips a test under a JAX older than release ``first``, by name and with the reason:
    the kernel it reads uses an API that JAX does not have (``why``)."""
    return pytest.mark.skipif(JAX_RELEASE < first,
                              reason=f"needs jax >= {'.'.join(map(str, first))}, this is jax {JAX_VERSION}: {why}")


def jax_before(first_without: tuple[int, ...], why: str) -> pytest.MarkDecorator:
    """Skips a test under JAX release ``first_without`` and later, by name and with the
    reason: the kernel it reads uses an API that JAX removed (``why``)."""
    return pytest.mark.skipif(JAX_RELEASE >= first_without,
                              reason=f"needs jax < {'.'.join(map(str, first_without))}, this is jax {JAX_VERSION}: {why}")


#: The first release without ``pltpu.semaphore_signal``, ``pltpu.semaphore_wait`` and
#: ``pltpu.DeviceIdType`` (deprecated in 0.10.0 for ``pl.*``).
PLTPU_SEMAPHORE_API_REMOVED = (0, 11, 0)

#: Why a public kernel calling them is skipped from 0.11.
PLTPU_SEMAPHORE_API = ("the library calls pltpu.semaphore_signal / pltpu.semaphore_wait / pltpu.DeviceIdType, which "
                       "jax 0.11 removed (pl.* since 0.8.1)")

#: The first release whose ``make_async_copy`` takes ``src_sem=`` and no semaphore.
LOCAL_COPY_SEMS_FROM = (0, 12, 0)


#: The first release whose ``pl.kernel`` takes ``out_type=`` and ``scratch_types=``.
PL_KERNEL_KEYWORDS_FROM = (0, 10, 1)

#: Why a kernel calling ``pl.kernel(out_type=..., scratch_types=...)`` is skipped before 0.10.1.
PL_KERNEL_KEYWORDS = ("it calls pl.kernel(out_type=..., scratch_types=...), the keywords of jax 0.10.1 and later "
                      "(before, out_shape= and scratch_shapes=)")


def seed_files() -> list[str]:
    return sorted(os.path.join(SEEDS, f) for f in os.listdir(SEEDS) if f.endswith(".py"))


def uses_pl_kernel_keywords(path: str) -> bool:
    """Whether a kernel file calls ``pl.kernel`` with jax 0.10's keywords."""
    with open(path) as f:
        return "out_type=" in f.read()


def seed_params() -> list:
    """The seed files as test parameters, each marked with the JAX it needs."""
    return [pytest.param(p, marks=needs_jax(PL_KERNEL_KEYWORDS_FROM, PL_KERNEL_KEYWORDS)) if uses_pl_kernel_keywords(p) else p
            for p in seed_files()]


def kernel_files() -> list[str]:
    out = []
    for d in (KERNELS, os.path.join(KERNELS, "unsupported")):
        out += sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".py") and not f.startswith("_"))
    return out


class Exports:
    """Documents of every test script, exported on first use: every seed and test kernel
    file in one process per N (the first of them asked for at that N brings the others),
    any other file (or set of environment variables a script reads, for its variants) in a
    process of its own.

    The exports are written under ``shared``, which the pytest-xdist workers of one run
    share: the first worker to ask for a batch exports it (holding the batch's lock), the
    others wait for it and read its documents instead of exporting the same files again.
    """

    def __init__(self, shared: Path) -> None:
        self.docs: dict[tuple, dict] = {}
        self.shared = shared

    def batch(self, files: list[str], devices: int, env: dict[str, str] | None = None) -> None:
        extra = tuple(sorted((env or {}).items()))
        todo = [f for f in files if (f, devices, extra) not in self.docs]
        if not todo:
            return
        out = self.shared / hashlib.sha256(json.dumps([devices, extra, todo]).encode()).hexdigest()[:20]
        with open(f"{out}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (out / "done").exists():
                out.mkdir(exist_ok=True)
                proc = subprocess.run([sys.executable, os.path.join(HERE, "batch_export.py"), str(devices), str(out),
                                       *todo], capture_output=True, text=True, env={**os.environ, **(env or {})})
                assert proc.returncode == 0, proc.stderr[-3000:]
                (out / "done").touch()
        for f in todo:
            name = os.path.basename(os.path.dirname(f)) + "__" + os.path.basename(f)
            with open(out / (name + ".json")) as fh:
                self.docs[(f, devices, extra)] = json.load(fh)

    def get(self, file: str, devices: int, env: dict[str, str] | None = None) -> dict:
        """The document of ``file`` at N = ``devices``, the script run with ``env`` added
        to the environment."""
        extra = tuple(sorted((env or {}).items()))
        if (file, devices, extra) not in self.docs:
            local = seed_files() + kernel_files()
            self.batch(local if file in local and not env else [file], devices, env)
        return self.docs[(file, devices, extra)]


@pytest.fixture(scope="session")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Exports:
    # A pytest-xdist worker's temporary folder is one of the run's (popen-gw0, ...): the
    # folder above it is the run's own, shared by its workers.
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "exports"
    shared.mkdir(exist_ok=True)
    return Exports(shared)
