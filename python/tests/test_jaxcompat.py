"""The front end and the JAX it runs under: the supported range (a JAX outside it is
refused, saying how to get a supported one), param layouts it does not know (an
unsupported construct naming the JAX version and the user's line: never a traceback,
never a different reading), readings decided by the equations rather than the version
number, and failures of its own code (semcheck's `internal error`,
never the script's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import HERE, JAX_VERSION, KERNELS, SEEDS
from helpers import line_of

PACKAGE_ROOT = os.path.dirname(HERE)
PPERMUTE = os.path.join(SEEDS, "ppermute.py")


def run_child(code: str) -> subprocess.CompletedProcess:
    """Runs Python ``code`` in a child process of this interpreter, the package importable."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env)


def export_patched(patch: str, path: str, tmp_path, devices: int = 2) -> tuple[int, dict]:
    """Exports ``path`` in a child process after running ``patch`` (source that fakes
    something through the front end's modules, JAX's device count already set); the
    exit status and the document."""
    out = os.path.join(tmp_path, "doc.json")
    proc = run_child(f"""
        import sys
        from semcheck.frontend.export import configure
        configure({devices})
        {textwrap.indent(textwrap.dedent(patch), " " * 8).strip()}
        from semcheck.frontend.__main__ import main
        sys.exit(main(["export", {path!r}, "--devices", "{devices}", "--no-lower", "--out", {out!r}]))
    """)
    assert os.path.exists(out), proc.stderr[-3000:]
    with open(out) as f:
        return proc.returncode, json.load(f)


def test_the_supported_range_is_read_by_release():
    proc = run_child("""
        import json
        from semcheck.frontend import jaxcompat as c
        versions = ["0.7.2", "0.8.0", "0.8.1", "0.8.3", "0.9.0.1", "0.9.2", "0.10.2", "0.10.9.dev20260101", "0.11.0",
                    "0.12.0.1", "0.13.0", "1.0.0"]
        print(json.dumps([[v, c.supports(v)] for v in versions] + [c.supported_range(), c.pip_requirement()]))
    """)
    assert proc.returncode == 0, proc.stderr
    *answers, text, pip = json.loads(proc.stdout)
    assert answers == [["0.7.2", False], ["0.8.0", False], ["0.8.1", True], ["0.8.3", True], ["0.9.0.1", True],
                       ["0.9.2", True], ["0.10.2", True],
                       ["0.10.9.dev20260101", True], ["0.11.0", True], ["0.12.0.1", True], ["0.13.0", False],
                       ["1.0.0", False]]
    assert (text, pip) == ("0.8.1 to 0.12.x", "jax>=0.8.1,<0.13")


def test_the_range_is_known_without_importing_jax():
    # The pytest plugin's header reads the range before anything traces.
    proc = run_child("""
        import sys
        from semcheck import _jaxrange
        print(_jaxrange.supports("0.12.1"), _jaxrange.supports("0.13.0"), "jax" in sys.modules)
    """)
    assert (proc.returncode, proc.stdout.split()) == (0, ["True", "False", "False"]), proc.stderr


@pytest.mark.parametrize("fake", ["0.7.2", "0.8.0", "0.13.0", "0.14.1"])
def test_a_jax_outside_the_range_is_refused_with_the_two_ways_out(tmp_path, fake):
    status, doc = export_patched(f"""
        from semcheck.frontend import jaxcompat
        jaxcompat.jax_version = lambda: {fake!r}
    """, PPERMUTE, tmp_path)
    assert status == 2
    (err,) = doc["errors"]
    assert err["construct"] == "unsupported jax" and err["loc"] is None
    message = err["message"]
    assert f"jax {fake}" in message and "0.8.1 to 0.12.x" in message
    assert f"{sys.executable} -m pip install 'jax>=0.8.1,<0.13'" in message
    assert "SEMCHECK_PYTHON=managed" in message
    # Nothing was read: the script did not run.
    assert doc["kernels"] == [] and doc["script"]["status"] == "raised"
    assert doc["producer"]["jax"] == JAX_VERSION


def test_a_function_s_export_under_a_jax_outside_the_range_names_the_ways_out_that_apply_to_it():
    # The API and the marker trace the function in the caller's interpreter: the managed
    # environment is a way out only through `semcheck check FILE`.
    from semcheck.frontend import jaxcompat

    message = jaxcompat.unsupported_jax_error("0.7.2", function="test_shift")["message"]
    assert "has jax 0.7.2" in message and "trace `test_shift` with the interpreter that calls them" in message
    assert f"{sys.executable} -m pip install 'jax>=0.8.1,<0.13'" in message
    assert "check the kernel's script with `semcheck check FILE`" in message, message


