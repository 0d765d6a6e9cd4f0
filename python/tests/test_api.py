"""The Python API: exporting a callable in a child process, and checking through the
semcheck binary (skipped when it is not available: the Rust test suite runs this file
with SEMCHECK_BIN set)."""

from __future__ import annotations

import os
import shutil
import warnings

import pytest

import semcheck as sp
from conftest import SEEDS


def run_ring(rounds: int = 1):
    """Builds its inputs for jax.device_count() devices and calls a ring shift."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    n = jax.device_count()

    def kernel(x_ref, y_ref, send_sem, recv_sem):
        for _ in range(rounds):
            d = pltpu.make_async_remote_copy(x_ref, y_ref, send_sem, recv_sem,
                                             device_id=(lax.rem(lax.axis_index("x") + 1, n),))
            d.start()
            d.wait()

    f = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                       in_specs=[pl.BlockSpec(memory_space=pl.ANY)], out_specs=pl.BlockSpec(memory_space=pl.ANY),
                       scratch_shapes=[pltpu.SemaphoreType.DMA] * 2)
    return _on_ring(f)


def _on_ring(f, *prefetch):
    """Calls `f(*prefetch, x)` under jit(shard_map) on a ring of every device, each with
    one (8, 128) block of x."""
    import jax
    import jax.numpy as jnp

    n = jax.device_count()
    mesh = jax.make_mesh((n,), ("x",))
    spec = jax.sharding.PartitionSpec(None, "x")
    x = jax.device_put(jnp.zeros((8, 128 * n)), jax.sharding.NamedSharding(mesh, spec))
    return jax.jit(jax.shard_map(lambda x: f(*prefetch, x), mesh=mesh, in_specs=spec, out_specs=spec,
                                 check_vma=False))(x)


def run_table(scale: int, shift: int):
    """Copies to the device a scalar-prefetched table the caller passes names: the
    target is `(scale * me + shift) % n` (a ring shift for scale 1, shift 1; every device
    into device 0 for 0, 0)."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    n = jax.device_count()

    def kernel(table_ref, x_ref, y_ref, send_sem, recv_sem):
        target = lax.rem(table_ref[0] * lax.axis_index("x") + table_ref[1], n)
        d = pltpu.make_async_remote_copy(x_ref, y_ref, send_sem, recv_sem, device_id=(target,))
        d.start()
        d.wait()

    f = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                       grid_spec=pltpu.PrefetchScalarGridSpec(
                           num_scalar_prefetch=1, in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                           out_specs=pl.BlockSpec(memory_space=pl.ANY),
                           scratch_shapes=[pltpu.SemaphoreType.DMA] * 2))
    return _on_ring(f, jnp.array([scale, shift], jnp.int32))


def run_ring_then_check_its_output(guarded: bool = False):
    """Calls the ring shift, checks its output on the host as a test on a TPU would (the
    placeholder outputs of an export fail that check), then calls it with two rounds (a
    race when the second round's DMA may land before the first's)."""
    out = run_ring()
    if not (guarded and sp.is_exporting()):
        assert float(out.sum()) != 0, "the ring's output is all zeros"
    run_ring(2)


def run_ring_then_assert_bare():
    """The ring shift, then a host-side check with no message (``AssertionError: ``)."""
    out = run_ring()
    assert float(out.sum()) != 0
    run_ring(2)


def check_inside():
    """A function being checked that starts a check itself."""
    sp.check(run_ring, devices=2)


def test_export_a_callable_in_a_child_process():
    doc = sp.export(run_ring, 2, devices=3)
    assert doc["devices"] == 3 and doc["errors"] == []
    (k,) = doc["kernels"]
    assert k["name"] == "kernel" and k["status"] == "ok"
    assert [s["op"] for s in k["body"]] == ["dma_start", "dma_wait", "dma_wait"] * 2
    assert k["body"][0]["loc"]["file"] == os.path.abspath(__file__)


