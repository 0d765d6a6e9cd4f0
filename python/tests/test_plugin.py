"""The pytest plugin, run as a user runs it: pytest in a project whose tests carry
``@pytest.mark.semcheck`` (``tests/wheel/project``: a correct ring shift at N = 2, 3 and
one that reads its buffer before the copy has landed, at N = 2)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from typing import Sequence

import pytest

from conftest import REPO
from semcheck._binary import find_binary

PROJECT = os.path.join(REPO, "tests", "wheel", "project")


def _installed() -> bool:
    """Whether the plugin is installed (the wheel's ``pytest11`` entry point)."""
    return any(e.name == "semcheck" for e in importlib.metadata.entry_points(group="pytest11"))


def pytest_in(project: str, *args: str, timeout: float = 600, path: Sequence[str] = ()) -> subprocess.CompletedProcess:
    """pytest in ``project`` with the plugin loaded: by its entry point where the wheel is
    installed, else named as the entry point names it (``path``: folders put first on
    ``PYTHONPATH``)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, os.path.join(REPO, "python")])}
    env.pop("SEMCHECK_API_CHILD", None)
    plugin = [] if _installed() else ["-p", "semcheck.pytest_plugin"]
    return subprocess.run([sys.executable, "-m", "pytest", *plugin, "-p", "no:cacheprovider", *args], cwd=project,
                          env=env, capture_output=True, text=True, timeout=timeout)


def run_marked(project, tests: str, *args: str) -> tuple[subprocess.CompletedProcess, str]:
    """pytest in ``project`` with ``tests`` as its test module; the run and its output."""
    (project / "test_kernels.py").write_text(tests)
    proc = pytest_in(str(project), *args)
    return proc, proc.stdout + proc.stderr


@pytest.fixture()
def project(tmp_path):
    dst = tmp_path / "project"
    shutil.copytree(PROJECT, dst)
    return dst


def test_marked_tests_are_checked_one_item_per_mesh_size(project):
    proc = pytest_in(str(project), "-q")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 failed, 2 passed" in out, out
    assert "FAILED test_kernels.py::test_shift_early[N2]" in out, out
    # The failure names the line that broke the rule, the rule, and what it requires.
    assert "shift_kernel at N = 2: violation (race) at kernels.py:22" in out, out
    assert "requires: nothing" in out, out
    # The explanation: the DMA in flight and the read, each at its line; the barrier
    # handshake summarised; the whole schedule only when asked for.
    assert "why (2 of 7 events;" in out, out
    assert "every device passed the entry barrier" in out, out
    assert "[dma-in-flight] its copy writes d0 buf" in out and "kernels.py:20 copy.start()" in out, out
    assert "[read] reads d0 buf while the DMA of event 5 is still writing it" in out, out
    assert "<- breaks the rule" not in out, out
    proc = pytest_in(str(project), "-q", "--semcheck-schedule", "-k", "early")
    out = proc.stdout + proc.stderr
    # The explanation's heading says the whole schedule follows, not to ask for it.
    assert "why (2 of 7 events; the whole schedule below):" in out, out
    assert "KernelVerdict.trace, or --semcheck-schedule" not in out, out
    assert "  schedule (7 events):" in out and "<- breaks the rule" in out, out


def test_a_violation_is_drawn_as_a_page_when_asked(project):
    # Only the failing item gets a page, named after it, in the folder asked for (made).
    proc = pytest_in(str(project), "-q", "--semcheck-html", "pages")
    out = proc.stdout + proc.stderr
    assert "1 failed, 2 passed" in out, out
    page = project / "pages" / "test_kernels.py-test_shift_early-N2-shift_kernel.html"
    assert "drawn as a page: pages/test_kernels.py-test_shift_early-N2-shift_kernel.html" in out, out
    assert sorted(p.name for p in (project / "pages").iterdir()) == [page.name]
    text = page.read_text()
    # The page of this counterexample, naming the test's file, not a temporary document.
    assert text.startswith("<!DOCTYPE html>") and "doc.json" not in text, text[:300]
    assert f"<title>semcheck: {project / 'test_kernels.py'}:shift_kernel N=2</title>" in text, text[:300]
    assert "kernels.py:22" in text and "kernels.py:20" in text
    # Without the option, nothing is written.
    shutil.rmtree(project / "pages")
    pytest_in(str(project), "-q")
    assert not (project / "pages").exists()


def test_items_can_be_selected_and_listed_like_any_test(project):
    proc = pytest_in(str(project), "--collect-only", "-q")
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    assert ids == ["test_kernels.py::test_shift[N2]", "test_kernels.py::test_shift[N3]",
                   "test_kernels.py::test_shift_early[N2]"], proc.stdout
    proc = pytest_in(str(project), "-q", "-k", "test_shift and N3")
    assert proc.returncode == 0 and "1 passed, 2 deselected" in proc.stdout, proc.stdout + proc.stderr
    # Off: the marked tests are ordinary tests again (one item each, run as written).
    proc = pytest_in(str(project), "--collect-only", "-q", "--semcheck=off")
    assert [line for line in proc.stdout.splitlines() if "::" in line] == [
        "test_kernels.py::test_shift", "test_kernels.py::test_shift_early"], proc.stdout


def test_options_come_from_the_marker_over_the_ini_settings(project):
    # A bad ini value is a usage error naming the setting, before anything runs.
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\nsemcheck_dma_order = "sideways"\n')
    proc = pytest_in(str(project), "-q")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "dma_order must be one of any, pair-fifo, not 'sideways'" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    # The ini's mesh sizes for a bare marker; a marker's own devices and budget win.
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\nsemcheck_devices = "3"\n')
    _, out = run_marked(
        project,
        "import pytest\nimport kernels\n\n"
        "@pytest.mark.semcheck\ndef test_default_sizes():\n    kernels.run()\n\n"
        "@pytest.mark.semcheck(devices=[2], max_seconds=0.01)\ndef test_tiny_budget():\n    kernels.run()\n\n"
        "@pytest.mark.semcheck(devices=[2], sideways=True)\ndef test_unknown_option():\n    kernels.run()\n", "-v")
    assert f"tracing them with {sys.executable} (jax " in out, out  # the header
    assert "test_kernels.py::test_default_sizes[N3] PASSED" in out, out
    assert "test_kernels.py::test_tiny_budget[N2] FAILED" in out, out
    assert "export: stopped by the time budget of 0.01 s while tracing test_tiny_budget" in out, out
    # A marker that does not say what to check is one failing test that says why.
    assert "test_kernels.py::test_unknown_option FAILED" in out, out
    assert "unknown semcheck marker option(s) sideways" in out, out
    assert "Traceback" not in out and "During handling of the above exception" not in out, out


def test_the_header_says_first_when_the_jax_that_traces_the_tests_is_not_supported(project, tmp_path):
    # An installed jax 0.8.0 as importlib.metadata sees it (the header reads its version
    # without importing JAX).
    fake = tmp_path / "site"
    (fake / "jax-0.8.0.dist-info").mkdir(parents=True)
    (fake / "jax-0.8.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: jax\nVersion: 0.8.0\n")
    proc = pytest_in(str(project), "--collect-only", path=[str(fake)])
    binary = find_binary()
    # Shown with pytest's header (not under -q).
    assert [line for line in proc.stdout.splitlines() if line.startswith("semcheck: ")] == [
        f"semcheck: WARNING: jax 0.8.0 in {sys.executable} is not supported (semcheck traces kernels with JAX 0.8.1 "
        f"to 0.12.x), so every marked test will fail: install a supported JAX there (`{sys.executable} -m pip "
        "install 'jax>=0.8.1,<0.13'`)",
        f"semcheck: checking marked tests with {binary}, tracing them with {sys.executable} "
        "(jax 0.8.0)"], proc.stdout
    # A supported JAX (this one): the one line.
    proc = pytest_in(str(project), "--collect-only")
    assert [line for line in proc.stdout.splitlines() if line.startswith("semcheck: ")] == [
        f"semcheck: checking marked tests with {binary}, tracing them with {sys.executable} "
        f"(jax {importlib.metadata.version('jax')})"], proc.stdout


def test_a_marked_test_that_takes_a_fixture_is_told_why_it_cannot(project):
    _, out = run_marked(
        project,
        "import pytest\nimport kernels\n\n"
        "@pytest.mark.semcheck(devices=[2])\ndef test_fixture(tmp_path):\n    kernels.run()\n\n"
        "@pytest.mark.semcheck(devices=[2])\n@pytest.mark.parametrize('early', [False])\n"
        "def test_parametrized(early):\n    kernels.run(early=early)\n", "-q")
    assert "1 failed, 1 passed" in out, out
    assert "takes the fixture(s) tmp_path" in out, out


def test_a_marked_test_that_calls_no_kernel_or_raises_is_told_so_in_its_own_terms(project):
    _, out = run_marked(
        project,
        "import pytest\n\n"
        "@pytest.mark.semcheck(devices=[2])\ndef test_nothing():\n    pass\n\n"
        "@pytest.mark.semcheck(devices=[2])\ndef test_raises():\n    raise RuntimeError('broken before the kernel')\n\n"
        "@pytest.mark.semcheck(devices=[2])\ndef test_exits():\n    import os\n    os._exit(0)\n\n"
        "@pytest.mark.semcheck(devices=[2])\ndef test_crashes():\n    import ctypes\n    ctypes.string_at(0)\n", "-q")
    assert "4 failed" in out, out
    # A test that ends its process, or is killed, says so (the server serving the next).
    assert ("could not check test_exits[N2]: the export ended (exit 0) while tracing test_exits at N = 2, before its "
            "kernels were reported") in out, out
    assert "could not check test_crashes[N2]: the export was killed by signal 11 (SIGSEGV) while tracing" in out, out
    # The function, not the temporary document the API wrote for it.
    assert "could not check test_nothing[N2]: no kernel: `test_nothing` returned without calling a Pallas kernel" in out, out
    assert "doc.json" not in out, out
    # The user's error at the user's line, the traceback from the user's first frame on.
    assert "could not check test_raises[N2]: test_kernels.py:9: script error: RuntimeError: broken before" in out, out
    traceback = out[out.index("traceback ends with"):]
    assert 'test_kernels.py", line 9, in test_raises' in traceback, out
    assert "capture.py" not in traceback and "runpy" not in traceback, out


VACUOUS = """
import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

P = jax.sharding.PartitionSpec


def kernel(x_ref, o_ref, buf, send_sem, recv_sem, *, n):
    right = lax.rem(lax.axis_index("x") + 1, n)

    def hop(i, carry):
        copy = pltpu.make_async_remote_copy(src_ref=x_ref, dst_ref=buf, send_sem=send_sem, recv_sem=recv_sem,
                                            device_id=(right,), device_id_type=pl.DeviceIdType.MESH)
        copy.start()
        copy.wait()
        return carry

    lax.fori_loop(0, n - 1, hop, 0)
    o_ref[...] = x_ref[...]


def run():
    n = jax.device_count()
    mesh = jax.make_mesh((n,), ("x",))
    call = pl.pallas_call(
        functools.partial(kernel, n=n),
        out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
        in_specs=[pl.BlockSpec(memory_space=pltpu.VMEM)],
        out_specs=pl.BlockSpec(memory_space=pltpu.VMEM),
        scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA, pltpu.SemaphoreType.DMA],
    )
    f = jax.jit(jax.shard_map(call, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False))
    x = jnp.zeros((8 * n, 128), jnp.float32)
    return f(jax.device_put(x, jax.sharding.NamedSharding(mesh, P("x"))))
