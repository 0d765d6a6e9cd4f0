"""The Python API, for kernel authors' own test suites.

```python
import semcheck

def run_my_kernel():          # builds its inputs for jax.device_count() devices, calls the kernel
    ...

def test_my_kernel_is_race_free():
    semcheck.assert_proved(run_my_kernel, devices=[2, 3, 4])

def test_script():
    verdicts = semcheck.check_file("kernels/psum.py", devices=[2, 3])
    assert all(v.verdict == "proved" for v in verdicts)
```

The trace is specific to the device count, and JAX fixes the device count when it
starts, so every export runs in a fresh child process (this interpreter) with N CPU
devices. ``fn`` must be importable there: a module-level function (a test module is
fine); ``args`` must pickle. Verdicts come from the ``semcheck`` binary (``SEMCHECK_BIN``,
else the one installed with this package, else ``semcheck`` on ``PATH``), which reads the
exported document (``semcheck check doc.json --json``).

The pytest marker (:mod:`semcheck.pytest_plugin`) is the usual way in; these functions
are for checks a marker cannot express.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import subprocess
import sys
import tempfile
from typing import Any, Callable, Iterable, Sequence

from ._binary import PACKAGE_PARENT, BinaryNotFound, find_binary, host_environment


class SemcheckError(Exception):
    """The export or the checker failed (not a verdict: a verdict is a result)."""


@dataclasses.dataclass
class KernelVerdict:
    """The verdict for one kernel at one device count."""

    kernel: str
    devices: int
    verdict: str
    rule: str | None
    message: str
    trace: str | None
    result: dict
    #: For a violation: the hardware assumptions it needs (``["dma-reorder"]``; empty when
    #: it breaks under every choice of ``dma_order`` and ``dma_landing``).
    requires: list[str] = dataclasses.field(default_factory=list)

    def __str__(self) -> str:
        head = f"{self.kernel} at N = {self.devices}: {self.verdict}"
        if self.rule:
            head += f" ({self.rule})"
        if self.message:
            head += f": {self.message}"
        if self.requires:
            head += f"\n  requires: {', '.join(self.requires)}"
        return head + (f"\n{self.trace}" if self.trace else "")


@dataclasses.dataclass(frozen=True)
class Options:
    """How ``semcheck check`` is run: the specification and the hardware assumptions
    (``semcheck semantics``): ``dma_order`` ``"any"`` or ``"pair-fifo"``,
    ``dma_landing`` ``"whole"`` or ``"cells"``; ``None`` is the checker's default."""

    kernel: str | None = None
    expect: str | None = None
    repeat: int | None = None
    dma_order: str | None = None
    dma_landing: str | None = None

    def flags(self) -> list[str]:
        out = []
        for flag, value in (("--kernel", self.kernel), ("--expect", self.expect), ("--repeat", self.repeat),
                            ("--dma-order", self.dma_order), ("--dma-landing", self.dma_landing)):
            if value:
                out += [flag, str(value)]
        return out


