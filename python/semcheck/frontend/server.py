"""``python -m semcheck.frontend serve --jobs K``: one front-end process for a whole
command, serving every export the command asks for (every N of ``--devices 2-8`` or
``--sizes``, every file).

Importing JAX and the front end costs about as much CPU as tracing a small kernel, and
JAX fixes its device count when its CPU backend starts, not when it is imported. So the
server imports JAX, Pallas and the front end once, **without starting a backend**, and
forks one child per export: the child sets ``XLA_FLAGS`` for its N (as
:func:`~semcheck.frontend.export.configure` does before a fresh ``import jax``) and runs
the ordinary export (``python -m semcheck.frontend export FILE --devices N --out F``).
Each child starts from the same pristine process (nothing of an earlier export carries
over: no JAX cache, no module the script imported), so its document is the one a fresh
process writes; up to ``K`` children run at once.

Protocol (one JSON object per line): a request on stdin
``{"id": 7, "file": "k.py", "devices": 4, "out": "7-4.json", "err": "7-4.stderr",
"tpu": null}``; on stdout, ``{"id": 7, "started": PID}`` when its child is forked, then
``{"id": 7, "status": S, "seconds": 1.2, "max_rss_kib": 412000}`` with the raw
``waitpid`` status, its wall-clock seconds and its peak resident memory once it has
ended and its process group is gone. End of stdin: the server waits for its children and exits.

Process hygiene: the server is the leader of the group its parent (the ``semcheck``
binary) made for it. Each child leads a group of its own (so whatever the script leaves
running is killed when the export ends: the child is not reaped before ``killpg``), dies
with the server (``PR_SET_PDEATHSIG``), and is announced with ``started`` so that the
binary counts its group's memory and kills it when it stops.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import select
import signal
import sys
import time
import traceback
from typing import Any

#: Modules imported once by the server, before any script: what every export imports
#: before it runs the script, and the Pallas modules kernel scripts import. None of them
#: starts a JAX backend.
PRELOAD = (
    "jax",
    "jax.numpy",
    "jax.experimental.pallas",
    "jax.experimental.pallas.tpu",
    "semcheck.frontend.export",
    "semcheck.frontend.capture",
    "semcheck.frontend.kernel",
)
#: Modules JAX imports lazily in every export (lowering a computation's MLIR; reading the
#: values of an array sharded over the mesh), imported once too where this JAX has them.
WARM = (
    "jaxlib.mlir.dialects.mhlo",
    "jaxlib.mlir.dialects.builtin",
    "jaxlib.mlir.extras.meta",
    "jax.experimental.multihost_utils",
)


def _die_with_parent(parent: int) -> None:
    """Makes the kernel kill this process when the server ends (Linux), so no child
    outlives a server that was killed."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(1)  # the server ended before the signal was armed


def _child(req: dict, parent: int) -> None:
    """The forked child: one export, then ``os._exit`` with its status."""
    code = 1
    try:
        os.setpgid(0, 0)
        _die_with_parent(parent)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        err = os.open(req["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(err, 2)
        os.close(err)
        os.close(null)
        if req.get("tpu"):
            os.environ["SEMCHECK_TPU"] = req["tpu"]
        from .__main__ import main

        # Without Mosaic's lowering cross-check: only the front end's tests use it.
        code = main(["export", "--no-lower", req["file"], "--devices", str(req["devices"]), "--out", req["out"]])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: BLE001 - reported on the export's stderr
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code)


def _reap(pid: int) -> tuple[int, int] | None:
    """The raw status and peak resident memory (KiB) of child ``pid`` once it has
    exited, its group killed first (the child is not reaped before, so its pid, the
    group's id, cannot be reused meanwhile); ``None`` while it runs."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return 0, 0
    if info is None:
        return None
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _, status, usage = os.wait4(pid, 0)
    return status, usage.ru_maxrss


def _send(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def serve(jobs: int, idle_seconds: float | None = None) -> int:
    """Serves requests from stdin until it ends, or until it has had nothing to do for
    ``idle_seconds`` (module docs)."""
    os.environ["SEMCHECK_API_CHILD"] = "1"
    from .export import prepare_server

    prepare_server()
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    for name in WARM:
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # another JAX: the export imports what it needs itself
    # What the server has imported stays out of the children's garbage collections: a
    # collection writes to every object it visits, which copies their pages into the
    # child (Python's advice for processes that fork without exec). 3 % fewer page
    # faults per export measured (psum.py, 20 exports).
    gc.freeze()
    me = os.getpid()
    slots = max(1, jobs)
    queue: list[dict] = []
    running: dict[int, Any] = {}
    stdin = sys.stdin.buffer
    buf = b""
    open_input = True
    last = time.monotonic()
    while open_input or queue or running:
        if queue or running:
            last = time.monotonic()
        elif idle_seconds is not None and time.monotonic() - last > idle_seconds:
            break
        while queue and len(running) < slots:
            req = queue.pop(0)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(req, me)
            try:
                os.setpgid(pid, pid)
            except OSError:
                pass  # the child did it first, or has already ended
            running[pid] = (req["id"], time.monotonic())
            _send({"id": req["id"], "started": pid})
        for pid in list(running):
            ended = _reap(pid)
            if ended is not None:
                ident, began = running.pop(pid)
                _send({"id": ident, "status": ended[0], "seconds": round(time.monotonic() - began, 3),
                       "max_rss_kib": ended[1]})
        if not open_input:
            if running:
                time.sleep(0.005)
            continue
        # Wait for input only while nothing can start: a free core and a queued request
        # go on at once (waiting here stalled the next exports by the whole timeout).
        if queue and len(running) < slots:
            timeout = 0.0
        else:
            timeout = 0.005 if running else 0.5
        ready, _, _ = select.select([stdin], [], [], timeout)
        if not ready:
            continue
        chunk = os.read(stdin.fileno(), 1 << 16)
        if not chunk:
            open_input = False
            continue
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if line.strip():
                queue.append(json.loads(line))
    return 0


__all__ = ["serve", "PRELOAD"]
