"""The Python API, for checks a pytest marker cannot express.

```python
import semcheck

def run_my_kernel():          # builds its inputs for jax.device_count() devices, calls the kernel
    ...

def test_my_kernel_is_race_free():
    semcheck.assert_proved(run_my_kernel, devices=[2, 3, 4])

def test_script():
    verdicts = semcheck.check_file("kernels/psum.py", devices=[2, 3])
    assert all(v.verdict == "proved" for v in verdicts)
```

The trace is specific to the device count, and JAX fixes the device count when it
starts, so every export runs outside this process, with N CPU devices: in the session's
export server (:mod:`semcheck._session`: one child of this interpreter that imports JAX
once and serves every export of the session, each at its own N, in a worker that puts
back what the previous one changed), or with ``SEMCHECK_EXPORT=process`` in a fresh child
process each. ``fn`` must be importable there: a module-level function or a method of a
test class (a test module is fine); ``args`` must pickle. The child imports ``fn``'s
module, so a module that calls :func:`check` at its top level would call it again in the
child: the child refuses (:class:`SemcheckError`) instead of starting another. Every
export is run by ``semcheck supervise``: in its own process group, under its time budget
(``max_seconds``, default 900 s) and memory budget (``max_memory_mib``, default 8192 MiB,
counting every process it starts), ended with everything it started, a daemon included;
it leaves no temporary file.

Verdicts come from the ``semcheck`` binary (``SEMCHECK_BIN``, else the one installed with
this package, else ``semcheck`` on ``PATH``), which reads the exported document
(``semcheck check doc.json --json``; ``docs/schema/semcheck-output-v1.schema.json``).
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import inspect
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
import warnings
from typing import Any, Callable, Iterable, Iterator, Sequence

from . import _options
from ._options import Options
from ._tempdirs import TempFolder, sweep
from ._binary import PACKAGE_PARENT, BinaryNotFound, find_binary, host_environment
from ._session import Session

#: Set in every child process the API starts: a ``check`` there is refused.
CHILD_MARKER = "SEMCHECK_API_CHILD"
#: Set by the ``semcheck`` binary in the processes that run a script to read its kernels.
EXPORTING_MARKER = "SEMCHECK_EXPORTING"
#: The time budget of one export when none is given, in seconds.
DEFAULT_EXPORT_SECONDS = 900.0
#: The JSON schema version this module reads.
SCHEMA_VERSION = 1


class SemcheckError(Exception):
    """The export or the checker failed (not a verdict: a verdict is a result)."""

    def __init__(self, *args: Any, script_error: dict | None = None) -> None:
        super().__init__(*args)
        #: When the script (or the function) raised, and nothing could be checked: its
        #: error record (``python/SCHEMA.md``: ``construct``,
        #: ``message``, ``loc``, ``traceback``).
        self.script_error = script_error


class SemcheckWarning(UserWarning):
    """What semcheck warns of: a check that covers less than it seems to (its subclasses).
    ``-W error::semcheck.SemcheckWarning`` makes every one a failure."""


class SemcheckVacuityWarning(SemcheckWarning):
    """A proof in which some statements of the kernel ran in no schedule: the proof says
    nothing about them (a loop of zero trips at this mesh size, a branch no device takes).
    ``-W error::semcheck.SemcheckVacuityWarning`` makes it a failure."""


class SemcheckPartialCaptureWarning(SemcheckWarning):
    """The function (or the script) raised after it had called some kernels: those were
    checked, but any kernel it would have called after that point was not captured, so not
    checked. Kernel outputs are placeholders while semcheck traces (zero-filled), so a
    host-side check of them (``assert float(out.sum()) != 0``) fails there: guard it with
    ``if not semcheck.is_exporting():``. ``-W
    error::semcheck.SemcheckPartialCaptureWarning`` makes it a failure."""


def is_exporting() -> bool:
    """Whether this code runs in a process semcheck started to read its kernels (a marked
    test's export, :func:`check`'s, ``semcheck check``'s): there the kernels are captured,
    not run, and their outputs are zero-filled placeholders. Guard host-side checks of a
    kernel's results with ``if not semcheck.is_exporting():`` so that the code after them,
    and the kernels it calls, are still traced. Does not import JAX."""
    return bool(os.environ.get(CHILD_MARKER) or os.environ.get(EXPORTING_MARKER))


@dataclasses.dataclass
class KernelVerdict:
    """The verdict for one kernel at one device count."""

    kernel: str
    devices: int
    verdict: str
    rule: str | None
    #: For a violation, the rule's message; for an incomplete or unchecked kernel, why.
    message: str
    #: For a violation: the whole schedule, one numbered event per line (not in ``repr``).
    trace: str | None = dataclasses.field(repr=False)
    #: The case's object of ``semcheck check --json`` (docs/json.md; not in ``repr``).
    result: dict = dataclasses.field(repr=False)
    #: For a violation: the hardware assumptions it needs (``["dma-reorder"]``; ``[]`` when
    #: it breaks under every choice of ``dma_order`` and ``dma_landing``). ``None`` when
    #: nothing was re-checked (any other verdict), as the case's ``requires`` in JSON.
    requires: list[str] | None = None
    #: For a violation: ``file.py:line`` of the event that broke the rule.
    location: str | None = None
    #: For a violation: its causal core, the few events of ``trace`` without which it does
    #: not happen (docs/counterexamples.md), each with what it does, under a ``why`` line.
    explanation: str | None = dataclasses.field(default=None, repr=False)
    #: For a proof: the statements that ran in no schedule (``kernel.py:35 lax.fori_loop(...)``).
    never_executed: list[str] = dataclasses.field(default_factory=list)
    #: What the export warned of, in words: above all, that the function raised after its
    #: kernels were captured, so that any kernel it would have called after that point was
    #: not checked (:class:`SemcheckPartialCaptureWarning`).
    warnings: list[str] = dataclasses.field(default_factory=list, repr=False)
    #: The exported document and the options it was checked with (for :meth:`html`).
    _source: tuple[dict, Options] | None = dataclasses.field(default=None, repr=False, compare=False)

    def __str__(self) -> str:
        return self.describe()

    def html(self) -> str:
        """For a violation: its counterexample as one self-contained HTML page (``semcheck
        trace --format html``: a lane per device, the explanation's events highlighted, the
        semaphores and DMAs of the selected step; docs/counterexamples.md)."""
        if self.verdict != "violation" or self._source is None:
            raise SemcheckError(f"{self.kernel} at N = {self.devices} is {self.verdict}: only a violation has a "
                                "counterexample to draw")
        doc, options = self._source
        script = (doc.get("script") or {}).get("file") or "the export"
        with TempFolder() as tmp:
            path = os.path.join(tmp, "doc.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            flags = dataclasses.replace(options, kernel=self.kernel).flags()
            timeout = (options.max_seconds + 60) if options.max_seconds else None
            proc = _run([semcheck_binary(), "trace", path, "--devices", str(self.devices), *flags, "--format", "html"],
                        "semcheck trace", timeout)
        if proc.returncode != 1 or not proc.stdout.startswith("<!DOCTYPE html>"):
            raise SemcheckError(f"semcheck trace drew no page ({_ended(proc.returncode)}):\n"
                                f"{proc.stderr.strip()[-4000:]}")
        # The page names the document it was drawn from, this call's temporary file: it
        # names the script instead.
        return proc.stdout.replace(path, script)

    def describe(self, schedule: bool = False) -> str:
        """The verdict as text: for a violation, its explanation (the whole schedule when
        there is none, or also when ``schedule`` is true)."""
        head = f"{self.kernel} at N = {self.devices}: {self.verdict}"
        if self.rule:
            head += f" ({self.rule})"
        if self.location:
            head += f" at {self.location}"
        if self.message:
            head += f": {self.message}"
        if self.verdict == "violation":
            if self.requires:
                head += f"\n  requires: {', '.join(self.requires)}"
            elif self.requires == []:
                head += "\n  requires: nothing (it breaks under every hardware assumption)"
        if self.explanation:
            if not schedule or not self.trace:
                return f"{head}\n{self.explanation}"
            # Its heading says the whole schedule follows, not how to ask for it.
            head += f"\n{_explanation(self.result.get('violation') or {}, whole=True) or self.explanation}"
        if not self.trace:
            return head
        return f"{head}\n  schedule ({len(self.trace.splitlines())} events):\n{self.trace}"


#: The words of the refusal of a check in a process semcheck started to trace a kernel,
#: which the parent finds in that process's stderr (:func:`_refusal`).
_REFUSED = "was called inside the process semcheck started to trace a kernel"


def _inside_a_check() -> bool:
    """Whether the front end is running this code to capture its kernels (the function
    of a check, or a script ``semcheck check`` reads), rather than importing its module."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__") == "semcheck.frontend.capture" \
                and frame.f_code.co_name in ("capture_call", "run_script"):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def _caller_outside() -> str:
    """`` at file.py:line``: the innermost frame of the stack outside this package (the
    user's call), or nothing."""
    here = os.path.dirname(os.path.realpath(__file__)) + os.sep
    frame = sys._getframe(1)
    while frame is not None:
        file = frame.f_code.co_filename
        if not os.path.realpath(file).startswith(here) and not file.startswith("<"):
            return f" at {os.path.basename(file)}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return ""