def _timeless(doc):
    """A document without its wall-clock seconds."""
    if isinstance(doc, dict):
        return {k: _timeless(v) for k, v in doc.items() if not k.endswith("seconds")}
    if isinstance(doc, list):
        return [_timeless(v) for v in doc]
    return doc


def test_a_session_exports_through_one_server_as_processes_of_their_own_would(monkeypatch):
    from conftest import KERNELS

    mixed = os.path.join(KERNELS, "unsupported", "mixed.py")
    sp.api.close_session()
    docs = {n: sp.export(run_ring, 2, devices=n) for n in (2, 3, 4)}
    server = sp.api._session_now
    assert server is not None and server.proc.poll() is None
    # A file too, by the same server, one kernel of it when one is named.
    one = sp.export(mixed, devices=2, kernel="shift")
    assert [k["name"] for k in one["kernels"]] == ["shift"], one["kernels"]
    assert sp.api._session_now is server
    # The same documents as a process of its own for each export writes (but for the
    # lowering cross-check the process runs on a file's kernels).
    monkeypatch.setenv("SEMCHECK_EXPORT", "process")
    for n, doc in docs.items():
        assert _timeless(doc) == _timeless(sp.export(run_ring, 2, devices=n)), n
    alone = sp.export(mixed, devices=2, kernel="shift")
    assert [k["name"] for k in alone["kernels"]] == ["shift"], alone["kernels"]
    monkeypatch.delenv("SEMCHECK_EXPORT")
    # Another value of a variable read at start-up is another server (a process of its own
    # would see it); closing the session ends it and removes its files.
    monkeypatch.setenv("SEMCHECK_TEST_SETTING", "1")
    sp.export(run_ring, devices=2)
    assert sp.api._session_now is not server and server.proc.poll() is not None
    assert not os.path.exists(server.folder)
    latest = sp.api._session_now
    sp.api.close_session()
    assert sp.api._session_now is None and latest.proc.poll() is not None and not os.path.exists(latest.folder)


@pytest.fixture(params=["session", "process"])
def export_mode(request, monkeypatch):
    """Each export through the session's server, or in a process of its own."""
    if request.param == "process":
        monkeypatch.setenv("SEMCHECK_EXPORT", "process")
    yield request.param
    sp.api.close_session()


def test_importing_the_package_does_not_start_jax():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", "import semcheck, sys; print('jax' in sys.modules)"],
                         capture_output=True, text=True, env=sp.api._env())
    assert out.stdout.strip() == "False"


needs_binary = pytest.mark.skipif(not (os.environ.get("SEMCHECK_BIN") or shutil.which("semcheck")),
                                  reason="the semcheck binary is not available (SEMCHECK_BIN)")


@needs_binary
def test_check_a_callable_is_proved():
    verdicts = sp.assert_proved(run_ring, devices=[2, 3])
    assert [(v.devices, v.verdict) for v in verdicts] == [(2, "proved"), (3, "proved")]


@needs_binary
def test_a_proof_in_which_statements_never_ran_warns_at_the_call_naming_them():
    # psum_scatter at N = 1 takes no LEFT phase: proved, but the proof says nothing of it.
    with pytest.warns(sp.SemcheckVacuityWarning, match=r"proved at N = 1, but these statements ran in no schedule") as w:
        verdicts = sp.assert_proved(os.path.join(SEEDS, "psum_scatter.py"), devices=1)
    assert "psum_scatter.py:162 @pl.when(phase == LEFT)" in verdicts[0].never_executed, verdicts[0]
    assert [r.filename for r in w] == [__file__], [(r.filename, r.lineno) for r in w]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # at N = 2 every statement runs: nothing to say
        assert sp.assert_proved(os.path.join(SEEDS, "psum_scatter.py"), devices=2)[0].never_executed == []


