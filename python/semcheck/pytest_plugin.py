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
``pyproject.toml``, or ``pytest.ini``) with a ``semcheck_`` prefix; the marker wins. They
are validated as the API validates them (:mod:`semcheck._options`): a bad ini setting is a
usage error before collection, a bad marker option one failing item that says why.

=================  ==================================================================
``devices``        mesh sizes (ini: ``semcheck_devices = 2 3``, or ``[2, 3]``), default ``2 3``
``kernel``         only the kernel of this name (default: every communicating kernel)
``expect``         the collective the first output must compute (``psum``, ...)
``dma_order``      ``any`` (default) or ``pair-fifo``
``dma_landing``    ``whole`` (default) or ``cells``
``repeat``         invocations of the kernel in a row (default 1)
``max_seconds``    time budget per mesh size: of tracing (default 900 s) and of checking
                   (default: none)
``max_memory_mib`` memory budget per mesh size (default: the checker's, 8192)
=================  ==================================================================

``pytest --semcheck=off`` runs marked tests as ordinary tests (on a machine with TPUs).
The test function must take no fixtures: it runs in another process. Arguments from
``@pytest.mark.parametrize`` are passed to it (they must pickle). A test whose body raises
after calling its first kernels passes with a
:class:`~semcheck.api.SemcheckPartialCaptureWarning` (the kernels after that point were
not checked); one that calls ``pytest.skip`` (or ``importorskip``, ``xfail``) is skipped
(or xfailed).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
import sys
import unittest
from typing import Any, Iterator, cast

import pytest

from . import _jaxrange, _options
from ._options import Checked as Settings

#: The ini settings: their help and how pytest reads them (a union of types where this
#: pytest has them, so that a native TOML ``[tool.pytest]`` table may give a number).
_NUMBERS = tuple(getattr(pytest, "version_tuple", (0,))[:2]) >= (9, 2)
_INI: dict[str, tuple[str, Any]] = {
    # "args": a TOML list ([2, 3]) or text split as a shell splits it ("2 3").
    "devices": ("mesh sizes to check marked tests at: 2 3, or a TOML list [2, 3]", "args"),
    "dma_order": (f"DMA completion order assumed: {' or '.join(_options.DMA_ORDERS)}", "string"),
    "dma_landing": (f"how a DMA lands: {' or '.join(_options.DMA_LANDINGS)}", "string"),
    "repeat": ("invocations of the kernel in a row", int | str if _NUMBERS else "string"),
    "max_seconds": ("time budget per mesh size, in seconds", float | str if _NUMBERS else "string"),
    "max_memory_mib": ("memory budget per mesh size, in MiB", int | str if _NUMBERS else "string"),
}
#: The ini settings' defaults (``devices``: ``2 3``; the others: the API's).
_DEFAULTS: dict[str, Any] = {"devices": ["2", "3"]}
_MARKER_KEYS = [f.name for f in dataclasses.fields(Settings)]
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
    for key, (text, kind) in _INI.items():
        parser.addini(f"semcheck_{key}", f"semcheck: {text}", type=kind, default=_DEFAULTS.get(key, ""))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "semcheck(devices=[2, 3], kernel=None, expect=None, dma_order=None, dma_landing=None, repeat=None, "
        "max_seconds=None, max_memory_mib=None): check the kernels this test calls with semcheck instead of "
        "running it, one test per mesh size (the semcheck_* ini settings give the defaults)")
    if _active(config):
        # The ini settings apply to every marked test: a bad one is a usage error now.
        try:
            _options.validate(**_ini_values(config), prefix="semcheck_")
        except (TypeError, ValueError) as e:
            raise pytest.UsageError(f"semcheck: {e}") from None
    if config.getoption("semcheck_html") == "":
        raise pytest.UsageError("semcheck: --semcheck-html needs the folder to write the pages into, not an empty "
                                "name (--semcheck-html pages, say)")


class MarkerError(Exception):
    """A marker or setting that does not say what to check."""


def _active(config: pytest.Config) -> bool:
    return config.getoption("semcheck") != "off"


def _ini_values(config: pytest.Config) -> dict[str, Any]:
    """The ini settings as the options' values (``None``: not set); ``ValueError`` naming
    a setting whose text is not what it should be."""
    out: dict[str, Any] = {}
    for key in _INI:
        value = config.getini(f"semcheck_{key}")
        setting = f"semcheck_{key}"
        if key == "devices":
            out[key] = _options.ini_devices(value, setting)
        elif key in ("repeat", "max_memory_mib"):
            out[key] = _options.ini_number(value, setting, int)
        elif key == "max_seconds":
            out[key] = _options.ini_number(value, setting, float)
        else:
            out[key] = _options.ini_text(value)
    return out


