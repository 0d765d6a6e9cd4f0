"""The options of a check (``semcheck._options``), one set of rules for the API and the
pytest marker: a wrong one is refused before anything is traced."""

from __future__ import annotations

import json
import math
import os
import pathlib
import re
import shutil
import subprocess

import pytest

import semcheck as sp
from semcheck import _options


@pytest.fixture()
def nothing_runs(monkeypatch):
    """Fails the test if an export starts (the options must be refused first)."""
    def export(*args, **kwargs):
        raise AssertionError("an export started")

    monkeypatch.setattr(sp.api, "export", export)


def module_level():
    """A function the API could export (it never does here)."""


BAD = [
    # (options, the exception, what it says)
    (dict(devices="16"), TypeError, "devices must be a mesh size or a list of them, like 2 or [2, 3], not the string '16'"),
    (dict(devices="2,3"), TypeError, "not the string '2,3'"),
    (dict(devices=[0]), ValueError, "devices must be mesh sizes of 1 device or more, not 0"),
    (dict(devices=[-2]), ValueError, "not -2"),
    (dict(devices=[2, 4097]), ValueError, "devices must be mesh sizes of at most 4096 devices (semcheck's largest mesh), "
                                          "not 4097"),
    (dict(devices=None), TypeError, "not None"),
    (dict(devices=2.5), TypeError, "not 2.5"),
    (dict(devices=[2.7]), TypeError, "2.7 is a float"),
    (dict(devices=[2.0]), TypeError, "2.0 is a float"),
    (dict(devices=True), TypeError, "not True"),
    (dict(devices=[2, True]), TypeError, "True is a bool"),
    (dict(devices=["2"]), TypeError, "'2' is a str"),
    (dict(devices=[]), ValueError, "devices is empty"),
    (dict(devices={2: "a"}), TypeError, "not {2: 'a'}"),
    (dict(repeat=65), ValueError, "repeat must be at most 64, not 65"),
    (dict(max_memory_mib=2 ** 70), ValueError, "max_memory_mib must be at most 16777216"),
    (dict(max_seconds="10"), TypeError, "max_seconds must be a number of seconds, not '10'"),
    (dict(max_seconds=math.nan), ValueError, "max_seconds must be a finite number of seconds above 0, not nan"),
    (dict(max_seconds=math.inf), ValueError, "not inf"),
    (dict(max_seconds=0), ValueError, "not 0"),
    (dict(max_seconds=-1), ValueError, "not -1"),
    (dict(max_seconds=True), TypeError, "not True"),
    (dict(repeat=0), ValueError, "repeat must be 1 or more, not 0"),
    (dict(repeat=2.9), TypeError, "repeat must be a whole number, not 2.9"),
    (dict(repeat=True), TypeError, "repeat must be a whole number, not True"),
    (dict(repeat="two"), TypeError, "not 'two'"),
    (dict(max_memory_mib=-5), ValueError, "max_memory_mib must be 1 or more, not -5"),
    (dict(max_memory_mib=0), ValueError, "not 0"),
    (dict(max_memory_mib="8G"), TypeError, "max_memory_mib must be a whole number, not '8G'"),
    (dict(dma_order="fifo"), ValueError, "dma_order must be one of any, pair-fifo, not 'fifo'"),
    (dict(dma_landing=3), ValueError, "dma_landing must be one of whole, cells, not 3"),
    (dict(kernel=""), ValueError, "kernel must be a name, not an empty string"),
    (dict(kernel=3), TypeError, "kernel must be a string, not 3"),
    (dict(expect=""), ValueError, "expect must be a name"),
]


@pytest.mark.parametrize("options, error, says", BAD, ids=[repr(o) for o, _, _ in BAD])
def test_a_wrong_option_is_one_clear_error_before_anything_runs(nothing_runs, tmp_path, options, error, says):
    options = {"devices": 2, **options}
    script = tmp_path / "script.py"
    script.write_text("")
    for call in (lambda: sp.check(module_level, **options), lambda: sp.check_file(str(script), **options),
                 lambda: sp.assert_proved(module_level, **options)):
        with pytest.raises(error) as e:
            call()
        assert says in str(e.value), str(e.value)
    # The rules themselves, as the marker applies them.
    with pytest.raises(error):
        _options.validate(**options)


def test_one_exports_mesh_size_is_checked_as_checks_are(nothing_runs):
    for devices, error, says in ((4097, ValueError, "at most 4096 devices"), (0, ValueError, "1 device or more"),
                                 ([2], TypeError, "a whole number of devices, like 2"),
                                 (None, TypeError, "not None")):
        with pytest.raises(error, match=says):
            sp.export(module_level, devices=devices)


def test_mesh_sizes_are_counted_once_in_the_order_given():
    import numpy as np

    assert _options.validate(devices=(3, 2, 3, 2)).devices == (3, 2)
    assert _options.validate(devices=4).devices == (4,)
    assert _options.validate(devices=range(1, 3)).devices == (1, 2)
    assert _options.validate(devices=[np.int64(2)]).devices == (2,)  # an integer type of NumPy's
    assert _options.validate(devices=2, max_seconds=1, max_memory_mib=100).max_seconds == 1.0