def test_a_param_layout_it_does_not_know_is_an_unsupported_construct_at_the_user_s_line(tmp_path):
    # As if this JAX's dma_start had a param semcheck never saw.
    status, doc = export_patched("""
        from semcheck.frontend import jaxcompat
        jaxcompat.PARAMS["dma_start"] = tuple(known | {"ordering"} for known in jaxcompat.PARAMS["dma_start"])
    """, PPERMUTE, tmp_path)
    assert status == 0 and doc["errors"] == []
    (k,) = doc["kernels"]
    assert k["status"] == "unsupported"
    (err,) = k["errors"]
    assert err["construct"] == "dma_start" and "traceback" not in err
    assert f"under jax {JAX_VERSION}" in err["message"] and "ordering" in err["message"]
    assert (err["loc"]["file"], err["loc"]["line"]) == (PPERMUTE, line_of(PPERMUTE, "dma.start()"))


def test_the_reading_follows_the_equations_not_the_version_number(tmp_path):
    # Patch releases changed layouts within a minor line (0.10.0 and 0.10.1 stage
    # shard_map, run_scoped and DMAs as 0.9 does): what the walker reads is decided by the
    # equation it reads (its params, its operand tree, its primitive), so another version
    # number with the same staging reads every kernel alike.
    path = os.path.join(KERNELS, "loops.py")
    _, plain = export_patched("""
        from semcheck.frontend import jaxcompat
        jaxcompat.jax_version = jaxcompat.jax_version
    """, path, tmp_path)
    # Another release on this side of 0.9.1, where the staging of kernel bodies changed.
    late = tuple(int(x) for x in JAX_VERSION.split(".")[:3]) >= (0, 9, 1)
    other = [v for v in (("0.9.1", "0.10.2") if late else ("0.8.3", "0.9.0")) if v != JAX_VERSION][0]
    _, faked = export_patched(f"""
        from semcheck.frontend import jaxcompat
        jaxcompat.jax_version = lambda: {other!r}
    """, path, tmp_path)
    assert plain["kernels"] and plain["kernels"][0]["status"] == "ok"

    def untimed(kernels: list) -> list:
        return [{k: v for k, v in kernel.items() if not k.endswith("_seconds")} for kernel in kernels]

    assert untimed(faked["kernels"]) == untimed(plain["kernels"])


def test_a_dma_operand_tree_it_does_not_know_is_an_unsupported_construct_at_each_line(tmp_path):
    # As if this JAX's DMA descriptors held seven entries: neither layout the front end reads.
    path = os.path.join(KERNELS, "loops.py")
    status, doc = export_patched("""
        from semcheck.frontend import jaxcompat
        parts = jaxcompat._dma_parts
        jaxcompat._dma_parts = lambda tree, operands: (*parts(tree, operands), None, None)[:7]
    """, path, tmp_path)
    assert status == 0 and doc["errors"] == []
    (k,) = doc["kernels"]
    assert k["status"] == "unsupported"
    starts = {line_of(path, "d.start()", n) for n in (0, 1)}
    seen = set()
    for err in k["errors"]:
        assert err["construct"] in ("dma_start", "dma_wait"), err
        assert f"under jax {JAX_VERSION}" in err["message"] and "7 entries" in err["message"], err
        assert "traceback" not in err and err["loc"]["file"] == path
        seen.add((err["construct"], err["loc"]["line"]))
    # Each start is one error at its line; no statement is read some other way.
    assert {line for c, line in seen if c == "dma_start"} == starts
    assert "body" not in k


TWO_KERNELS = """
import sys
sys.path.insert(0, {kernels!r})
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def ring(x_ref, o_ref, send, recv):
    right = lax.rem(lax.axis_index("x") + 1, N)  # ring
    d = remote(x_ref, o_ref, send, recv, (right,))
    d.start()
    d.wait()


def local(x_ref, o_ref, sem):
    pltpu.async_copy(x_ref, o_ref, sem).wait()


call(ring, scratch=[pltpu.SemaphoreType.DMA] * 2)
try:
    call(local, scratch=[pltpu.SemaphoreType.DMA])  # local
except Exception:
    print("the script took semcheck's failure for its own")
"""