"""


def test_a_proof_in_which_statements_never_ran_warns_naming_them(project):
    (project / "hops.py").write_text(VACUOUS)
    proc, out = run_marked(
        project, "import pytest\nimport hops\n\n@pytest.mark.semcheck(devices=[1, 2])\ndef test_hops():\n    hops.run()\n",
        "-q", "-rA")
    # At N = 1 the loop makes no trip: proved, with a warning naming the loop; at N = 2 it
    # runs, and nothing is said.
    assert proc.returncode == 0 and "2 passed, 1 warning" in out, out
    assert "SemcheckVacuityWarning: kernel is proved at N = 1, but these statements ran in no schedule" in out, out
    assert "hops.py:23 lax.fori_loop(0, n - 1, hop, 0)" in out, out
    assert "test_kernels.py:4: SemcheckVacuityWarning" in out, out  # at the marked test
    assert "N = 2, but" not in out, out
    # The warning's category is the package's, so pytest's own filter makes it a failure.
    proc = pytest_in(str(project), "-q", "-W", "error::semcheck.SemcheckVacuityWarning")
    out = proc.stdout + proc.stderr
    assert "1 failed, 1 passed" in out and "FAILED test_kernels.py::test_hops[N1]" in out, out


RAISES_AFTER = """
import pytest
import semcheck
import kernels