@needs_binary
def test_assert_proved_prints_the_trace_of_a_violation():
    with pytest.raises(AssertionError) as e:
        sp.assert_proved(os.path.join(SEEDS, "psum--no-capacity.py"), devices=2)
    text = str(e.value)
    assert "violation" in text and "psum--no-capacity.py:" in text
    # The explanation of the capacity bug: the wrong DMA satisfied the wait.
    assert "[satisfied-by, the wrong one]" in text, text
    verdict = sp.check_file(os.path.join(SEEDS, "psum--no-capacity.py"), devices=2)[0]
    # The whole schedule after the explanation, whose heading says so (not how to ask for it).
    whole = verdict.describe(schedule=True)
    heading, _, events = verdict.explanation.partition("\n")
    assert heading.endswith("events; the whole schedule: KernelVerdict.trace, or --semcheck-schedule):"), heading
    assert heading.replace(": KernelVerdict.trace, or --semcheck-schedule", " below") in whole.splitlines(), whole
    assert events and events in whole and "KernelVerdict.trace" not in whole, whole
    assert verdict.trace and f"schedule ({len(verdict.result['violation']['events'])} events):\n{verdict.trace}" in whole
    assert verdict.trace not in str(verdict)
    # The repr is a line, not the schedule and the whole JSON case; the case names the
    # kernel file, not the call's temporary document.
    assert "race" in repr(verdict) and verdict.trace not in repr(verdict) and "'assumptions'" not in repr(verdict)
    seed = os.path.join(SEEDS, "psum--no-capacity.py")
    assert verdict.result["file"] == seed and verdict.result["source"]["path"] == seed, verdict.result["source"]
    # Drawn as a page: this counterexample, named by its kernel file.
    page = verdict.html()
    assert page.startswith("<!DOCTYPE html>") and f"<title>semcheck: {seed}:psum_kernel N=2</title>" in page, page[:300]
    proved = sp.check_file(os.path.join(SEEDS, "psum.py"), devices=2)[0]
    with pytest.raises(sp.SemcheckError, match="is proved: only a violation has a counterexample to draw"):
        proved.html()


@needs_binary
def test_a_kernel_that_cannot_be_read_is_an_error_verdict_beside_the_others():
    from conftest import KERNELS

    verdicts = sp.check_file(os.path.join(KERNELS, "unsupported", "mixed.py"), devices=2)
    assert [(v.kernel, v.verdict) for v in verdicts] == [("shift", "proved"), ("accumulate", "error")]
    assert "mixed.py:15: dma_start(add=True)" in verdicts[1].message
    with pytest.raises(AssertionError, match="accumulate at N = 2: error: .*dma_start"):
        sp.assert_proved(os.path.join(KERNELS, "unsupported", "mixed.py"), devices=2)
    # A file whose only kernel cannot be read: an error naming the file, not the API's
    # temporary document.
    with pytest.raises(sp.SemcheckError) as e:
        sp.check_file(os.path.join(KERNELS, "unsupported", "dma_add.py"), devices=2)
    assert "of dma_add.py: unsupported construct: dma_add.py:" in str(e.value) and "doc.json" not in str(e.value), e


@needs_binary
def test_a_callable_is_checked_for_the_scalar_prefetch_values_it_passes():
    verdicts = sp.assert_proved(run_table, 1, 1, devices=[2, 3])
    assert [v.verdict for v in verdicts] == ["proved", "proved"]
    # The same kernel with every device copying into device 0: a race.
    (v,) = sp.check(run_table, 0, 0, devices=3)
    assert v.verdict == "violation" and "race" in v.message, v


@needs_binary
def test_the_hardware_assumptions_are_options_and_a_violation_says_what_it_requires():
    # One receive semaphore for every step: a race only if a later DMA lands first.
    shared = os.path.join(SEEDS, "all_gather--shared-recv-sem.py")
    (v,) = sp.check_file(shared, devices=3)
    assert (v.verdict, v.rule, v.requires) == ("violation", "race", ["dma-reorder"]), v
    assert "requires: dma-reorder" in str(v)
    sp.assert_proved(shared, devices=3, dma_order="pair-fifo")
    # Half of a two-cell copy waited for and read: proved when copies land whole.
    half = os.path.join(SEEDS, "half_wait.py")
    sp.assert_proved(half, devices=2)
    (v,) = sp.check_file(half, devices=2, dma_landing="cells")
    assert (v.verdict, v.requires) == ("violation", ["partial-landing"]), v