def _env() -> dict:
    env = host_environment()
    env["PYTHONPATH"] = PACKAGE_PARENT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _run(cmd: Sequence[str], what: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(list(cmd), capture_output=True, text=True, env=_env(), timeout=timeout)
    except FileNotFoundError as e:
        raise SemcheckError(f"{what}: cannot run {cmd[0]}: {e}") from None
    except subprocess.TimeoutExpired:
        raise SemcheckError(f"{what}: timed out after {timeout} s") from None


def export(target: str | os.PathLike | Callable, *args: Any, devices: int, kernel: str | None = None,
           **kwargs: Any) -> dict:
    """Exports the kernels of a script (a path) or of ``target(*args, **kwargs)`` with
    ``devices`` devices, in a child process; returns the JSON document."""
    with tempfile.TemporaryDirectory(prefix="semcheck-") as tmp:
        out = os.path.join(tmp, "doc.json")
        if callable(target):
            code = getattr(target, "__code__", None)
            module = sys.modules.get(getattr(target, "__module__", ""), None)
            file = getattr(module, "__file__", None) or (code.co_filename if code else None)
            if not file or not os.path.isfile(file):
                raise SemcheckError(f"{target!r} is not defined in a file the child process can import")
            payload = os.path.join(tmp, "call.pickle")
            with open(payload, "wb") as f:
                pickle.dump((args, kwargs), f)
            cmd = [sys.executable, "-m", "semcheck.frontend._call", file, target.__qualname__, payload,
                   str(devices), out] + ([kernel] if kernel else [])
        else:
            cmd = [sys.executable, "-m", "semcheck.frontend", "export", os.fspath(target), "--devices",
                   str(devices), "--out", out] + (["--kernel", kernel] if kernel else [])
        proc = _run(cmd, "export")
        if not os.path.exists(out):
            raise SemcheckError(f"export failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
        with open(out) as f:
            return json.load(f)


def semcheck_binary() -> str:
    """``SEMCHECK_BIN``, else the binary installed with this package, else ``semcheck`` on
    ``PATH``."""
    try:
        return find_binary()
    except BinaryNotFound as e:
        raise SemcheckError(str(e)) from None


def _verdicts_of(doc: dict, options: Options) -> list[KernelVerdict]:
    binary = semcheck_binary()
    with tempfile.TemporaryDirectory(prefix="semcheck-") as tmp:
        path = os.path.join(tmp, "doc.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        opts = options.flags()
        proc = _run([binary, "check", path, "--json", *opts], "semcheck check")
        if not proc.stdout.strip():
            # Exit 2 without a report: the only kernel could not be checked.
            raise SemcheckError(f"semcheck check refused the kernel (exit {proc.returncode}):\n"
                                f"{proc.stderr.strip()[-4000:]}")
        try:
            out = json.loads(proc.stdout)
        except json.JSONDecodeError as e:
            raise SemcheckError(f"semcheck check printed no JSON ({e}):\n{proc.stdout[:2000]}") from None
        # Of several kernels, one that could not be checked is a verdict "error" with
        # its reason (the others are still checked).
        results = out.get("cases", [out])
        verdicts = []
        for r in results:
            violation = r.get("violation") or {}
            trace = None
            if violation.get("trace"):
                trace = "\n".join(f"  {i + 1:>4}. {e}" for i, e in enumerate(violation["trace"]))
            verdicts.append(KernelVerdict(kernel=r.get("kernel") or options.kernel or "?",
                                          devices=int(r.get("devices", 0)), verdict=r.get("verdict", "?"),
                                          rule=violation.get("rule"),
                                          message=violation.get("message", r.get("error", "")), trace=trace,
                                          result=r, requires=list(r.get("requires") or [])))
        return verdicts


def _devices(devices: int | Iterable[int]) -> list[int]:
    return [devices] if isinstance(devices, int) else list(devices)


def check(fn: Callable, *args: Any, devices: int | Iterable[int] = (2, 3, 4), kernel: str | None = None,
          expect: str | None = None, repeat: int | None = None, dma_order: str | None = None,
          dma_landing: str | None = None, **kwargs: Any) -> list[KernelVerdict]:
    """Checks the kernels ``fn(*args, **kwargs)`` calls, at each device count, under the
    hardware assumptions ``dma_order`` and ``dma_landing`` (see :class:`Options`)."""
    options = Options(kernel, expect, repeat, dma_order, dma_landing)
    out = []
    for n in _devices(devices):
        doc = export(fn, *args, devices=n, kernel=kernel, **kwargs)
        out.extend(_verdicts_of(doc, options))
    return out


def check_file(path: str | os.PathLike, *, devices: int | Iterable[int] = (2, 3, 4), kernel: str | None = None,
               expect: str | None = None, repeat: int | None = None, dma_order: str | None = None,
               dma_landing: str | None = None) -> list[KernelVerdict]:
    """Checks the kernels of a script, at each device count (options as :func:`check`)."""
    options = Options(kernel, expect, repeat, dma_order, dma_landing)
    out = []
    for n in _devices(devices):
        doc = export(path, devices=n, kernel=kernel)
        out.extend(_verdicts_of(doc, options))
    return out


def assert_proved(target: str | os.PathLike | Callable, *args: Any, devices: int | Iterable[int] = (2, 3, 4),
                  kernel: str | None = None, expect: str | None = None, repeat: int | None = None,
                  dma_order: str | None = None, dma_landing: str | None = None, **kwargs: Any) -> list[KernelVerdict]:
    """Fails with every non-proved verdict, what it requires, and its counterexample trace."""
    opts = dict(devices=devices, kernel=kernel, expect=expect, repeat=repeat, dma_order=dma_order,
                dma_landing=dma_landing)
    if callable(target):
        verdicts = check(target, *args, **opts, **kwargs)
    else:
        verdicts = check_file(target, **opts)
    bad = [v for v in verdicts if v.verdict != "proved"]
    if not verdicts:
        raise AssertionError("no kernel was checked")
    if bad:
        raise AssertionError("\n\n".join(str(v) for v in bad))
    return verdicts