def test_a_failure_of_the_walker_is_semcheck_s_and_the_other_kernels_are_still_read(tmp_path):
    script = tmp_path / "two.py"
    script.write_text(TWO_KERNELS.format(kernels=KERNELS))
    status, doc = export_patched("""
        from semcheck.frontend.walker import KernelWalker
        def broken(self, eqn, env):
            raise ZeroDivisionError("a bug in the walker")
        KernelWalker.p_axis_index = broken
    """, str(script), tmp_path)
    assert status == 0 and doc["errors"] == []
    ring, local = doc["kernels"]
    assert local["status"] == "ok"
    assert ring["status"] == "unsupported"
    (err,) = ring["errors"]
    assert err["construct"] == "internal error"
    assert err["message"].startswith(f"semcheck's front end failed while reading kernel ring under jax {JAX_VERSION} "
                                     "(a semcheck bug; please report it with the traceback below)")
    assert "ZeroDivisionError: a bug in the walker" in err["message"]
    assert "in broken" in err["traceback"] and "walker.py" in err["traceback"]
    assert (err["loc"]["file"], err["loc"]["line"]) == (str(script), line_of(str(script), "# ring"))


def test_a_failure_of_the_capture_is_semcheck_s_not_the_script_s(tmp_path):
    script = tmp_path / "two.py"
    script.write_text(TWO_KERNELS.format(kernels=KERNELS))
    status, doc = export_patched("""
        from semcheck.frontend.capture import Capture
        record = Capture.record
        def broken(self, found, *args):
            if self.computations > 1:
                raise RuntimeError("a bug in the capture")
            return record(self, found, *args)
        Capture.record = broken
    """, str(script), tmp_path)
    assert status == 2
    (err,) = doc["errors"]
    assert err["construct"] == "internal error", err
    assert err["message"].startswith("semcheck's front end failed while capturing the kernels of a computation the "
                                     f"script runs under jax {JAX_VERSION} (a semcheck bug")
    assert "RuntimeError: a bug in the capture" in err["message"] and "in broken" in err["traceback"]
    # At the script's call that led to it (through the harness), and the script's own
    # `except Exception` did not take it for its own error.
    where = [err["loc"], *err["loc"]["stack"]]
    assert (str(script), line_of(str(script), "# local")) in [(f["file"], f["line"]) for f in where]
    assert doc["script"]["status"] == "raised"
    # The kernel captured before the failure is still read.
    assert [k["name"] for k in doc["kernels"]] == ["ring"]


def test_a_primitive_it_does_not_read_is_named_with_the_jax_version_and_line(tmp_path):
    # As if semaphore_read were a primitive semcheck had never seen (one a newer JAX adds).
    path = os.path.join(KERNELS, "unsupported", "semaphore_read.py")
    status, doc = export_patched("""
        from semcheck.frontend.walker import KernelWalker
        del KernelWalker.p_semaphore_read
    """, path, tmp_path)
    assert status == 0 and doc["errors"] == []
    (k,) = doc["kernels"]
    (err,) = [e for e in k["errors"] if e["construct"] == "semaphore_read"]
    assert err["message"] == ("primitive `semaphore_read` on a Ref is not supported (not one semcheck's front end "
                              f"reads, under jax {JAX_VERSION})")
    assert (err["loc"]["file"], err["loc"]["line"]) == (path, line_of(path, "pl.semaphore_read(sem)"))


def test_the_compilation_cache_keeps_the_script_s_executables_and_changes_no_document(tmp_path):
    """With ``SEMCHECK_XLA_CACHE`` the script's own CPU computations are kept compiled on
    disk; a second export loads them, and the documents are the same (timings apart)."""
    cache = tmp_path / "xla"
    docs = []
    for _ in range(2):
        out = tmp_path / "doc.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")]),
               "SEMCHECK_XLA_CACHE": str(cache)}
        proc = subprocess.run([sys.executable, "-m", "semcheck.frontend", "export", PPERMUTE, "--devices", "2",
                               "--out", str(out)], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        assert "persistent compilation cache" not in proc.stderr, proc.stderr
        docs.append(_timeless(json.loads(out.read_text())))
        assert any(cache.iterdir()), "nothing was cached"
    assert docs[0] == docs[1]


def _timeless(obj):
    if isinstance(obj, dict):
        return {k: _timeless(v) for k, v in obj.items() if k not in ("seconds", "export_seconds")}
    if isinstance(obj, list):
        return [_timeless(v) for v in obj]
    return obj