@needs_binary
def test_a_function_that_raises_after_its_kernels_is_checked_for_those_and_says_so():
    from helpers import line_of

    with pytest.warns(sp.SemcheckPartialCaptureWarning) as w:
        verdicts = sp.check(run_ring_then_check_its_output, devices=2)
    # Its first kernel only: the second was never called.
    assert [(v.kernel, v.verdict) for v in verdicts] == [("kernel", "proved")], verdicts
    (message,) = [str(r.message) for r in w]
    line = line_of(__file__, "assert float(out.sum()) != 0")
    # The exception, its line (the file as a violation's location names it: relative to
    # the current directory under it), the kernels checked, and what was not.
    here = os.path.relpath(__file__) if not os.path.relpath(__file__).startswith("..") else __file__
    assert message.startswith(
        "`run_ring_then_check_its_output` at N = 2 raised AssertionError: the ring's output is all zeros at "
        f"{here}:{line}, after calling kernel: any kernel it would have called after that point was not "
        "captured, so not checked."), message
    assert "guard them with `if not semcheck.is_exporting():`" in message, message
    assert [r.filename for r in w] == [__file__], [(r.filename, r.lineno) for r in w]  # at the call
    assert verdicts[0].warnings == [message]
    with pytest.warns(sp.SemcheckPartialCaptureWarning, match="raised AssertionError"):
        sp.assert_proved(run_ring_then_check_its_output, devices=2)
    # An assertion without a message: the exception's name, then its line.
    with pytest.warns(sp.SemcheckPartialCaptureWarning) as w:
        sp.check(run_ring_then_assert_bare, devices=2)
    line = line_of(__file__, "def run_ring_then_assert_bare():") + 3
    assert [str(r.message).partition(", after")[0] for r in w] == [
        f"`run_ring_then_assert_bare` at N = 2 raised AssertionError at {here}:{line}"], [str(r.message) for r in w]
    # The host-side check guarded: both kernels are checked, and nothing is said; the
    # second, which the raise hid, breaks when a later round's DMA lands first.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        verdicts = sp.check(run_ring_then_check_its_output, True, devices=2)
    assert [(v.kernel, v.verdict, v.requires, v.warnings) for v in verdicts] == [
        ("kernel", "proved", None, []), ("kernel#2", "violation", ["dma-reorder"], [])], verdicts
    # As the case's JSON: a proof requires nothing to be re-checked (null), a violation
    # the assumptions it needs.
    assert [v.result["requires"] for v in verdicts] == [None, ["dma-reorder"]], verdicts


@needs_binary
def test_a_kernel_name_that_is_not_there_lists_the_kernels_that_are():
    from conftest import KERNELS

    with pytest.raises(sp.SemcheckError, match=r"no kernel named `nosuch`; the script has: kernel$"):
        sp.check(run_ring, devices=2, kernel="nosuch")
    with pytest.raises(sp.SemcheckError, match=r"no kernel named `nosuch`; the script has: shift, accumulate$"):
        sp.check_file(os.path.join(KERNELS, "unsupported", "mixed.py"), devices=2, kernel="nosuch")


class Ring:
    """A ring shift whose rounds are the instance's: a bound method is checked on a copy of
    its own instance."""

    def __init__(self, rounds: int):
        self.rounds = rounds

    def run(self):
        run_ring(self.rounds)


class Locked(Ring):
    """An instance that does not pickle."""

    def __init__(self):
        import threading

        super().__init__(1)
        self.lock = threading.Lock()


