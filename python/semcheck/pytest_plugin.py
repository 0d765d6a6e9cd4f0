"""The pytest plugin: a test marked ``@pytest.mark.semcheck`` is **checked instead of run**.

```python
import pytest

@pytest.mark.semcheck(devices=[2, 3])
def test_psum():
    run_psum()            # calls the kernel the way the program does, for jax.device_count() devices
```

The test becomes one test item per mesh size (``test_psum[N2]``, ``test_psum[N3]``), so
``-k``, ``-x``, ``--lf`` and pytest-xdist work as for any test. Each item runs the test
function in a child process of this interpreter in which JAX sees N CPU devices (the
session's export server, :mod:`semcheck._session`, ended with the session), captures the
kernels it calls without running them, and checks them with the ``semcheck`` binary: the item passes when every kernel it calls is **proved** at that N, and fails
with the counterexample in the kernel's own source lines (and what it requires of the
hardware) when a rule is broken, or with the reason when the check was not complete.

Options, each in the marker or as an ini setting (``[tool.pytest.ini_options]`` in
``pyproject.toml``, or ``pytest.ini``) with a ``semcheck_`` prefix; the marker wins:

=================  ==================================================================
``devices``        mesh sizes (ini: ``semcheck_devices = 2 3``), default ``2 3``
``kernel``         only the kernel of this name (default: every communicating kernel)
``dma_order``      ``any`` (default) or ``pair-fifo``
``dma_landing``    ``whole`` (default) or ``cells``
``repeat``         invocations of the kernel in a row (default 1)
``max_seconds``    time budget per mesh size, tracing included (default: none)
``max_memory_mib`` memory budget per mesh size (default: the checker's, 8192)
=================  ==================================================================

``pytest --semcheck=off`` runs marked tests as ordinary tests (on a machine with TPUs).
The test function must take no fixtures: it runs in another process. Arguments from
``@pytest.mark.parametrize`` are passed to it (they must pickle).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
import sys
from typing import Any, cast

import pytest

#: The ini settings, with their help and default.
_INI = {
    "devices": ("mesh sizes to check marked tests at", "2 3"),
    "dma_order": ("DMA completion order assumed: any or pair-fifo", ""),
    "dma_landing": ("how a DMA lands: whole or cells", ""),
    "repeat": ("invocations of the kernel in a row", ""),
    "max_seconds": ("time budget per mesh size, in seconds", ""),
    "max_memory_mib": ("memory budget per mesh size, in MiB", ""),
}
_MARKER_KEYS = {"devices", "kernel", "expect", *_INI}
_PARAM = "semcheck_devices"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("semcheck", "semcheck: checking Pallas kernels instead of running them")
    group.addoption("--semcheck", choices=["check", "off"], default="check",
                    help="check tests marked @pytest.mark.semcheck (default), or run them as ordinary tests (off)")
    group.addoption("--semcheck-schedule", action="store_true", default=False,
                    help="show a violation's whole schedule after its explanation")
    group.addoption("--semcheck-html", metavar="DIR", default=None,
                    help="write each violation's counterexample as an HTML page into DIR (made if missing), "
                         "named after its test")
    for key, (text, default) in _INI.items():
        parser.addini(f"semcheck_{key}", f"semcheck: {text}", default=default)


def pytest_configure(config: pytest.Config) -> None:
    if _active(config):
        # The ini settings apply to every marked test: a bad one is a usage error now.
        try:
            settings(config, pytest.mark.semcheck.mark, "the semcheck_* settings")
        except MarkerError as e:
            raise pytest.UsageError(str(e)) from None
    config.addinivalue_line(
        "markers",
        "semcheck(devices=[2, 3], kernel=None, dma_order=None, dma_landing=None, repeat=None, max_seconds=None, "
        "max_memory_mib=None): check the kernels this test calls with semcheck instead of running it, one test per "
        "mesh size")


class MarkerError(Exception):
    """A marker or setting that does not say what to check."""


def _active(config: pytest.Config) -> bool:
    return config.getoption("semcheck") != "off"


@dataclasses.dataclass(frozen=True)
class Settings:
    """One marked test's options, the marker's over the ini settings."""

    devices: tuple[int, ...]
    kernel: str | None = None
    expect: str | None = None
    dma_order: str | None = None
    dma_landing: str | None = None
    repeat: int | None = None
    max_seconds: float | None = None
    max_memory_mib: int | None = None


def _number(where: str, value: Any, kind: type) -> Any:
    if value is None or value == "":
        return None
    try:
        out = kind(value)
    except (TypeError, ValueError):
        raise MarkerError(f"semcheck: {where} must be a number, not {value!r}") from None
    if out <= 0:
        raise MarkerError(f"semcheck: {where} must be positive, not {value!r}")
    return out


def settings(config: pytest.Config, marker: pytest.Mark, where: str) -> Settings:
    """The options of a marked test (:class:`MarkerError` names the test)."""
    if marker.args:
        raise MarkerError(f"semcheck: {where}: the semcheck marker takes keyword arguments only "
                                f"(devices=[2, 3], ...), not {marker.args!r}")
    unknown = sorted(set(marker.kwargs) - _MARKER_KEYS)
    if unknown:
        raise MarkerError(f"semcheck: {where}: unknown semcheck marker option(s) {', '.join(unknown)}; "
                                f"known: {', '.join(sorted(_MARKER_KEYS))}")

    def get(key: str) -> Any:
        if key in marker.kwargs:
            return marker.kwargs[key]
        return config.getini(f"semcheck_{key}") if key in _INI else None

    devices = get("devices")
    if isinstance(devices, int):
        devices = [devices]
    elif isinstance(devices, str):
        devices = devices.split()
    try:
        sizes = tuple(int(d) for d in devices)
    except (TypeError, ValueError):
        raise MarkerError(f"semcheck: {where}: devices must be mesh sizes like [2, 3], not {devices!r}") from None
    if not sizes or any(n < 1 for n in sizes):
        raise MarkerError(f"semcheck: {where}: devices must be positive mesh sizes, not {devices!r}")
    for key, options in (("dma_order", ("any", "pair-fifo")), ("dma_landing", ("whole", "cells"))):
        if get(key) not in (None, "", *options):
            raise MarkerError(f"semcheck: {where}: {key} must be one of {', '.join(options)}, not {get(key)!r}")
    return Settings(devices=tuple(dict.fromkeys(sizes)), kernel=get("kernel") or None, expect=get("expect") or None,
                    dma_order=get("dma_order") or None, dma_landing=get("dma_landing") or None,
                    repeat=_number(f"{where}: repeat", get("repeat"), int),
                    max_seconds=_number(f"{where}: max_seconds", get("max_seconds"), float),
                    max_memory_mib=_number(f"{where}: max_memory_mib", get("max_memory_mib"), int))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("semcheck")
    if marker is None or not _active(metafunc.config):
        return
    try:
        chosen = settings(metafunc.config, marker, metafunc.definition.nodeid)
    except MarkerError:
        return  # one item, which fails saying why (pytest_pyfunc_call)
    # One item per mesh size: the parameter is the plugin's, not the function's (it is
    # not passed to it), so it is added to the names pytest may parametrize.
    if _PARAM not in metafunc.fixturenames:
        metafunc.fixturenames.append(_PARAM)
    metafunc.parametrize(_PARAM, list(chosen.devices), ids=[f"N{n}" for n in chosen.devices])


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    marker = pyfuncitem.get_closest_marker("semcheck")
    if marker is None or not _active(pyfuncitem.config):
        return None
    from . import api

    try:
        chosen = settings(pyfuncitem.config, marker, pyfuncitem.nodeid)
    except MarkerError as e:
        problem: str | None = str(e)
    else:
        problem = None
    if problem is not None:  # failed outside the handler: pytest shows no chained exception
        pytest.fail(problem, pytrace=False)
    devices = cast(int, pyfuncitem.callspec.params[_PARAM])
    kwargs = _arguments(pyfuncitem)
    fn = pyfuncitem.obj
    fn = getattr(fn, "__func__", fn)
    error = None
    try:
        verdicts = api.check(fn, devices=[devices], kernel=chosen.kernel, expect=chosen.expect, repeat=chosen.repeat,
                             dma_order=chosen.dma_order, dma_landing=chosen.dma_landing,
                             max_seconds=chosen.max_seconds, max_memory_mib=chosen.max_memory_mib, **kwargs)
    except api.SemcheckError as e:
        error = str(e)
    if error is not None:
        pytest.fail(f"semcheck could not check {pyfuncitem.name}: {error}", pytrace=False)
    if not verdicts:
        pytest.fail(f"semcheck: {pyfuncitem.name} called no Pallas kernel that communicates", pytrace=False)
    bad = [v for v in verdicts if v.verdict != "proved"]
    if bad:
        schedule = pyfuncitem.config.getoption("semcheck_schedule")
        pages = pyfuncitem.config.getoption("semcheck_html")
        text = [v.describe(schedule) + (_page(v, pyfuncitem, pages) if pages else "") for v in bad]
        pytest.fail("\n\n".join(text), pytrace=False)
    code = fn.__code__
    api.warn_if_vacuous(verdicts, at=(code.co_filename, code.co_firstlineno))
    return True


def _page(verdict: Any, item: pytest.Function, folder: str) -> str:
    """Writes a violation's page into ``folder`` (``test_k.py-test_x-N2-kernel.html``,
    from the item's id); the line that names it, or why there is none."""
    if verdict.verdict != "violation":
        return ""
    from . import api

    name = re.sub(r"[^A-Za-z0-9_.]+", "-", f"{item.nodeid}-{verdict.kernel}").strip("-") + ".html"
    path = os.path.join(folder, name)
    try:
        page = verdict.html()
        os.makedirs(folder, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(page)
    except (api.SemcheckError, OSError) as e:
        return f"\n  no page drawn: {e}"
    return f"\n  drawn as a page: {path}"


def _arguments(item: pytest.Function) -> dict[str, Any]:
    """The arguments to call a marked test with: its ``parametrize`` values. A fixture
    cannot cross into the child process, so one is a usage error."""
    wanted = [p for p in inspect.signature(item.obj).parameters if p != "self"]
    params = {k: v for k, v in item.callspec.params.items() if k != _PARAM}
    fixtures = [p for p in wanted if p not in params]
    if fixtures:
        pytest.fail(f"semcheck: {item.name} takes the fixture(s) {', '.join(fixtures)}; a test checked by semcheck runs "
                    "in a fresh process with N devices and can take only @pytest.mark.parametrize arguments",
                    pytrace=False)
    return {k: params[k] for k in wanted}


def pytest_sessionfinish(session: pytest.Session) -> None:
    # The export server the marked tests shared (one per pytest process, so one per xdist
    # worker) ends with the session.
    if "semcheck.api" in sys.modules:
        sys.modules["semcheck.api"].close_session()


def pytest_report_header(config: pytest.Config) -> str | None:
    if not _active(config):
        return "semcheck: off (marked tests run as ordinary tests)"
    from ._binary import BinaryNotFound, find_binary

    try:
        binary = find_binary()
    except BinaryNotFound as e:
        return f"semcheck: {e}"
    import importlib.metadata

    try:
        jax = f"jax {importlib.metadata.version('jax')}"
    except importlib.metadata.PackageNotFoundError:
        jax = "no jax installed"
    return f"semcheck: checking marked tests with {binary}, tracing them with {sys.executable} ({jax})"