@pytest.mark.semcheck(devices=[2])
def test_checks_its_output():
    out = kernels.run()
    assert float(out.sum()) != 0, "all zeros"
    kernels.run(early=True)


@pytest.mark.semcheck(devices=[2])
def test_guards_its_check():
    out = kernels.run()
    if not semcheck.is_exporting():
        assert float(out.sum()) != 0, "all zeros"
    kernels.run(early=True)
"""


def test_a_test_that_raises_after_its_kernels_warns_that_the_later_ones_were_not_checked(project):
    proc, out = run_marked(project, RAISES_AFTER, "-q")
    # Kernel outputs are placeholders while the test is traced: the unguarded host-side
    # check raises, the racy kernel after it is never captured, and the item says so; the
    # guarded test reaches it, and fails with its race.
    assert "1 failed, 1 passed, 1 warning" in out, out
    assert "FAILED test_kernels.py::test_guards_its_check[N2]" in out, out
    assert "shift_kernel#2 at N = 2: violation (race) at kernels.py:22" in out, out
    assert ("test_kernels.py:7: SemcheckPartialCaptureWarning: `test_checks_its_output` at N = 2 raised "
            "AssertionError: all zeros") in out, out
    assert ("test_kernels.py:10, after calling shift_kernel: any kernel it would have called after that point was "
            "not captured, so not checked") in out, out
    assert "`if not semcheck.is_exporting():`" in out, out
    # The warning's category is the package's: pytest's filter makes it a failure.
    proc = pytest_in(str(project), "-q", "-W", "error::semcheck.SemcheckWarning")
    out = proc.stdout + proc.stderr
    assert "2 failed" in out and "FAILED test_kernels.py::test_checks_its_output[N2]" in out, out


OUTCOMES = """
import pytest
import semcheck
import kernels