@needs_binary
def test_a_bound_method_is_checked_on_a_copy_of_its_instance():
    import pickle

    # One round is proved; two race (the second copy may land before the first).
    for rounds, verdict in ((1, "proved"), (2, "violation")):
        (v,) = sp.check(Ring(rounds).run, devices=2)
        assert v.verdict == verdict, v
    with pytest.raises(sp.SemcheckError, match=r"^Locked.run is a method of an instance that cannot be sent to the "
                                               r"child process \(TypeError: cannot pickle '_thread.lock' object\)"):
        sp.check(Locked().run, devices=2)
    assert pickle.dumps(Ring(1))  # the copy the child calls `run` on


@needs_binary
def test_a_kernel_name_like_an_option_is_a_name():
    from conftest import KERNELS

    with pytest.raises(sp.SemcheckError, match=r"no kernel named `--help`; the script has: shift, accumulate$"):
        sp.check_file(os.path.join(KERNELS, "unsupported", "mixed.py"), devices=2, kernel="--help")


@needs_binary
def test_a_check_inside_the_function_being_checked_says_checks_cannot_nest():
    from helpers import line_of

    with pytest.raises(sp.SemcheckError) as e:
        sp.check(check_inside, devices=2)
    line = line_of(__file__, "    sp.check(run_ring, devices=2)")
    assert str(e.value).startswith(f"checks cannot nest: semcheck.check at test_api.py:{line} was called inside the "
                                   "process semcheck started to trace a kernel, from the code being checked"), e.value
    assert e.value.script_error is not None and e.value.script_error["construct"] == "script error"


def _leftovers(tmp: str) -> list[str]:
    return sorted(d for d in os.listdir(tmp) if d.startswith("semcheck-"))


def test_check_at_a_scripts_top_level_is_refused_in_its_child_not_repeated(tmp_path):
    # Without `if __name__ == "__main__":` the child that imports the script to trace
    # `run` would call check again, and so on: it refuses instead, the parent reports it,
    # and nothing is left running or on disk.
    import subprocess
    import sys
    import time

    script = tmp_path / "top_level.py"
    script.write_text("import semcheck\n\ndef run():\n    pass\n\nsemcheck.check(run, devices=[2])\n")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**sp.api._env(), "TMPDIR": str(tmp)}
    env.pop(sp.api.CHILD_MARKER)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert time.monotonic() - start < 60
    assert proc.returncode != 0
    # The refusal in one line, naming the call, not under the child's traceback.
    last = proc.stderr.strip().splitlines()[-1]
    assert last == ("semcheck.api.SemcheckError: semcheck.check at top_level.py:6 was called inside the process "
                    "semcheck started to trace a kernel: the module that calls it is imported there too. Call it from "
                    "a test function, or under `if __name__ == \"__main__\":`"), proc.stderr
    assert "export ended without a document" not in proc.stderr and "_call.py" not in proc.stderr, proc.stderr
    assert _leftovers(str(tmp)) == []
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(script) not in ps


def _imported(module):
    """The module of file ``module`` (a test's kernel module), imported from its folder, as
    the API's child process will import it."""
    import importlib
    import sys

    sys.path.insert(0, str(module.parent))
    sys.modules.pop(module.stem, None)  # a module of that name from another test's folder
    try:
        return importlib.import_module(module.stem)
    finally:
        sys.path.remove(str(module.parent))


def test_an_export_past_its_time_budget_is_ended_with_what_it_started(tmp_path, export_mode):
    # A callable that starts a child of its own and never returns: both are ended.
    import time

    pid_file = tmp_path / "child.pid"
    module = tmp_path / "slow_kernel.py"
    module.write_text(
        "import subprocess, sys, time\n"
        f"PID = {str(pid_file)!r}\n"
        "def run():\n"
        "    child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "    open(PID, 'w').write(str(child.pid))\n"
        "    time.sleep(60)\n")
    slow_kernel = _imported(module)
    start = time.monotonic()
    # The budget leaves time for JAX's import in the child, so the kernel's own child is
    # started (else the test would not test ending it).
    with pytest.raises(sp.SemcheckError, match="export: stopped by the time budget of 8 s while tracing run at N = 2"):
        sp.export(slow_kernel.run, devices=2, max_seconds=8)
    assert time.monotonic() - start < 25
    assert pid_file.exists(), "the kernel never started its child within the budget"
    assert _ends_within_moments(int(pid_file.read_text())), "a process the kernel's script started outlived the export"


