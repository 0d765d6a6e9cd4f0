"""The Python API's export server: one front-end process for a whole session of
:func:`semcheck.check` calls (a pytest run's marked tests, a script's checks), so that
JAX and the front end are imported once rather than once per test and mesh size.

It is the server ``semcheck check`` uses for kernel files (``python -m semcheck.frontend
serve``, :mod:`semcheck.frontend.server`), run by ``semcheck supervise`` like every
export of the API (a process group of its own, the memory budget of every process it
starts, ended with everything it started, a daemon included, on every end of the caller).
Its worker serves consecutive exports, each at its own device count, and puts back what a
test changed between them (or retires, and a fresh worker is forked).

What a process of its own per export gave, kept here:

* **The time budget** of each export: past it, the whole server is ended (with whatever
  the export started) and the next export starts a fresh one.
* **Nothing outlives its export**: a process an export left running in its worker's group
  retires that worker (the server ends its group); one that left the group (a daemon,
  which ``supervise``, a subreaper, adopts) is seen among ``supervise``'s children once the
  export has ended, and the server is ended with it before the export returns.
* **The memory budget** counts the server's whole tree (at most one export runs at once);
  a server started with another budget is replaced.
* **The caller's environment and current directory** at the time of the call: each
  request carries them, and its export runs with them (a test's ``monkeypatch.setenv`` or
  ``chdir`` keeps the server), but for the variables read when the server started
  (:func:`~semcheck.frontend.server.read_at_startup`: ``JAX_*``, ``XLA_*``,
  ``PYTHONPATH``, ...): a server started with other values of those is replaced. Only
  the main thread uses it (``PR_SET_PDEATHSIG``,
  which ends ``supervise`` with its caller, fires when the *thread* that started it ends);
  other threads, and a call while the server is busy, export in a process of their own.

``SEMCHECK_EXPORT=process`` turns it off (a process of its own for each export), as for
``semcheck check``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import select
import signal
import subprocess
import time
from typing import IO

from ._procs import descendants
from ._tempdirs import TempFolder
from .frontend.server import read_at_startup


@dataclasses.dataclass
class Outcome:
    """How one export through the server ended."""

    #: The export's raw ``waitpid``-style status, ``None`` when it did not end by itself.
    status: int | None
    #: What the export printed on stderr.
    stderr: str = ""
    #: It ran past its time budget (the server was ended with it).
    timed_out: bool = False
    #: The server ended while the export ran: what ``supervise`` and the server printed
    #: (a budget's stop line, a crash).
    server_ended: str | None = None


def strays(supervisor: int) -> list[int]:
    """The processes under ``supervise`` (``supervisor``) other than the export server
    (its first child) and the server's workers (its children): what an export left
    running, in a session of its own or adopted by ``supervise`` when its parent ended."""
    tree = descendants(supervisor)
    first = min(((p.start, pid) for pid, p in tree.items() if p.ppid == supervisor), default=None)
    server = first[1] if first else None
    return [pid for pid, p in tree.items() if pid != server and p.ppid != server]


class Session:
    """A running export server (``command``: ``semcheck supervise ... -- python -m
    semcheck.frontend serve``), started with the memory budget ``memory`` (MiB, ``None``:
    the binary's default)."""

    def __init__(self, command: list[str], env: dict[str, str], memory: int | None):
        self.memory = memory
        self.env = env
        self.owner = os.getpid()
        # Removed at close, or by a later sweep if this process is killed first.
        self._temp = TempFolder("session-")
        self.folder = self._temp.path
        self._log = open(os.path.join(self.folder, "server.stderr"), "w+b")
        try:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                         env=env, start_new_session=True)
        except OSError:
            self._log.close()
            self._temp.cleanup()
            raise
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in: IO[bytes] = self.proc.stdin
        self._out: IO[bytes] = self.proc.stdout
        self._buf = b""
        self._next = 0

    def usable(self, memory: int | None, env: dict[str, str]) -> bool:
        """Whether this server can run an export of this process under ``memory``, with the
        environment ``env`` (a process of its own would start with it: a server started
        with other values of the variables read at start-up is replaced)."""
        return (self.owner == os.getpid() and self.memory == memory and _at_startup(self.env) == _at_startup(env)
                and self.proc.poll() is None)

    def export(self, request: dict, seconds: float) -> Outcome:
        """Runs one export (``request`` as :mod:`semcheck.frontend.server` reads it, without
        ``id`` and ``err``) within ``seconds``. Any exception on the way (an interrupt) ends
        the server first."""
        self._next += 1
        ident = self._next
        err = os.path.join(self.folder, f"{ident}.stderr")
        try:
            try:
                self._in.write((json.dumps({**request, "id": ident, "err": err}) + "\n").encode())
                self._in.flush()
            except OSError:  # it has ended
                return self._ended(err)
            deadline = time.monotonic() + seconds
            while True:
                msg = self._message(deadline)
                if msg is None:
                    if self.proc.poll() is None and time.monotonic() >= deadline:
                        outcome = Outcome(None, _read(err), timed_out=True)
                        self.close(kill=True)
                        return outcome
                    return self._ended(err)
                if msg.get("id") == ident and "status" in msg:
                    break
            outcome = Outcome(int(msg["status"]), _read(err))
            if strays(self.proc.pid):  # what the export left running: ended now, with the server
                self.close(kill=True)
            return outcome
        except BaseException:
            self.close(kill=True)
            raise
        finally:
            with contextlib.suppress(OSError):
                os.remove(err)

    def _ended(self, err: str) -> Outcome:
        """The server ended (or is ended now) during an export: what it printed."""
        self._stop(kill=True)
        log = ""
        with contextlib.suppress(OSError, ValueError):
            self._log.seek(0)
            log = self._log.read().decode(errors="replace")[-4000:]
        outcome = Outcome(None, _read(err), server_ended=log)
        self.close()
        return outcome

    def _message(self, deadline: float) -> dict | None:
        """The server's next message, or ``None`` at the deadline or when it has ended."""
        fd = self._out.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], min(left, 0.5))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            return {}

    def _stop(self, kill: bool, grace: float = 5.0) -> None:
        """Ends the server: at the end of its input (it finishes and exits), or with
        ``kill`` by ``SIGTERM`` to ``supervise`` (which ends everything it started); its
        group killed after ``grace`` seconds either way."""
        with contextlib.suppress(OSError, ValueError):
            if kill and self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
            self._in.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=grace)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=grace)

    def close(self, kill: bool = False) -> None:
        """Ends the server (:meth:`_stop`) and removes its files; nothing in a forked copy
        of the caller, whose parent's server it is."""
        if self.owner != os.getpid():
            return
        self._stop(kill)
        with contextlib.suppress(OSError):
            self._out.close()
        with contextlib.suppress(OSError):
            self._log.close()
        self._temp.cleanup()


def _at_startup(env: dict[str, str]) -> dict[str, str]:
    """The variables of ``env`` the server reads when it starts."""
    return {k: v for k, v in env.items() if read_at_startup(k)}


def _read(path: str) -> str:
    with contextlib.suppress(OSError):
        with open(path, errors="replace") as f:
            return f.read()[-8000:]
    return ""