def test_script_args_are_a_list_of_arguments():
    assert _options.script_args(None) == ()
    assert _options.script_args(["--size", 1024, pathlib.Path("a/b")]) == ("--size", "1024", "a/b")
    for bad, says in (("--size 1024", "must be a list of arguments"), (b"ab", "must be a list of arguments"),
                      ([None], "not None in [None]"), ([True], "not True")):
        with pytest.raises(TypeError, match=re.escape(says)):
            _options.script_args(bad)


def test_the_ini_settings_text_is_read_into_the_options():
    assert _options.ini_devices("2 3") == [2, 3]
    assert _options.ini_devices(["2 3"]) == [2, 3]  # pytest.ini's `semcheck_devices = "2 3"`
    assert _options.ini_devices(["2", "3"]) == [2, 3]
    assert _options.ini_devices([2, 3]) == [2, 3]  # a TOML list in [tool.pytest.ini_options]
    with pytest.raises(ValueError, match="semcheck_devices: '2,3' is not a mesh size"):
        _options.ini_devices("2,3")
    assert _options.ini_number("300", "semcheck_max_seconds", float) == 300.0
    assert math.isnan(_options.ini_number("nan", "semcheck_max_seconds", float))  # refused by validate
    assert _options.ini_number("", "semcheck_repeat", int) is None
    with pytest.raises(ValueError, match="semcheck_repeat must be a whole number, not 'two'"):
        _options.ini_number("two", "semcheck_repeat", int)
    with pytest.raises(ValueError, match="semcheck_max_seconds must be a finite number"):
        _options.validate(devices=[2], max_seconds=float("nan"), prefix="semcheck_")


@pytest.mark.skipif(not (os.environ.get("SEMCHECK_BIN") or shutil.which("semcheck")),
                    reason="the semcheck binary is not available (SEMCHECK_BIN)")
def test_the_hardware_choices_are_the_binarys():
    out = subprocess.run([sp.api.semcheck_binary(), "semantics", "--json"], capture_output=True, text=True,
                         check=True).stdout
    choices = {c["name"]: c for c in json.loads(out)["choices"]}
    for name, ours in (("dma-order", _options.DMA_ORDERS), ("dma-landing", _options.DMA_LANDINGS)):
        theirs = choices[name]
        assert tuple(o[0] for o in theirs["options"]) == ours, theirs["options"]
        assert theirs["default"] == ours[0]


@pytest.mark.skipif(not (os.environ.get("SEMCHECK_BIN") or shutil.which("semcheck")),
                    reason="the semcheck binary is not available (SEMCHECK_BIN)")
def test_the_largest_mesh_is_the_binarys():
    for flag, most in (("--repeat", _options.MAX_REPEAT), ("--max-memory-mib", _options.MAX_MEMORY_MIB)):
        err = subprocess.run([sp.api.semcheck_binary(), "check", "psum", flag, str(most + 1)], capture_output=True,
                             text=True).stderr
        assert f"is not in 1..={most}" in err, err
    too_many = str(_options.MAX_DEVICES + 1)
    err = subprocess.run([sp.api.semcheck_binary(), "check", "psum", "--devices", too_many], capture_output=True,
                         text=True).stderr
    assert f"`{too_many}` is not a number of devices in 1..={_options.MAX_DEVICES}" in err, err


def test_a_path_that_is_not_a_kernel_file_is_said_so(nothing_runs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(sp.SemcheckError, match=r"^no such file: nope\.py$"):
        sp.check_file("nope.py", devices=2)
    with pytest.raises(sp.SemcheckError, match=r"^\. is not a kernel file \(a Python script that calls its kernels\): "
                                               r"it is a directory$"):
        sp.check_file(".", devices=2)
    with pytest.raises(sp.SemcheckError, match="no such file: nope.py"):
        sp.assert_proved("nope.py", devices=2)
    with pytest.raises(TypeError, match="semcheck.check_file checks a kernel file, not <function module_level"):
        sp.check_file(module_level, devices=2)


async def a_coroutine():
    """An ``async def`` function: calling it runs nothing of its body."""


def test_a_coroutine_function_is_refused_as_such(nothing_runs):
    with pytest.raises(sp.SemcheckError, match=r"a_coroutine is an `async def` function, and coroutines are not "
                                               r"supported"):
        sp.check(a_coroutine, devices=2)


def test_is_exporting_is_false_where_nothing_is_traced(monkeypatch):
    monkeypatch.delenv(sp.api.CHILD_MARKER, raising=False)
    monkeypatch.delenv(sp.api.EXPORTING_MARKER, raising=False)
    assert sp.is_exporting() is False
    monkeypatch.setenv(sp.api.EXPORTING_MARKER, "1")  # as `semcheck check` runs a script
    assert sp.is_exporting() is True