def test_an_export_stopped_by_a_tiny_budget_says_how_long_it_ran_in_digits_that_show_it(monkeypatch):
    import re

    # Through the session's server (a process of its own is stopped by `semcheck
    # supervise`, which says it in its own words).
    monkeypatch.delenv("SEMCHECK_EXPORT", raising=False)
    try:
        with pytest.raises(sp.SemcheckError) as e:
            sp.export(run_ring, devices=2, max_seconds=0.01)
    finally:
        sp.api.close_session()
    m = re.fullmatch(r"export: stopped by the time budget of 0\.01 s while tracing run_ring at N = 2, after "
                     r"(\d+(?:\.\d+)?) s", str(e.value))
    # Not "after 0.0 s": at least the budget, in as many digits as show it.
    assert m and float(m.group(1)) >= 0.01, str(e.value)


def test_sigterm_to_the_calling_process_ends_the_check_and_what_it_started(tmp_path):
    # SIGTERM's default would end the caller at once and leave the export (in a session of
    # its own) running, and the temporary folder on disk: it is an interruption instead.
    import signal
    import subprocess
    import sys
    import time

    pid_file = tmp_path / "child.pid"
    slow = tmp_path / "slow.py"
    slow.write_text(
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(120)\n")
    host = tmp_path / "host.py"
    host.write_text(f"import semcheck\nsemcheck.check_file({str(slow)!r}, devices=2, max_seconds=300)\n")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**sp.api._env(), "TMPDIR": str(tmp)}
    env.pop(sp.api.CHILD_MARKER)
    proc = subprocess.Popen([sys.executable, str(host)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    deadline = time.monotonic() + 90
    while not pid_file.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert pid_file.exists(), proc.communicate()[1]
    time.sleep(0.1)  # the pid written whole
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode != 0
    assert "the check was ended by SIGTERM" in err, err
    assert _leftovers(str(tmp)) == []
    assert _ends_within_moments(int(pid_file.read_text())), "a process the checked script started outlived the check"


def test_a_process_that_leaves_its_group_is_ended_with_the_export(tmp_path, export_mode):
    # A daemon the script starts (forked twice, in a session of its own, stdout inherited)
    # would keep the export's pipes open: `semcheck supervise`, a subreaper, becomes its
    # parent and ends it with the export.
    import time

    script = tmp_path / "daemon.py"
    pid_file = tmp_path / "daemon.pid"
    with open(os.path.join(SEEDS, "ppermute.py")) as f:
        seed = f.read()
    script.write_text(
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "        time.sleep(40)\n"
        "        os._exit(0)\n"
        "    os._exit(0)\n" + seed)
    start = time.monotonic()
    verdicts = sp.check_file(str(script), devices=2)
    assert time.monotonic() - start < 30
    assert [v.verdict for v in verdicts] == ["proved"]
    assert _ends_within_moments(int(pid_file.read_text())), "the script's daemon outlived the export"


def _ends_within_moments(pid: int) -> bool:
    """Whether process ``pid`` has ended, or ends within 3 s (a kill is delivered
    asynchronously)."""
    import time

    deadline = time.monotonic() + 3
    while _runs(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _runs(pid)


def _runs(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie nobody has reaped yet runs nothing)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def test_an_export_is_under_the_memory_budget_of_everything_it_starts(tmp_path, export_mode):
    # The kernel's function starts a process that holds 1.5 GB: max_memory_mib stops the
    # export (it counts the whole process tree), and the process is ended with it.
    pid_file = tmp_path / "child.pid"
    module = tmp_path / "big_kernel.py"
    module.write_text(
        "import subprocess, sys, time\n"
        f"PID = {str(pid_file)!r}\n"
        "CODE = 'b = bytearray(1500 << 20)\\nfor i in range(0, len(b), 4096): b[i] = 1\\nimport time; time.sleep(60)'\n"
        "def run():\n"
        "    child = subprocess.Popen([sys.executable, '-c', CODE])\n"
        "    open(PID, 'w').write(str(child.pid))\n"
        "    time.sleep(60)\n")
    big_kernel = _imported(module)
    with pytest.raises(sp.SemcheckError, match="export: stopped by the memory budget of 1000 MiB while tracing run"):
        sp.export(big_kernel.run, devices=2, max_seconds=120, max_memory_mib=1000)
    assert not _runs(int(pid_file.read_text())), "the process the kernel's function started outlived the export"


def test_a_binary_older_than_the_package_is_named_as_such(tmp_path, monkeypatch):
    # A binary without `supervise` (SEMCHECK_BIN left pointing at an old build).
    old = tmp_path / "semcheck"
    old.write_text("#!/bin/sh\necho \"error: unrecognized subcommand '$1'\" >&2\nexit 2\n")
    old.chmod(0o755)
    monkeypatch.setenv("SEMCHECK_BIN", str(old))
    with pytest.raises(sp.SemcheckError, match="is older than this package .* install matching versions"):
        sp.export(os.path.join(SEEDS, "ppermute.py"), devices=2)


def test_a_script_runs_with_the_arguments_it_is_given(tmp_path, export_mode):
    # Through the session's server and in a process of its own: the script's sys.argv.
    script = tmp_path / "by_flag.py"
    with open(os.path.join(SEEDS, "ppermute.py")) as f:
        seed = f.read()
    script.write_text("import sys\nif sys.argv[1:] != ['--ring', 'yes']:\n    sys.exit(f'argv {sys.argv[1:]}')\n"
                      + seed)
    (v,) = sp.check_file(str(script), devices=2, script_args=["--ring", "yes"])
    assert v.verdict == "proved" and v.result["script_args"] == ["--ring", "yes"]
    with pytest.raises(sp.SemcheckError, match=r"the script exited: argv \[\]"):
        sp.check_file(str(script), devices=2)
    with pytest.raises(sp.SemcheckError, match="script_args go to a kernel file's script"):
        sp.assert_proved(run_ring, devices=2, script_args=["--ring", "yes"])


def test_a_session_serves_each_export_with_the_callers_environment_and_directory(tmp_path, monkeypatch):
    # A test's own variables and directory change per export, through the same server.
    from conftest import KERNELS

    perm = os.path.join(KERNELS, "prefetch_perm.py")
    sp.api.close_session()
    monkeypatch.setenv("PERM", "ring")
    (ring,) = sp.check_file(perm, devices=3)
    server = sp.api._session_now
    monkeypatch.setenv("PERM", "bad")
    (bad,) = sp.check_file(perm, devices=3)
    assert (ring.verdict, bad.verdict) == ("proved", "violation")
    monkeypatch.delenv("PERM")  # the script's default: the ring
    assert [v.verdict for v in sp.check_file(perm, devices=3)] == ["proved"]
    script = tmp_path / "in_its_folder.py"
    with open(os.path.join(SEEDS, "ppermute.py")) as f:
        seed = f.read()
    script.write_text(f"import os\nif os.getcwd() != {str(tmp_path)!r}:\n    raise SystemExit('in ' + os.getcwd())\n"
                      + seed)
    monkeypatch.chdir(tmp_path)
    assert [v.verdict for v in sp.check_file(str(script), devices=2)] == ["proved"]
    assert sp.api._session_now is server and server.proc.poll() is None
    sp.api.close_session()