def settings(config: pytest.Config, marker: pytest.Mark, where: str) -> Settings:
    """The options of a marked test, the marker's over the ini settings, validated as the
    API validates them (:mod:`semcheck._options`); :class:`MarkerError` names the test."""
    if marker.args:
        raise MarkerError(f"semcheck: {where}: the semcheck marker takes keyword arguments only "
                          f"(devices=[2, 3], ...), not {marker.args!r}")
    unknown = sorted(set(marker.kwargs) - set(_MARKER_KEYS))
    if unknown:
        raise MarkerError(f"semcheck: {where}: unknown semcheck marker option(s) {', '.join(unknown)}; "
                          f"known: {', '.join(sorted(_MARKER_KEYS))}")
    if isinstance(marker.kwargs.get("devices"), Iterator):
        # Read when pytest parametrizes the test and again when each item runs.
        raise MarkerError(f"semcheck: {where}: devices must be a mesh size or a list of them, like 2 or [2, 3], not "
                          f"an iterator ({marker.kwargs['devices']!r}), which the marker would read only once")
    try:
        values = _ini_values(config)
        # A marker's option given as None is not given: the ini setting's applies.
        values.update({k: v for k, v in marker.kwargs.items() if v is not None})
        return _options.validate(**values)
    except (TypeError, ValueError) as e:
        raise MarkerError(f"semcheck: {where}: {e}") from None


def _marker(item: pytest.Item | pytest.Function) -> pytest.Mark | None:
    """The semcheck marker of a test: the closest one (the function's over its class's over
    its module's); :class:`MarkerError` when the function itself has several."""
    own = [m for m in item.own_markers if m.name == "semcheck"]
    if len(own) > 1:
        raise MarkerError(f"semcheck: {item.nodeid}: {len(own)} semcheck markers on one test (stacked, or one of them "
                          "from pytest.param(..., marks=...)); give it one, with every option in it")
    return item.get_closest_marker("semcheck")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if not _active(metafunc.config):
        return
    try:
        marker = _marker(metafunc.definition)
        if marker is None:
            return
        chosen = settings(metafunc.config, marker, metafunc.definition.nodeid)
    except MarkerError:
        return  # one item, which fails saying why (pytest_pyfunc_call)
    # One item per mesh size: the parameter is the plugin's, not the function's (it is
    # not passed to it), so it is added to the names pytest may parametrize.
    if _PARAM not in metafunc.fixturenames:
        metafunc.fixturenames.append(_PARAM)
    # Each item's size, with every size of the marker it was split by: a closer marker
    # pytest sees only later (pytest.param's, a hook's) may name others (pytest_pyfunc_call).
    split = tuple(chosen.devices)
    metafunc.parametrize(_PARAM, [(n, split) for n in split], ids=[f"N{n}" for n in split])


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    if not _active(pyfuncitem.config) or pyfuncitem.get_closest_marker("semcheck") is None:
        return None
    from . import api

    try:
        marker = cast(pytest.Mark, _marker(pyfuncitem))
        chosen = settings(pyfuncitem.config, marker, pyfuncitem.nodeid)
    except MarkerError as e:
        problem: str | None = str(e)
    else:
        problem = None
    if problem is not None:  # failed outside the handler: pytest shows no chained exception
        pytest.fail(problem, pytrace=False)
    # The mesh size of this item; all of them in one item when the marker came after pytest
    # parametrized the test (from pytest.param(..., marks=...), or a hook's add_marker),
    # and in the first of the items a farther marker split it into when that later marker
    # is closer (the others are skipped, saying which item checks them).
    callspec = getattr(pyfuncitem, "callspec", None)
    params = callspec.params if callspec is not None else {}
    devices = list(chosen.devices)
    if _PARAM in params:
        n, split = cast(tuple[int, tuple[int, ...]], params[_PARAM])
        if split == chosen.devices:
            devices = [n]
        elif n != split[0]:
            first = pyfuncitem.name.replace(f"N{n}", f"N{split[0]}", 1)
            pytest.skip(f"semcheck: the closest semcheck marker names N = {', '.join(map(str, chosen.devices))}, "
                        f"which {first} checks")
    kwargs = _arguments(pyfuncitem)
    # A method as pytest calls it: bound to this item's instance of its class (a copy of it,
    # with what setup_method set, is what the child calls it on).
    target = pyfuncitem.obj
    fn = getattr(target, "__func__", target)
    error = None
    try:
        verdicts = api._check(target, (), kwargs, devices, chosen.kernel, chosen.expect, chosen.repeat, chosen.dma_order,
                              chosen.dma_landing, chosen.max_seconds, chosen.max_memory_mib, False, ())
    except api.SemcheckError as e:
        error = e
    if error is not None:
        _outcome(error.script_error)
        pytest.fail(f"semcheck could not check {pyfuncitem.name}: {error}", pytrace=False)
    for v in verdicts:  # a pytest.skip after the kernels: skipped still
        doc = v._source[0] if v._source else {}
        _outcome((doc.get("script") or {}).get("error"))
    code = fn.__code__
    at = (code.co_filename, code.co_firstlineno)
    api.warn_if_partial(verdicts, at=at)
    if not verdicts:
        pytest.fail(f"semcheck: {pyfuncitem.name} called no Pallas kernel that communicates", pytrace=False)
    bad = [v for v in verdicts if v.verdict != "proved"]
    if bad:
        schedule = pyfuncitem.config.getoption("semcheck_schedule")
        pages = pyfuncitem.config.getoption("semcheck_html")
        text = [v.describe(schedule) + (_page(v, pyfuncitem, pages) if pages else "") for v in bad]
        pytest.fail("\n\n".join(text), pytrace=False)
    api.warn_if_vacuous(verdicts, at=at)
    return True