@pytest.mark.semcheck(devices=[2])
def test_skips():
    pytest.skip("no TPU here")
    kernels.run()


@pytest.mark.semcheck(devices=[2])
def test_imports_or_skips():
    pytest.importorskip("semcheck_no_such_module")
    kernels.run()


@pytest.mark.semcheck(devices=[2])
def test_skips_after_its_kernel():
    kernels.run()
    pytest.skip("done early")


@pytest.mark.semcheck(devices=[2])
def test_xfails():
    pytest.xfail("known")


@pytest.mark.semcheck(devices=[2])
async def test_a_coroutine():
    kernels.run()


@pytest.mark.semcheck(devices=[2])
@pytest.mark.semcheck(devices=[3])
def test_stacked():
    kernels.run()


@pytest.mark.semcheck(devices=[2])
def test_nested():
    semcheck.check(kernels.run, devices=2)


@pytest.mark.semcheck(devices=[2.7])
def test_float_size():
    kernels.run()


@pytest.mark.semcheck(devices=True)
def test_bool_size():
    kernels.run()


@pytest.mark.semcheck(devices=[2], repeat=2.9)
def test_float_repeat():
    kernels.run()


@pytest.mark.semcheck(devices=[2], repeat=True)
def test_bool_repeat():
    kernels.run()


@pytest.mark.semcheck(devices=(n for n in [2]))
def test_generator():
    kernels.run()


@pytest.mark.semcheck(devices=[2])
def test_raises_skiptest():
    import unittest
    raise unittest.SkipTest("unittest's skip")


@pytest.mark.semcheck(devices=[2])
def test_raises_skip_exception():
    raise pytest.skip.Exception("raised by hand")


import unittest


class TestCaseStyle(unittest.TestCase):
    @pytest.mark.semcheck(devices=[2])
    def test_method(self):
        kernels.run()
