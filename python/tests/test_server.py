"""The export server (``python -m semcheck.frontend serve``): its workers serve several
exports of one script in one process, and each document is the one a process of its
own writes; a worker puts back what a script changed, and retires when it cannot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from typing import Any

from conftest import PL_KERNEL_KEYWORDS_FROM, SEEDS, JAX_RELEASE, kernel_files, seed_files, uses_pl_kernel_keywords

PSUM = os.path.join(SEEDS, "psum.py")
BATCH = "batch_export.py"


def _serve(requests: list[tuple[str, int]], tmp: str, jobs: int = 1, tpu: str | None = "v6e") -> list[dict]:
    """Runs one server over ``requests`` (file, devices); per request, in order: its
    worker's pid, its status and its document (``None`` when none was written)."""
    lines = [json.dumps({"id": i, "file": f, "devices": n, "out": os.path.join(tmp, f"{i}.json"),
                         "err": os.path.join(tmp, f"{i}.err"), "tpu": tpu}) for i, (f, n) in enumerate(requests)]
    proc = subprocess.run([sys.executable, "-m", "semcheck.frontend", "serve", "--jobs", str(jobs)],
                          input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))})
    assert proc.returncode == 0, proc.stderr[-3000:]
    started: dict[int, int] = {}
    results: dict[int, dict] = {}
    for line in proc.stdout.splitlines():
        msg = json.loads(line)
        if "started" in msg:
            started[msg["id"]] = msg["started"]
        else:
            results[msg["id"]] = msg
    out = []
    for i in range(len(requests)):
        path = os.path.join(tmp, f"{i}.json")
        doc = json.load(open(path)) if os.path.exists(path) else None
        out.append({"pid": started[i], "status": results[i]["status"], "retired": results[i].get("retired"), "doc": doc,
                    "stderr": open(os.path.join(tmp, f"{i}.err")).read()})
    return out


def _comparable(doc: Any) -> Any:
    """A document without its wall-clock seconds, and without what the reference
    exports (``batch_export.py``, in one process per N, with Mosaic's lowering
    cross-check) add: that script's frames and hash, the cross-check's result."""
    if isinstance(doc, dict):
        return {k: _comparable(v) for k, v in doc.items()
                if k not in ("seconds", "export_seconds", "mosaic") and not k.endswith(BATCH)}
    if isinstance(doc, list):
        return [_comparable(v) for v in doc if not (isinstance(v, dict) and str(v.get("file", "")).endswith(BATCH))]
    return doc


def _runnable(files: list[str]) -> list[str]:
    return [f for f in files if JAX_RELEASE >= PL_KERNEL_KEYWORDS_FROM or not uses_pl_kernel_keywords(f)]


def test_a_worker_writes_the_documents_a_process_of_its_own_writes(exports, tmp_path):
    files = _runnable(seed_files() + kernel_files())
    # Each file at N = 2, then 3: one worker serves both.
    served = _serve([(f, n) for f in files for n in (2, 3)], str(tmp_path))
    reused = 0
    for k, (f, n) in enumerate((f, n) for f in files for n in (2, 3)):
        got = served[k]
        assert got["doc"] is not None, (f, n, got["stderr"][-2000:])
        assert _comparable(got["doc"]) == _comparable(exports.get(f, n)), (f, n)
        if n == 3 and got["pid"] == served[k - 1]["pid"]:
            reused += 1
    # Most exports leave their worker to the next one (those that end with an error, or
    # leave an error JAX raises when its backend ends, retire it).
    assert reused > len(files) // 2, (reused, len(files))