def _refuse_in_child(what: str) -> None:
    if not os.environ.get(CHILD_MARKER):
        return
    if _inside_a_check():
        raise SemcheckError(
            f"checks cannot nest: semcheck.{what}{_caller_outside()} {_REFUSED}, from the code being checked (which "
            "already runs inside a semcheck check: a marked test, semcheck.check or `semcheck check`). Call the "
            "kernel there as your program does, and check it from outside: with the marker alone, or with "
            "semcheck.check from an unmarked test")
    raise SemcheckError(
        f"semcheck.{what}{_caller_outside()} {_REFUSED}: the module that calls it is imported there too. Call it "
        "from a test function, or under `if __name__ == \"__main__\":`")


def _refusal(stderr: str) -> str | None:
    """The refusal of a check that a child raised while importing its module (a ``check``
    at a module's top level), from the child's stderr: the one line that says why."""
    for line in reversed(stderr.splitlines()):
        head, sep, message = line.partition("SemcheckError: ")
        if sep and _REFUSED in message:
            return message.strip()
    return None


def _env() -> dict:
    env = host_environment()
    env["PYTHONPATH"] = os.pathsep.join(
        [PACKAGE_PARENT, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    env[CHILD_MARKER] = "1"
    return env


def _kill_group(proc: subprocess.Popen) -> None:
    """Ends a child's process group (the child and anything it started), if any is left."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


#: How long a child that still runs is given to end after ``SIGTERM`` before its group is
#: killed: ``semcheck`` ends what it started (every process descended from it) and removes
#: its temporary files at once.
_END_GRACE_SECONDS = 5.0


def _end(proc: subprocess.Popen) -> None:
    """Ends a child that still runs: ``SIGTERM`` first, so that ``semcheck`` ends the
    processes it started (in groups of their own, out of reach of a ``SIGKILL`` to its
    group), then its group killed."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=_END_GRACE_SECONDS)
    _kill_group(proc)


class Terminated(KeyboardInterrupt):
    """``SIGTERM`` or ``SIGHUP`` arrived while a check ran (see :func:`_signals_end_child`):
    an interruption, like Ctrl-C, that ends the caller (pytest stops its session) once the
    check's processes are ended and its temporary files removed."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"semcheck: the check was ended by {signal.Signals(signum).name}")
        self.signum = signum


def _raise_signalled(signum: int, _frame: Any) -> None:
    # A second signal must not cut the ending of the child short.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    raise Terminated(signum)


@contextlib.contextmanager
def _signals_end_child() -> Iterator[None]:
    """While a child runs, ``SIGTERM`` and ``SIGHUP`` (whose default ends this process at
    once: no ``finally`` runs, the child, in a session of its own, is left running, and
    temporary files stay) raise :class:`Terminated`, so that the child's group is ended
    and the temporary files removed on the way out. Only where Python lets handlers be set
    (the main thread) and only in place of the default handler."""
    saved = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) == signal.SIG_DFL:
                saved[sig] = signal.signal(sig, _raise_signalled)
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


#: How long a child's output is still read after the child itself has ended (a process it
#: started and that left its group may hold the pipes open for ever).
_DRAIN_SECONDS = 2.0


def _drain(proc: subprocess.Popen) -> tuple[str, str]:
    """What a child whose group was killed printed, read for at most :data:`_DRAIN_SECONDS`."""
    try:
        return proc.communicate(timeout=_DRAIN_SECONDS)
    except subprocess.TimeoutExpired:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()
        return "", ""


def _run(cmd: Sequence[str], what: str, timeout: float | None,
         extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Runs a child in its own process group; on a timeout, an interrupt, a ``SIGTERM`` or
    ``SIGHUP``, or any other end, nothing it started is left running, and a process that
    left its group does not hold this one up."""
    try:
        proc = subprocess.Popen(list(cmd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env={**_env(), **(extra_env or {})}, start_new_session=True)
    except OSError as e:
        raise SemcheckError(f"{what}: cannot run {cmd[0]}: {e}") from None
    deadline = None if timeout is None else time.monotonic() + timeout
    ended_at = None
    with _signals_end_child():
        try:
            while True:
                try:
                    out, err = proc.communicate(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    now = time.monotonic()
                    if deadline is not None and now >= deadline:
                        raise SemcheckError(f"{what}: stopped after {timeout:g} s (its time budget, "
                                            "max_seconds)") from None
                    if proc.poll() is not None:
                        ended_at = ended_at or now
                        if now - ended_at >= _DRAIN_SECONDS:
                            _kill_group(proc)
                            out, err = _drain(proc)
                            break
        except BaseException:
            _end(proc)
            _drain(proc)
            raise
    _kill_group(proc)
    return subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)


@dataclasses.dataclass(frozen=True)
class _Target:
    """How the child process finds a function: the file of its module, the module's name
    in this process, its qualified name there, and for a method bound to an instance, the
    instance pickled (the child calls the method on a copy of it)."""

    file: str
    module: str | None
    qualname: str
    instance: bytes | None = None


_swept = False


def _sweep_once() -> None:
    """Removes what killed processes left in the temporary directory (``_tempdirs``), once
    per process, at its first export."""
    global _swept
    if not _swept:
        _swept = True
        sweep()


def _callable_target(target: Callable) -> _Target:
    """How the child process finds ``target``: for a bound method, by its instance's class
    (not the class that defines it: an inherited test method runs on the subclass), with
    the instance pickled (:class:`SemcheckError` when it does not pickle)."""
    owner = getattr(target, "__self__", None) if inspect.ismethod(target) else None
    named: Any = owner if inspect.isclass(owner) else type(owner) if owner is not None else target
    code = getattr(target, "__code__", None)
    module_name = getattr(named, "__module__", None)
    module = sys.modules.get(module_name or "", None)
    file = getattr(module, "__file__", None) or (code.co_filename if code else None)
    if not file or not os.path.isfile(file):
        raise SemcheckError(f"{target!r} is not defined in a file the child process can import")
    qualname = getattr(named, "__qualname__", "")
    if named is not target:
        qualname = f"{qualname}.{target.__name__}"
    if not qualname or "<locals>" in qualname or "<lambda>" in qualname:
        raise SemcheckError(f"{target!r} must be a module-level function (or a method of a module-level class): "
                            "the child process finds it by name")
    if inspect.iscoroutinefunction(target) or inspect.isasyncgenfunction(target):
        raise SemcheckError(f"{qualname} is an `async def` function, and coroutines are not supported: semcheck "
                            "captures the kernels a function calls by calling it, and calling a coroutine function "
                            "runs none of its body. Make it a plain `def` (it may run a coroutine itself, with "
                            "asyncio.run)")
    instance = None
    if owner is not None and not inspect.isclass(owner):
        try:
            instance = pickle.dumps(owner)
        except Exception as e:  # pickling runs the instance's own code: whatever it raises
            raise SemcheckError(f"{qualname} is a method of an instance that cannot be sent to the child process "
                                f"({type(e).__name__}: {e}): the child calls the method on a copy of the instance, "
                                "so its attributes must be picklable") from None
    return _Target(file, module_name, qualname, instance)


#: How long after an export's own time budget the API stops waiting for ``semcheck
#: supervise``, which enforces that budget itself.
_BACKSTOP_SECONDS = 30.0


def _supervised(cmd: list[str], doing: str, max_seconds: float | None, max_memory_mib: int | None) -> list[str]:
    """``cmd`` run by ``semcheck supervise``: in a process group of its own, under the time
    budget (if any) and the memory budget (``max_memory_mib``, else the binary's default,
    8192 MiB) of everything it starts, and ended with every process descended from it, one
    that left its group (a daemon) included (``docs/safety.md``)."""
    out = [semcheck_binary(), "supervise", "--doing", doing]
    if max_seconds:
        out += ["--max-seconds", f"{max_seconds:g}"]
    if max_memory_mib:
        out += ["--max-memory-mib", str(max_memory_mib)]
    return out + ["--", *cmd]


def _stop_note(stderr: str) -> str | None:
    """What stopped a supervised export (``stopped by the time budget of 8 s while ...``),
    from ``semcheck supervise``'s line on stderr, if a budget or an interruption did."""
    for line in reversed(stderr.splitlines()):
        head, sep, detail = line.partition(": incomplete: ")
        if sep and head.startswith("semcheck: ") and detail.startswith("stopped by "):
            return detail.removesuffix("; nothing was proved")
    return None


#: What the session's export server says it does, in a budget's stop line.
_SERVING = "serving exports"
_session_now: Session | None = None
_session_lock = threading.Lock()


def _session(max_memory_mib: int | None, env: dict[str, str]) -> Session | None:
    """The session's export server for an export under ``max_memory_mib`` in the
    environment ``env`` (started, or restarted with that budget or other values of the
    variables read at start-up, as needed); ``None`` with ``SEMCHECK_EXPORT=process`` and
    outside the main thread. Called with :data:`_session_lock` held."""
    global _session_now
    if os.environ.get("SEMCHECK_EXPORT") == "process" or threading.current_thread() is not threading.main_thread():
        return None
    if _session_now is not None and not _session_now.usable(max_memory_mib, env):
        _session_now.close(kill=True)
        _session_now = None
    if _session_now is None:
        cmd = [sys.executable, "-m", "semcheck.frontend", "serve", "--jobs", "1"]
        try:
            _session_now = Session(_supervised(cmd, _SERVING, None, max_memory_mib), env, max_memory_mib)
        except OSError as e:
            raise SemcheckError(f"export: cannot run {semcheck_binary()}: {e}") from None
    return _session_now


@atexit.register
def close_session() -> None:
    """Ends the session's export server, if one runs (at exit, and at the end of a pytest
    session); the next export starts another."""
    global _session_now
    with _session_lock:
        if _session_now is not None:
            _session_now.close()
            _session_now = None


def _older_binary(stderr: str) -> None:
    if "unrecognized subcommand 'supervise'" in stderr:
        raise SemcheckError(f"the semcheck binary {semcheck_binary()} is older than this package (it has no "
                            "`supervise` command): install matching versions")


def _export_in_session(session: Session, request: dict, budget: float, doing: str) -> str:
    """One export through the session's server; its stderr. Raises when it was stopped."""
    start = time.monotonic()
    with _signals_end_child():
        outcome = session.export(request, budget)
    if outcome.timed_out:
        raise SemcheckError(f"export: stopped by the time budget of {budget:g} s while {doing}, after "
                            f"{_seconds(time.monotonic() - start)}")
    if outcome.server_ended is not None:
        stop = _stop_note(outcome.server_ended)
        if stop:
            raise SemcheckError(f"export: {stop.replace(_SERVING, doing)}")
        _older_binary(outcome.server_ended)
        raise SemcheckError(f"the export server ended while {doing}:\n{outcome.server_ended[-4000:]}")
    if not os.path.exists(request["out"]):
        raise SemcheckError(_no_document(doing, _exit_code(outcome.status), outcome.stderr))
    return outcome.stderr


def _seconds(seconds: float) -> str:
    """A time taken, with the precision that shows it: ``12.3 s``; under a second, two
    significant digits (``0.012 s``, so that a budget of 0.01 s is not overrun in
    ``0.0 s``), under a millisecond in ``ms``."""
    if seconds >= 1:
        return f"{seconds:.1f} s"
    return f"{seconds:.2g} s" if seconds >= 0.001 else f"{seconds * 1000:.2g} ms"


def _no_document(doing: str, code: int, stderr: str) -> str:
    """Why an export that wrote no document ended, in words, with the end of its stderr
    (only the refusal, when the child refused a check at its module's top level)."""
    refused = _refusal(stderr) if code > 0 else None
    if refused is not None:
        return refused
    if code < 0:
        why = f"the export was {_ended(code)} while {doing}"
    elif code == 0:
        why = (f"the export ended (exit 0) while {doing}, before its kernels were reported: the code called "
               "os._exit, or ended the process another way")
    else:
        why = f"the export ended without a document ({_ended(code)}) while {doing}"
    tail = stderr.strip()[-4000:]
    return f"{why}:\n{tail}" if tail else why


def _exit_code(status: int | None) -> int:
    """A raw ``waitpid`` status as ``subprocess`` gives a return code (``-signal``)."""
    return -signal.SIGKILL if status is None else os.waitstatus_to_exitcode(status)


def _script_file(path: Any) -> None:
    """Raises unless ``path`` names a file to run as a kernel script."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"a kernel file is a path (str or os.PathLike), not {path!r}; a function goes to "
                        "semcheck.check")
    if not os.path.exists(path):
        raise SemcheckError(f"no such file: {os.fspath(path)}")
    if not os.path.isfile(path):
        what = "a directory" if os.path.isdir(path) else "not a regular file"
        raise SemcheckError(f"{os.fspath(path)} is not a kernel file (a Python script that calls its kernels): it is "
                            f"{what}")


#: Why a function takes no ``script_args``.
_FUNCTION_SCRIPT_ARGS = "script_args go to a kernel file's script; a function is called with its own arguments"


def export(target: str | os.PathLike | Callable, *args: Any, devices: int, kernel: str | None = None,
           max_seconds: float | None = None, max_memory_mib: int | None = None, interpret_values: bool = False,
           script_args: Sequence[str] = (), **kwargs: Any) -> dict:
    """Exports the kernels of a script (a path) or of ``target(*args, **kwargs)`` with
    ``devices`` devices, in a child process run by ``semcheck supervise`` within
    ``max_seconds`` (default 900 s) and ``max_memory_mib`` (default 8192 MiB); returns the
    JSON document. With ``interpret_values``, the integers its kernels compute and copy
    into SMEM are read with the values of a run in JAX's TPU interpret mode (``semcheck
    check --interpret-values``). A script (a path) runs with ``script_args`` as its
    arguments (``sys.argv[1:]``). A wrong option raises ``TypeError`` or ``ValueError``
    (:mod:`semcheck._options`) before anything runs."""
    _refuse_in_child("export")
    devices = _options.mesh_size(devices)
    kernel = _options.name(kernel, "kernel")
    max_seconds = _options.seconds(max_seconds)
    max_memory_mib = _options.count(max_memory_mib, "max_memory_mib", _options.MAX_MEMORY_MIB)
    script_args = _options.script_args(script_args)
    if callable(target) and script_args:
        raise SemcheckError(_FUNCTION_SCRIPT_ARGS)
    if not callable(target):
        _script_file(target)
    _sweep_once()
    with TempFolder() as tmp:
        out = os.path.join(tmp, "doc.json")
        request: dict[str, Any] = {"devices": devices, "out": out, "tpu": os.environ.get("SEMCHECK_TPU") or None,
                                   "interpret_values": interpret_values, "kernel": kernel,
                                   "argv": list(script_args)}
        if callable(target):
            found = _callable_target(target)
            file, qualname = found.file, found.qualname
            what = qualname
            payload = os.path.join(tmp, "call.pickle")
            try:
                with open(payload, "wb") as f:
                    pickle.dump((args, kwargs, list(sys.path), found.module, found.instance), f)
            except Exception as e:  # pickling runs the arguments' own code: whatever it raises
                raise SemcheckError(f"the arguments of {qualname} cannot be sent to the child process "
                                    f"({type(e).__name__}: {e})") from None
            cmd = [sys.executable, "-m", "semcheck.frontend._call", file, qualname, payload, str(devices), out]
            cmd += [kernel] if kernel else []
            request.update(file=file, call={"qualname": qualname, "payload": payload})
        else:
            cmd = [sys.executable, "-m", "semcheck.frontend", "export", os.fspath(target), "--devices",
                   str(devices), "--out", out] + ([f"--kernel={kernel}"] if kernel else []) + ["--", *request["argv"]]
            what = os.path.basename(os.fspath(target))
            request.update(file=os.path.abspath(os.fspath(target)))
        budget = max_seconds or DEFAULT_EXPORT_SECONDS
        doing = f"tracing {what} at N = {devices}"
        # The session's server, unless another thread of this process is using it.
        if _session_lock.acquire(blocking=False):
            try:
                env = _env()
                session = _session(max_memory_mib, env)
                if session is not None:
                    # This export's own environment and directory, as a process of its own would have.
                    request.update(env=env, cwd=os.getcwd())
                    _export_in_session(session, request, budget, doing)
                    with open(out) as f:
                        return json.load(f)
            finally:
                _session_lock.release()
        extra = {"SEMCHECK_INTERPRET_VALUES": "1"} if interpret_values else None
        proc = _run(_supervised(cmd, doing, budget, max_memory_mib), "export", budget + _BACKSTOP_SECONDS, extra)
        if not os.path.exists(out):
            stop = _stop_note(proc.stderr)
            if stop:
                raise SemcheckError(f"export: {stop}")
            _older_binary(proc.stderr)
            raise SemcheckError(_no_document(doing, proc.returncode, proc.stderr))
        with open(out) as f:
            return json.load(f)


def _ended(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "an unknown signal"
        return f"killed by signal {-code} ({name})"
    return f"exit {code}"


def semcheck_binary() -> str:
    """``SEMCHECK_BIN``, else the binary installed with this package, else ``semcheck`` on
    ``PATH``."""
    try:
        return find_binary()
    except BinaryNotFound as e:
        raise SemcheckError(str(e)) from None


def _schedule(violation: dict) -> str | None:
    """The counterexample's events, one per line, each with its source line."""
    events = violation.get("events") or []
    if not events:
        return None
    lines = []
    for e in events:
        mark = "  <- breaks the rule" if e["index"] == violation.get("breaking_event") else ""
        lines.append(f"  {e['index']:>4}. {_event_line(e)}{mark}")
    return "\n".join(lines)


def _event_line(e: dict) -> str:
    """An event's text, with ``(file.py:line)`` when the text does not name it."""
    if e.get("file") and e.get("line"):
        short = f"{os.path.basename(e['file'])}:{e['line']}"
        if short not in e["text"]:
            return f"{e['text']}   ({short})"
    return e["text"]


def _explanation(violation: dict, whole: bool = False) -> str | None:
    """The violation's causal core as ``semcheck check`` prints it: a ``why`` line (which
    says where the whole schedule is, or with ``whole``, that it follows), the summary of
    the events that only order the rest, then each event and its role."""
    points = violation.get("explanation") or []
    if not points:
        return None
    total = len(violation.get("events") or [])
    # Counted as `semcheck check` counts them: the events shown, once each (a deadlock's
    # stuck devices are not events).
    shown = len({p["index"] for p in points if p.get("role") != "summary" and p.get("index")})
    where = "the whole schedule below" if whole else "the whole schedule: KernelVerdict.trace, or --semcheck-schedule"
    lines = [f"  why ({shown} of {total} events; {where}):"]
    for p in points:
        if p.get("role") == "summary":
            lines.append(f"        - {p['text']}")
            continue
        index = f"{p['index']:>4}." if p.get("index") else "    -"
        lines.append(f"  {index} {_event_line(p)}")
        role = p["role"] + (", the wrong one" if p.get("wrong") else "")
        lines.append(f"           [{role}] {p['note']}" if p.get("note") else f"           [{role}]")
    return "\n".join(lines)


def _location(violation: dict) -> str | None:
    """``file.py:line`` of the violation, the file relative to the current directory when
    it is under it."""
    loc = violation.get("location")
    if not loc:
        return None
    file = loc["file"]
    if os.path.isabs(file):
        rel = os.path.relpath(file)
        file = file if rel.startswith("..") else rel
    return f"{file}:{loc['line']}"


def _verdicts_of(doc: dict, options: Options) -> list[KernelVerdict]:
    script = doc.get("script") or {}
    raised = script.get("error") if script.get("status") == "raised" else None
    if isinstance(raised, dict) and _REFUSED in str(raised.get("message")):
        # A check the function called, refused in the child: that refusal is all there is
        # to say (it names the line).
        raise SemcheckError(str(raised["message"]).removeprefix("SemcheckError: "), script_error=raised)
    binary = semcheck_binary()
    with TempFolder() as tmp:
        path = os.path.join(tmp, "doc.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        timeout = (options.max_seconds + 60) if options.max_seconds else None
        proc = _run([binary, "check", path, "--json", *options.flags()], "semcheck check", timeout)
        try:
            out = json.loads(proc.stdout)
        except json.JSONDecodeError as e:
            raise SemcheckError(f"semcheck check printed no JSON ({e}; {_ended(proc.returncode)}):\n"
                                f"{proc.stderr.strip()[-4000:]}") from None
    if out.get("schema_version") != SCHEMA_VERSION:
        raise SemcheckError(f"the semcheck binary {binary} writes JSON schema {out.get('schema_version')!r}, this "
                            f"package reads {SCHEMA_VERSION}: install matching versions")
    if out.get("error"):
        # The document is this call's own temporary file: its path says nothing to the user,
        # the script's file or the function's name does.
        name = script.get("function") or os.path.basename(script.get("file") or "") or "the export"
        message = out["error"]["message"]
        message = message[len(path) + 2:] if message.startswith(f"{path}: ") else message
        message = message.replace(path, name)
        partial = _partial_capture(doc)
        if partial:
            message += f"\n  note: {partial}"
        raise SemcheckError(message, script_error=raised)
    notes = _warnings_of(doc)
    verdicts = []
    script_file = (doc.get("script") or {}).get("file")
    for r in out["cases"]:
        if script_file:
            # The case was read from this call's temporary document, gone now: it names
            # the script it was exported from instead.
            r["file"] = script_file
            if isinstance(r.get("source"), dict) and r["source"].get("path") == path:
                r["source"]["path"] = script_file
            if isinstance(r.get("case"), str):
                r["case"] = r["case"].replace(path, script_file)
        # Of several kernels, one that could not be checked is a verdict "error" with its
        # reason (the others are still checked).
        violation = r.get("violation") or {}
        incomplete = r.get("incomplete") or {}
        # A case the watchdog stopped names only itself: the document says the rest.
        kernels = [k.get("name") for k in doc.get("kernels") or [] if k.get("communicates")]
        only = kernels[0] if len(kernels) == 1 else None
        verdicts.append(KernelVerdict(
            kernel=r.get("kernel") or options.kernel or only or "?",
            devices=int(r.get("devices") or doc.get("devices") or 0),
            verdict=r.get("verdict", "?"), rule=violation.get("rule"),
            message=violation.get("message") or incomplete.get("detail") or r.get("error") or "",
            trace=_schedule(violation), result=r, requires=None if r.get("requires") is None else list(r["requires"]),
            location=_location(violation), explanation=_explanation(violation),
            never_executed=[e["statement"] for e in (r.get("coverage") or {}).get("never_executed") or []],
            warnings=list(notes), _source=(doc, options)))
    return verdicts


def _partial_capture(doc: dict) -> str | None:
    """When the function (or the script) raised after some of its kernels were captured:
    that, in words (the exception, its line, the kernels captured), and that any kernel
    after that point was not checked."""
    for w in doc.get("warnings") or []:
        error = w.get("error") if isinstance(w, dict) else None
        if not isinstance(error, dict):
            continue
        script = doc.get("script") or {}
        who = f"`{script['function']}`" if script.get("function") else \
            os.path.basename(script.get("file") or "") or "the script"
        loc = error.get("loc") or {}
        at = f" at {_location({'location': loc})}" if loc.get("file") and loc.get("line") else ""
        names = list(dict.fromkeys(k.get("name") for k in doc.get("kernels") or [] if k.get("name")))
        after = f"after calling {', '.join(names)}" if names else "after its first kernels"
        # `AssertionError: ` of a bare `assert`: the exception's name alone.
        raised = str(error.get("message") or "").strip().removesuffix(":") or "an exception"
        return (f"{who} at N = {doc.get('devices')} raised {raised}{at}, {after}: "
                "any kernel it would have called after that point was not captured, so not checked. Kernel outputs "
                "are zero-filled placeholders while semcheck traces, so host-side checks of them fail there: guard "
                "them with `if not semcheck.is_exporting():`")
    return None


def _warnings_of(doc: dict) -> list[str]:
    """What an exported document warns of, in words."""
    partial = _partial_capture(doc)
    out = [partial] if partial else []
    out += [w["message"] for w in doc.get("warnings") or []
            if isinstance(w, dict) and not isinstance(w.get("error"), dict) and w.get("message")]
    return out


def warn_if_partial(verdicts: Iterable[KernelVerdict], at: tuple[str, int] | None = None,
                    stacklevel: int = 3) -> None:
    """A :class:`SemcheckPartialCaptureWarning` for each export whose function raised after
    its kernels were captured, issued at ``at`` (file, line: the pytest marker's test) or
    else ``stacklevel`` frames up (the line that called :func:`check`)."""
    said = set()
    for v in verdicts:
        partial = _partial_capture(v._source[0]) if v._source else None
        if partial is None or partial in said:
            continue
        said.add(partial)
        warning = SemcheckPartialCaptureWarning(partial)
        if at is None:
            warnings.warn(warning, stacklevel=stacklevel)
        else:
            warnings.warn_explicit(warning, SemcheckPartialCaptureWarning, *at)


def _check(target: str | os.PathLike | Callable, args: tuple, kwargs: dict, devices: Any, kernel: Any,
           expect: Any, repeat: Any, dma_order: Any, dma_landing: Any, max_seconds: Any, max_memory_mib: Any,
           interpret_values: bool, script_args: Sequence[str]) -> list[KernelVerdict]:
    """The verdicts of a function (``target(*args, **kwargs)``) or a script (a path) at
    each mesh size, the options validated first; warns of nothing."""
    chosen = _options.validate(devices, kernel, expect, repeat, dma_order, dma_landing, max_seconds, max_memory_mib)
    script_args = _options.script_args(script_args)
    options: Options = chosen
    if callable(target):
        if script_args:
            raise SemcheckError(_FUNCTION_SCRIPT_ARGS)
        _callable_target(target)  # before anything runs: the child can find it, and its instance pickles
    else:
        _script_file(target)
    # A function's own keywords go to it (a `script_args` among them is refused by export).
    call = kwargs if callable(target) else {"script_args": script_args}
    out = []
    for n in chosen.devices:
        doc = export(target, *args, devices=n, kernel=chosen.kernel, max_seconds=chosen.max_seconds,
                     max_memory_mib=chosen.max_memory_mib, interpret_values=interpret_values, **call)
        out.extend(_verdicts_of(doc, options))
    return out


def check(fn: Callable, *args: Any, devices: int | Iterable[int] = (2, 3, 4), kernel: str | None = None,
          expect: str | None = None, repeat: int | None = None, dma_order: str | None = None,
          dma_landing: str | None = None, max_seconds: float | None = None, max_memory_mib: int | None = None,
          interpret_values: bool = False, **kwargs: Any) -> list[KernelVerdict]:
    """Checks the kernels ``fn(*args, **kwargs)`` calls, at each device count, under the
    hardware assumptions ``dma_order`` and ``dma_landing`` (see :class:`Options`), each
    device count within ``max_seconds`` (tracing and checking each) and ``max_memory_mib``;
    ``interpret_values`` as :func:`export`. ``devices`` is a mesh size or an iterable of
    them (ints >= 1; not a string); a wrong option raises ``TypeError`` or ``ValueError``
    before anything runs (:mod:`semcheck._options`). When ``fn`` raised after some of its
    kernels were captured, each verdict says so in ``warnings`` and a
    :class:`SemcheckPartialCaptureWarning` is issued at the line that called this."""
    _refuse_in_child("check")
    if not callable(fn):
        raise TypeError(f"semcheck.check checks a function, not {fn!r} (a kernel file goes to semcheck.check_file)")
    verdicts = _check(fn, args, kwargs, devices, kernel, expect, repeat, dma_order, dma_landing, max_seconds,
                      max_memory_mib, interpret_values, ())
    warn_if_partial(verdicts)
    return verdicts


def check_file(path: str | os.PathLike, *, devices: int | Iterable[int] = (2, 3, 4), kernel: str | None = None,
               expect: str | None = None, repeat: int | None = None, dma_order: str | None = None,
               dma_landing: str | None = None, max_seconds: float | None = None,
               max_memory_mib: int | None = None, interpret_values: bool = False,
               script_args: Sequence[str] = ()) -> list[KernelVerdict]:
    """Checks the kernels of a script, at each device count (options as :func:`check`),
    the script run with ``script_args`` as its arguments (``sys.argv[1:]``)."""
    _refuse_in_child("check_file")
    if callable(path):
        raise TypeError(f"semcheck.check_file checks a kernel file, not {path!r} (a function goes to semcheck.check)")
    verdicts = _check(path, (), {}, devices, kernel, expect, repeat, dma_order, dma_landing, max_seconds,
                      max_memory_mib, interpret_values, script_args)
    warn_if_partial(verdicts)
    return verdicts


def assert_proved(target: str | os.PathLike | Callable, *args: Any, devices: int | Iterable[int] = (2, 3, 4),
                  kernel: str | None = None, expect: str | None = None, repeat: int | None = None,
                  dma_order: str | None = None, dma_landing: str | None = None, max_seconds: float | None = None,
                  max_memory_mib: int | None = None, interpret_values: bool = False,
                  script_args: Sequence[str] = (), **kwargs: Any) -> list[KernelVerdict]:
    """Fails with every non-proved verdict, what it requires, and its counterexample trace
    (``script_args``: a script's arguments, as :func:`check_file`); warns as :func:`check`
    does, and of a proof with statements that ran in no schedule."""
    _refuse_in_child("assert_proved")
    verdicts = _check(target, args, kwargs, devices, kernel, expect, repeat, dma_order, dma_landing, max_seconds,
                      max_memory_mib, interpret_values, script_args)
    warn_if_partial(verdicts)
    bad = [v for v in verdicts if v.verdict != "proved"]
    if not verdicts:
        raise AssertionError("no kernel was checked")
    if bad:
        raise AssertionError("\n\n".join(str(v) for v in bad))
    warn_if_vacuous(verdicts)
    return verdicts


def warn_if_vacuous(verdicts: Iterable[KernelVerdict], at: tuple[str, int] | None = None) -> None:
    """A :class:`SemcheckVacuityWarning` for each proof with statements that ran in no
    schedule, issued at ``at`` (file, line: the pytest marker's test) or else at the line
    that called :func:`assert_proved`."""
    for v in verdicts:
        if v.verdict == "proved" and v.never_executed:
            warning = SemcheckVacuityWarning(
                f"{v.kernel} is proved at N = {v.devices}, but these statements ran in no schedule, so the proof says "
                f"nothing about them: {'; '.join(v.never_executed)}")
            if at is None:
                warnings.warn(warning, stacklevel=3)
            else:
                warnings.warn_explicit(warning, SemcheckVacuityWarning, *at)