"""


def test_skips_coroutines_stacked_markers_nested_checks_and_wrong_options_are_each_told_so(project):
    _, out = run_marked(project, OUTCOMES, "-q", "-rsx")
    assert "8 failed, 5 skipped, 1 xfailed, 1 error" in out, out
    # pytest.skip (and importorskip) skips the item, at the test, as when it runs.
    assert "SKIPPED [1] test_kernels.py:7: no TPU here" in out, out
    assert "SKIPPED [1] test_kernels.py:13: could not import 'semcheck_no_such_module'" in out, out
    assert "SKIPPED [1] test_kernels.py:19: done early" in out, out
    assert "XFAIL test_kernels.py::test_xfails[N2] - known" in out, out
    # So does a skip the test raises itself, unittest's too.
    assert "SKIPPED [1] test_kernels.py:71: unittest's skip" in out, out
    assert "SKIPPED [1] test_kernels.py:77: raised by hand" in out, out
    # A unittest.TestCase's method runs through unittest: the marker cannot take its place.
    assert ("test_kernels.py::TestCaseStyle::test_method is a method of a unittest.TestCase, which pytest runs "
            "through unittest") in out, out
    assert "script error: Skipped" not in out, out
    assert ("could not check test_a_coroutine[N2]: test_a_coroutine is an `async def` function, and coroutines are "
            "not supported") in out, out
    assert "returned without calling a Pallas kernel" not in out, out
    assert "test_kernels.py::test_stacked: 2 semcheck markers on one test" in out, out
    assert ("could not check test_nested[N2]: checks cannot nest: semcheck.check at test_kernels.py:43 was called "
            "inside the process semcheck started to trace a kernel") in out, out
    # Whole numbers only, not truncated.
    assert "test_float_size: devices must be a mesh size or a list of them, like 2 or [2, 3] (whole numbers), " \
           "not [2.7]: 2.7 is a float" in out, out
    assert "test_bool_size: devices must be a mesh size or a list of them, like 2 or [2, 3], not True" in out, out
    assert "test_float_repeat: repeat must be a whole number, not 2.9" in out, out
    assert "test_bool_repeat: repeat must be a whole number, not True" in out, out
    assert "test_generator: devices must be a mesh size or a list of them, like 2 or [2, 3], not an iterator" in out, out
    assert "Traceback" not in out and "Error: " not in out.replace("SemcheckError: ", ""), out


def test_a_method_runs_on_a_copy_of_its_items_instance_and_arguments_are_what_pytest_passes(project):
    (project / "conftest.py").write_text("import pytest\n\n\n@pytest.fixture\ndef early(request):\n"
                                         "    return request.param == 'early'\n")
    proc, out = run_marked(project, METHODS, "-q", "-rA")
    assert "4 failed, 5 passed" in out, out
    # An inherited method runs on the subclass's instance; setup_method's attributes are there.
    for passed in ("TestSafe::test_shift[N2]", "TestSetUp::test_static[N2]", "TestSetUp::test_cls[N2]",
                   "test_default_argument[N2]", "test_varargs[N2]"):
        assert f"PASSED test_kernels.py::{passed}" in out, out
    for failed in ("TestRacy.test_shift[N2]", "TestSetUp.test_set_up[N2]"):
        assert "FAILED test_kernels.py::" + failed.replace(".", "::") in out, out
        # Its section of the failures (pytest's summary line is cut short, but in CI).
        section = re.search(rf"_ {re.escape(failed)} _+\n(.*?)(?=\n_{{3,}} |\n={{3,}})", out, re.S)
        assert section and "shift_kernel at N = 2: violation (race) at kernels.py:22" in section[1], out
    # An indirect parameter is a fixture's value.
    assert "test_indirect[N2-early] takes the fixture(s) early" in out, out
    # pytest.fail is at the test's line, not pytest's.
    assert "could not check test_fails_by_hand[N2]: test_kernels.py:43: script error: Failed: by hand" in out, out


METHODS = """
import pytest
import kernels


class Base:
    early = False

    @pytest.mark.semcheck(devices=[2])
    def test_shift(self):
        kernels.run(early=self.early)


class TestSafe(Base):
    pass


class TestRacy(Base):
    early = True


class TestSetUp:
    def setup_method(self):
        self.early = True

    @pytest.mark.semcheck(devices=[2])
    def test_set_up(self):
        kernels.run(early=self.early)

    @staticmethod
    @pytest.mark.semcheck(devices=[2])
    def test_static():
        kernels.run()

    @classmethod
    @pytest.mark.semcheck(devices=[2])
    def test_cls(cls):
        kernels.run()


@pytest.mark.semcheck(devices=[2])
def test_fails_by_hand():
    pytest.fail("by hand")


@pytest.mark.semcheck(devices=[2])
@pytest.mark.parametrize("early", ["early"], indirect=True)
def test_indirect(early):
    kernels.run(early=early)


