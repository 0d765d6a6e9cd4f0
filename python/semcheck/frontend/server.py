"""``python -m semcheck.frontend serve --jobs K``: one front-end process for a whole
command, serving every export the command asks for (every N of ``--devices 2-8`` or
``--sizes``, every file).

Importing JAX and the front end costs about as much CPU as tracing a small kernel, and
JAX fixes its device count when its CPU backend starts, not when it is imported. So the
server imports JAX, Pallas and the front end once, **without starting a backend**, and
forks up to ``K`` **workers** (:mod:`~semcheck.frontend.worker`), each serving the
exports of one script in turn: it starts a backend with the request's device count,
runs the ordinary export (``python -m semcheck.frontend export FILE --devices N --out
F``), ends the backend and puts back what the script changed, so each document is the
one a fresh process writes. A worker retires when it cannot promise that (see there),
and a request of another script takes the place of an idle worker.

Protocol (one JSON object per line): a request on stdin
``{"id": 7, "file": "k.py", "devices": 4, "out": "7-4.json", "err": "7-4.stderr",
"tpu": null, "interpret_values": false, "argv": []}`` (``argv``: the script's
arguments; optionally ``"env"`` and ``"cwd"``, the caller's environment and directory for
this export, of which the variables read at start-up, :func:`read_at_startup`, stay the
server's; ``"kernel": NAME``, only that kernel exported; and ``"call": {"qualname": ..., "payload": PICKLE}``: a function of
``file`` called with the pickled arguments, the Python API's export,
:mod:`~semcheck.frontend._call`); on stdout, ``{"id": 7, "started": PID}`` when a worker
(of process group ``PID``) takes it, then ``{"id": 7, "status": S, "seconds": 1.2,
"max_rss_kib": 412000}`` with the export's raw ``waitpid``-style status, its wall-clock seconds and its peak
resident memory once it has ended (and, if its worker retired or died, once the
worker's process group is gone, with ``"retired": WHY``). ``{"cancel": 7}`` on stdin
ends request 7: dropped from the queue, or its worker's process group killed; it is
reported ended all the same. End of stdin: the server finishes what it runs, ends its
workers and exits. A server whose parent died (the binary killed outright, ``SIGKILL``,
or ended while the server was still importing JAX: its parent is no longer the process
the binary named in ``SEMCHECK_PARENT_PID``) ends its workers and exits within half a
second, what they ran unfinished, and starts no export.

Process hygiene: the server is the leader of the group its parent (the ``semcheck``
binary) made for it. Each worker leads a group of its own (so whatever a script leaves
running is killed when the worker retires, which it does when the script left a
process), dies with the server (``PR_SET_PDEATHSIG``), and is announced with ``started``
for each export so that the binary counts its group's memory and kills it when it stops.
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

from .._procs import orphaned, starting_parent

#: Prefixes of the environment variables read when the server starts, before any script
#: (by Python, JAX and XLA as they are imported and configured, the numerical libraries
#: numpy loads, the front end itself): a caller whose values of these differ needs a
#: server of its own. Every other variable is an export's own (a request's ``env``).
STARTUP_PREFIXES = ("PYTHON", "JAX_", "XLA_", "TPU_", "LIBTPU", "TF_", "LD_", "SEMCHECK_", "OMP_", "OPENBLAS_",
                    "MKL_", "NPY_", "MALLOC_", "GRPC_")


def read_at_startup(name: str) -> bool:
    """Whether the environment variable ``name`` is read when the server starts
    (:data:`STARTUP_PREFIXES`)."""
    return name.startswith(STARTUP_PREFIXES)


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


class _Worker:
    """A forked export worker (:mod:`~semcheck.frontend.worker`) and the export it runs."""

    def __init__(self, key: tuple, pid: int, to_worker: int, from_worker: int):
        self.key = key
        self.pid = pid
        self.to_worker = to_worker
        self.from_worker = from_worker
        self.buf = b""
        #: The request it runs and when it was sent, or ``None`` while it is idle.
        self.current: tuple[Any, float] | None = None
        #: Its answer when it said it retires: reported once its group is gone.
        self.last: dict | None = None


def _key(req: dict) -> tuple:
    """The requests one worker may serve in turn: one script, one pretended TPU, values
    recorded in JAX's interpret mode or not."""
    return (os.path.realpath(req["file"]), req.get("tpu"), bool(req.get("interpret_values")))


def _fork_worker(key: tuple, parent: int) -> _Worker:
    """Forks a worker that leads a process group of its own and dies with the server."""
    down_r, down_w = os.pipe()
    up_r, up_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setpgid(0, 0)
            _die_with_parent(parent)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os.close(down_w)
            os.close(up_r)
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(null, 1)
            os.close(null)
            from .worker import work

            with os.fdopen(down_r, "rb") as requests, os.fdopen(up_w, "w") as answers:
                work(requests, answers)
            code = 0
        except BaseException:  # noqa: BLE001 - on the last export's stderr, if any
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(down_r)
    os.close(up_w)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass  # the worker did it first, or has already ended
    return _Worker(key, pid, down_w, up_r)