def _outcome(error: dict | None) -> None:
    """Skips (or xfails) the item when the test's body skipped (``pytest.skip``,
    ``pytest.importorskip``, ``raise unittest.SkipTest``) or called ``pytest.xfail`` while it
    was traced: the script error it raised there (``error``, the document's record, whose
    ``test_outcome`` says so)."""
    if not isinstance(error, dict) or error.get("construct") != "script error":
        return
    reason = str(error.get("message") or "").partition(":")[2].strip()
    if error.get("test_outcome") == "xfailed":
        pytest.xfail(reason)
    if error.get("test_outcome") == "skipped":
        skip = pytest.skip.Exception(reason)
        skip._use_item_location = True  # reported at the test, as pytest does for a fixture's skip
        raise skip


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
    """The arguments to call a marked test with: its ``parametrize`` values (those pytest
    passes: not a parameter with a default that is not parametrized, nor ``*args`` and
    ``**kwargs``). A fixture cannot cross into the child process, so one is a usage error,
    an indirectly parametrized argument (a fixture's value) included."""
    callspec = getattr(item, "callspec", None)
    params = {k: v for k, v in (callspec.params if callspec is not None else {}).items() if k != _PARAM}
    wanted = [name for name, p in inspect.signature(item.obj).parameters.items()
              if name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
              and (p.default is p.empty or name in params)]
    # An indirect parameter reaches the test as its fixture's value, not as itself.
    funcargs = getattr(item, "funcargs", {})
    fixtures = [p for p in wanted if p not in params or (p in funcargs and funcargs[p] is not params[p])]
    if fixtures:
        pytest.fail(f"semcheck: {item.name} takes the fixture(s) {', '.join(fixtures)}; a test checked by semcheck runs "
                    "in a fresh process with N devices and can take only @pytest.mark.parametrize arguments "
                    "(not indirect ones)", pytrace=False)
    return {k: params[k] for k in wanted}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # pytest runs a unittest.TestCase's method through unittest, not pytest_pyfunc_call:
    # the marker cannot take its place there, and is not left to be ignored.
    cls = getattr(item, "cls", None)
    if (_active(item.config) and inspect.isclass(cls) and issubclass(cls, unittest.TestCase)
            and item.get_closest_marker("semcheck") is not None):
        pytest.fail(f"semcheck: {item.nodeid} is a method of a unittest.TestCase, which pytest runs through unittest: "
                    "semcheck cannot check it instead of running it; make it a method of a plain class, or a "
                    "function", pytrace=False)


def pytest_sessionfinish(session: pytest.Session) -> None:
    # The export server the marked tests shared (one per pytest process, so one per xdist
    # worker) ends with the session.
    if "semcheck.api" in sys.modules:
        sys.modules["semcheck.api"].close_session()


def pytest_report_header(config: pytest.Config) -> str | list[str] | None:
    if not _active(config):
        return "semcheck: off (marked tests run as ordinary tests)"
    from ._binary import BinaryNotFound, find_binary

    try:
        binary = find_binary()
    except BinaryNotFound as e:
        return f"semcheck: {e}"
    import importlib.metadata

    try:
        version: str | None = importlib.metadata.version("jax")
    except importlib.metadata.PackageNotFoundError:
        version = None
    jax = f"jax {version}" if version is not None else "no jax installed"
    line = f"semcheck: checking marked tests with {binary}, tracing them with {sys.executable} ({jax})"
    if version is not None and _jaxrange.supports(version):
        return line
    # Said first: every marked test would fail saying so, one by one.
    which = (f"jax {version} in {sys.executable} is not supported" if version is not None
             else f"{sys.executable} has no jax installed")
    return [f"semcheck: WARNING: {which} (semcheck traces kernels with JAX {_jaxrange.supported_range()}), so "
            f"every marked test will fail: install a supported JAX there (`{sys.executable} -m pip install "
            f"'{_jaxrange.pip_requirement()}'`)", line]