@pytest.mark.semcheck(devices=[2])
def test_default_argument(early=False):
    kernels.run(early=early)


@pytest.mark.semcheck(devices=[2])
def test_varargs(*args, **kwargs):
    kernels.run()
"""


def test_a_marker_pytest_sees_after_parametrizing_checks_every_size_in_its_one_item(project):
    # A marker of pytest.param, and one a hook adds after collection: no traceback, each
    # item checks all its sizes.
    (project / "conftest.py").write_text(
        "import pytest\n\n\ndef pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        if item.originalname == 'test_added':\n"
        "            item.add_marker(pytest.mark.semcheck(devices=[2, 3]))\n")
    proc, out = run_marked(
        project,
        "import pytest\nimport kernels\n\n"
        "@pytest.mark.parametrize('early', [pytest.param(e, marks=pytest.mark.semcheck(devices=[2, 3])) "
        "for e in (False, True)])\ndef test_param(early):\n    kernels.run(early=early)\n\n"
        "def test_added():\n    kernels.run()\n", "-v")
    assert "test_kernels.py::test_param[False] PASSED" in out, out
    assert "test_kernels.py::test_param[True] FAILED" in out, out
    assert "test_kernels.py::test_added PASSED" in out, out
    assert "shift_kernel at N = 2: violation (race)" in out and "shift_kernel at N = 3: violation (race)" in out, out
    assert "KeyError" not in out and "AttributeError" not in out and "Traceback" not in out, out


def test_a_later_marker_closer_than_the_one_that_split_the_test_checks_its_own_sizes(project):
    # The module's marker splits the test into N2 and N4 items; pytest.param's, closer,
    # names N = 3: the first item checks it, the other is skipped saying so.
    proc, out = run_marked(
        project,
        "import jax\nimport pytest\nimport kernels\n\npytestmark = pytest.mark.semcheck(devices=[2, 4])\n\n"
        "@pytest.mark.parametrize('early', [pytest.param(False, marks=pytest.mark.semcheck(devices=[3]))])\n"
        "def test_param(early):\n    assert jax.device_count() == 3, jax.device_count()\n"
        "    kernels.run(early=early)\n", "-q", "-rA")
    assert "1 passed, 1 skipped" in out, out
    assert "PASSED test_kernels.py::test_param[N2-False]" in out, out
    assert "the closest semcheck marker names N = 3, which test_param[N2-False] checks" in out, out


def test_the_ini_settings_take_a_toml_list_and_the_options_are_listed(project):
    tests = "import pytest\nimport kernels\n\n@pytest.mark.semcheck\ndef test_bare():\n    kernels.run()\n"
    # A TOML list, without pytest's warning about a list in a text setting.
    (project / "pyproject.toml").write_text("[tool.pytest.ini_options]\nsemcheck_devices = [2, 3]\n")
    proc, out = run_marked(project, tests, "--collect-only", "-q", "-W", "error::pytest.PytestRemovedIn10Warning")
    assert proc.returncode == 0, out
    assert [line for line in proc.stdout.splitlines() if "::" in line] == [
        "test_kernels.py::test_bare[N2]", "test_kernels.py::test_bare[N3]"], out
    # A setting that is no budget: a usage error before collection, naming it.
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\nsemcheck_max_seconds = "nan"\n')
    proc = pytest_in(str(project), "-q")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out
    assert "semcheck_max_seconds must be a finite number of seconds above 0, not nan" in out, out
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\nsemcheck_devices = "2,3"\n')
    proc = pytest_in(str(project), "-q")
    assert proc.returncode == 4 and "semcheck_devices: '2,3' is not a mesh size" in proc.stdout + proc.stderr
    (project / "pyproject.toml").write_text("")
    # Every option of the marker, listed.
    proc = pytest_in(str(project), "--markers")
    assert ("@pytest.mark.semcheck(devices=[2, 3], kernel=None, expect=None, dma_order=None, dma_landing=None, "
            "repeat=None, max_seconds=None, max_memory_mib=None)") in proc.stdout, proc.stdout
    # No folder for the pages: a usage error, not pages written into the current directory.
    proc = pytest_in(str(project), "-q", "--semcheck-html", "")
    assert proc.returncode == 4 and "--semcheck-html needs the folder" in proc.stdout + proc.stderr, proc.stderr