def _end_worker(w: _Worker, grace: float = 0.0) -> int:
    """Kills the worker's process group (whatever its scripts left) and reaps it; its
    raw ``waitpid`` status. The worker is not reaped before ``killpg``, so its pid, the
    group's id, cannot be reused meanwhile. With ``grace``, a worker that is ending by
    itself (its pipe closed) gets that many seconds to exit first, so that its status is
    its own (an exit code), not the kill's."""
    for fd in (w.to_worker, w.from_worker):
        try:
            os.close(fd)
        except OSError:
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            # Exited? Seen without reaping it (WNOWAIT).
            if os.waitid(os.P_PID, w.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                break
        except ChildProcessError:
            break
        time.sleep(0.01)
    try:
        os.killpg(w.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        _, status, _ = os.wait4(w.pid, 0)
    except ChildProcessError:
        status = 0
    return status


def _send(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def _report(ident: Any, status: int, began: float, kib: int, retired: str | None = None) -> None:
    msg = {"id": ident, "status": status, "seconds": round(time.monotonic() - began, 3), "max_rss_kib": kib}
    if retired:
        msg["retired"] = retired
    _send(msg)


def _pick(workers: list[_Worker], key: tuple, slots: int, parent: int) -> _Worker | None:
    """The worker to run a request of ``key``: an idle one of that script, else a new one
    (an idle worker of another script retires to make room), else ``None`` (all busy)."""
    idle = [w for w in workers if w.current is None and w.last is None]
    same = next((w for w in idle if w.key == key), None)
    if same is not None:
        return same
    if len(workers) >= slots:
        if not idle:
            return None
        workers.remove(idle[0])
        _end_worker(idle[0])
    w = _fork_worker(key, parent)
    workers.append(w)
    return w


def _answer(w: _Worker, workers: list[_Worker]) -> None:
    """Reads what worker ``w`` wrote: its answers, or the end of its pipe (it exited or
    was killed)."""
    try:
        chunk = os.read(w.from_worker, 1 << 16)
    except OSError:
        chunk = b""
    if not chunk:
        workers.remove(w)
        status = _end_worker(w, grace=1.0)
        if w.current is not None:
            ident, began = w.current
            if w.last is not None:
                _report(ident, w.last["status"], began, w.last["max_rss_kib"], w.last.get("why"))
            else:
                _report(ident, status, began, 0, "the worker ended")
        return
    w.buf += chunk
    while b"\n" in w.buf:
        line, w.buf = w.buf.split(b"\n", 1)
        msg = json.loads(line)
        if msg.get("retire"):
            w.last = msg  # reported once its group is gone (end of its pipe)
            continue
        if w.current is not None:
            ident, began = w.current
            _report(ident, msg["status"], began, msg["max_rss_kib"])
        w.current = None


def _cancel(ident: Any, queue: list[dict], workers: list[_Worker]) -> None:
    """Cancels request ``ident`` (its caller stopped waiting for it: a budget, Ctrl-C):
    dropped from the queue and reported killed, or its worker's process group killed,
    which the end of the worker's pipe then reports. Nothing when it has ended."""
    for req in queue:
        if req["id"] == ident:
            queue.remove(req)
            _report(ident, int(signal.SIGKILL), time.monotonic(), 0, "cancelled before it started")
            return
    for w in workers:
        if w.current is not None and w.current[0] == ident:
            try:
                os.killpg(w.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            return


def serve(jobs: int, idle_seconds: float | None = None) -> int:
    """Serves requests from stdin until it ends, or until it has had nothing to do for
    ``idle_seconds`` (module docs), or its parent ends: the semcheck binary that started
    it, even one that ended while the server was importing JAX."""
    parent = starting_parent()
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
    workers: list[_Worker] = []
    stdin = sys.stdin.buffer
    buf = b""
    open_input = True
    last = time.monotonic()
    try:
        while True:
            if orphaned(parent):
                break  # the binary was killed outright: its exports end with it (below)
            busy = bool(queue) or any(w.current is not None for w in workers)
            if not (open_input or busy):
                break
            if busy:
                last = time.monotonic()
            elif idle_seconds is not None and time.monotonic() - last > idle_seconds:
                break
            while queue:
                w = _pick(workers, _key(queue[0]), slots, me)
                if w is None:
                    break
                req = queue.pop(0)
                w.current = (req["id"], time.monotonic())
                try:
                    os.write(w.to_worker, (json.dumps(req) + "\n").encode())
                except OSError:
                    pass  # the worker has died: the end of its pipe reports the request
                _send({"id": req["id"], "started": w.pid})
            fds = [w.from_worker for w in workers] + ([stdin.fileno()] if open_input else [])
            ready, _, _ = select.select(fds, [], [], 0.5)
            for w in [w for w in workers if w.from_worker in ready]:
                _answer(w, workers)
            if stdin.fileno() not in ready:
                continue
            chunk = os.read(stdin.fileno(), 1 << 16)
            if not chunk:
                open_input = False
                continue
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if not line.strip():
                    continue
                msg = json.loads(line)
                if "cancel" in msg:
                    _cancel(msg["cancel"], queue, workers)
                else:
                    queue.append(msg)
    finally:
        for w in workers:
            _end_worker(w)
    return 0


__all__ = ["serve", "PRELOAD"]