def _script(tmp: str, body: str) -> str:
    path = os.path.join(tmp, "script.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(body).replace("PSUM", repr(PSUM)))
    return path


def test_a_worker_puts_back_what_a_script_changed(tmp_path):
    script = _script(str(tmp_path), """
        import os, runpy, sys
        import jax
        import jax.numpy as jnp

        # Each run must find the process as a fresh one has it ...
        assert not hasattr(jnp, "semcheck_marker"), "a module attribute came back"
        assert "SEMCHECK_MARKER" not in os.environ, "an environment variable came back"
        assert "semcheck_marker_module" not in sys.modules, "a module came back"
        assert not jax.config.jax_enable_x64, "an option of JAX came back"
        assert "/semcheck-marker" not in sys.path, "sys.path came back"
        start = os.getcwd()
        runpy.run_path(PSUM)
        # ... and leaves it changed.
        jnp.semcheck_marker = 1
        os.environ["SEMCHECK_MARKER"] = "1"
        sys.modules["semcheck_marker_module"] = type(sys)("semcheck_marker_module")
        jax.config.update("jax_enable_x64", True)
        sys.path.append("/semcheck-marker")
        os.chdir("/")
    """)
    os.makedirs(tmp_path / "out")
    served = _serve([(script, 2), (script, 3), (script, 2)], str(tmp_path / "out"), tpu=None)
    for got in served:
        assert os.WEXITSTATUS(got["status"]) == 0, got["stderr"][-2000:]
        assert got["doc"]["script"]["status"] == "ok", got["doc"]["script"]
    assert len({got["pid"] for got in served}) == 1, "one worker served the three"
    assert [got["doc"]["devices"] for got in served] == [2, 3, 2]


def test_a_worker_retires_when_a_script_leaves_a_process_running(tmp_path):
    pid_file = tmp_path / "child.pid"
    script = _script(str(tmp_path), f"""
        import runpy, subprocess
        child = subprocess.Popen(["sleep", "120"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        runpy.run_path(PSUM)
    """)
    os.makedirs(tmp_path / "out")
    served = _serve([(script, 2), (script, 3)], str(tmp_path / "out"), tpu=None)
    assert all(os.WEXITSTATUS(got["status"]) == 0 for got in served), served[0]["stderr"][-2000:]
    assert served[0]["pid"] != served[1]["pid"], "the first worker retired"
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{child}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{child}"), "the script's process outlived its worker"


def test_a_worker_retires_when_a_script_leaves_a_low_level_thread_running(tmp_path):
    # A thread started with `_thread` is not in `threading`'s count; it could start a
    # process once the export is over, out of the worker's sight.
    script = _script(str(tmp_path), """
        import _thread, runpy, time

        def later():
            time.sleep(120)

        _thread.start_new_thread(later, ())
        runpy.run_path(PSUM)
    """)
    os.makedirs(tmp_path / "out")
    served = _serve([(script, 2), (script, 3)], str(tmp_path / "out"), tpu=None)
    assert all(os.WEXITSTATUS(got["status"]) == 0 for got in served), served[0]["stderr"][-2000:]
    assert served[0]["pid"] != served[1]["pid"], "the first worker retired"


def test_a_server_or_an_export_whose_semcheck_ended_while_it_started_runs_nothing(tmp_path):
    # The binary names itself in SEMCHECK_PARENT_PID; a process whose parent is another
    # one by the time it would run a script (semcheck ended while it imported JAX, and it
    # was reparented) runs none. Here the named pid is not the parent's from the start.
    mark = tmp_path / "ran"
    script = _script(str(tmp_path), f"open({str(mark)!r}, 'w').close()\n")
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    request = json.dumps({"id": 0, "file": script, "devices": 2, "out": str(tmp_path / "0.json"),
                          "err": str(tmp_path / "0.err")})
    gone = {**env, "SEMCHECK_PARENT_PID": str(os.getpid() + 1)}
    served = subprocess.run([sys.executable, "-m", "semcheck.frontend", "serve"], input=request + "\n",
                            capture_output=True, text=True, timeout=300, env=gone)
    assert served.returncode == 0 and served.stdout == "", (served.stdout, served.stderr[-2000:])
    export = [sys.executable, "-m", "semcheck.frontend", "export", script, "--devices", "2", "--no-lower",
              "--out", str(tmp_path / "1.json")]
    alone = subprocess.run(export, capture_output=True, text=True, timeout=300, env=gone)
    assert alone.returncode == 3 and "has ended: no script is run" in alone.stderr, alone.stderr[-2000:]
    assert not mark.exists() and not (tmp_path / "1.json").exists()
    # Started by the process it names, the same export runs the script.
    ran = subprocess.run(export, capture_output=True, text=True, timeout=300,
                         env={**env, "SEMCHECK_PARENT_PID": str(os.getpid())})
    assert mark.exists(), ran.stderr[-2000:]
