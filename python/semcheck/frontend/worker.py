"""An export worker of the export server (:mod:`~semcheck.frontend.server`): a child
forked from the server's pristine process that runs consecutive exports of **one
script** (the same file, the same ``SEMCHECK_TPU``), at whatever device counts they ask
for, so that the second and later exports pay neither the fork's copied pages nor JAX's
first-call costs again (psum.py at N = 2..64 through one worker slot: 6.6-7.3 instead of
8.7-9.0 CPU-seconds).

Between two exports the worker ends JAX's backend (its device count is then free to
change: ``jax_num_cpu_devices``), drops what the front end kept, and puts back what the
script may have changed: the modules it imported (removed from ``sys.modules``, so the
next run imports them afresh; the files of packages imported before, which JAX imports
lazily, stay), the public attributes of modules that were there before (a patched
``pltpu.get_tpu_info``, say), the environment, the working directory, ``sys.path``,
``sys.meta_path``, ``sys.argv``, the standard streams, signal handlers and timers, JAX's
options and the TPU sizes ``SEMCHECK_TPU`` pretends. Each document is then the one a
fresh process writes (``python/tests/test_server.py`` compares them). What it cannot see
is state kept inside objects that were there before (a list of a preloaded module the
script appended to): a script's second run reads it as its first left it
(``SEMCHECK_EXPORT=process``: a process of its own for each export).

A worker **retires** (exits; the server kills its process group and forks a fresh one
for the next export) when it cannot promise that: the export did not end with status 0,
the script left a process or a thread running, an option of JAX cannot be set back, or
this JAX cannot restart its backend; and after :data:`MAX_EXPORTS` exports, which bounds
the memory each export leaves behind.

Protocol: a request line on the worker's pipe (the server's request, see there); one
answer line back, ``{"status": RAW, "max_rss_kib": K, "retire": bool}``, ``RAW`` a
``waitpid`` status as if the export had been a process of its own; its peak resident
memory from ``VmHWM``, reset before each export (``/proc/self/clear_refs``), else the
worker's lifetime peak.
"""

from __future__ import annotations

# Bound when the front end is imported, before a script runs: a script that replaces
# `json.dumps` (or the like) does not change how the worker reads requests and answers.
from json import dumps, loads
import operator
import os
import resource
import signal
import sys
import threading
import traceback
import types
from typing import Any, Callable

from .._procs import processes
from . import jaxcompat, server
from .export import forget_exports


class Baseline:
    """What a script run may change in this process, as it is before the first export."""

    def __init__(self) -> None:
        self.modules = dict(sys.modules)
        self.packages = {name: [os.path.realpath(d) + os.sep for d in getattr(m, "__path__", [])]
                         for name, m in self.modules.items() if "." not in name}
        self.attributes = {name: vars(m).copy() for name, m in self.modules.items()
                           if isinstance(m, types.ModuleType) and name != "__main__"}
        self.environ = dict(os.environ)
        self.cwd = os.getcwd()
        self.lists: list[tuple[list[Any], list[Any]]] = [
            (lst, list(lst)) for lst in (sys.path, sys.meta_path, sys.path_hooks, sys.argv)]
        self.streams = (sys.stdin, sys.stdout, sys.stderr)
        self.signals = {s: signal.getsignal(s) for s in signal.valid_signals() if _settable(s)}
        self.threads = _threads()
        self.config = jaxcompat.config_values()
        self.tpu_registry = jaxcompat.keep_tpu_registry()

    def restore(self) -> str | None:
        """Puts the process back (JAX's backend already ended); what could not be put
        back, or ``None``."""
        if _threads() != self.threads:
            return "the script left a thread running"
        if not jaxcompat.restore_config(self.config):
            return "an option of JAX cannot be set back"
        self.tpu_registry()
        for name in [n for n in sys.modules if n not in self.modules]:
            if not _lazily_imported(name, sys.modules[name], self.packages):
                del sys.modules[name]
        sys.modules.update(self.modules)
        for name, saved in self.attributes.items():
            _restore_public(self.modules[name], saved)
        os.environ.clear()
        os.environ.update(self.environ)
        os.chdir(self.cwd)
        for lst, items in self.lists:
            lst[:] = items
        sys.path_importer_cache.clear()
        sys.stdin, sys.stdout, sys.stderr = self.streams
        # A timer the script armed would fire in the next export.
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        for s, handler in self.signals.items():
            if signal.getsignal(s) is not handler and handler is not None:
                try:
                    signal.signal(s, handler)
                except (OSError, ValueError):
                    return f"signal {s.name}'s handler cannot be set back"
        return None


def _settable(s: signal.Signals) -> bool:
    return s not in (signal.SIGKILL, signal.SIGSTOP)


def _imported(v: Any) -> bool:
    """Whether ``v`` is a module that ``sys.modules`` holds (an import bound it)."""
    return isinstance(v, types.ModuleType) and sys.modules.get(v.__name__) is v


def _restore_public(module: types.ModuleType, saved: dict[str, Any]) -> None:
    """Puts back a module's public attributes (``saved``: its whole namespace as it was),
    keeping the submodules imported since and its private names (JAX's own state)."""
    now = vars(module)
    if now.keys() == saved.keys() and all(map(operator.is_, now.values(), saved.values())):
        return  # unchanged: the common case, at C speed
    for k, v in list(now.items()):
        if k.startswith("_") or (k in saved and saved[k] is v) or _imported(v):
            continue
        if k in saved:
            now[k] = saved[k]
        else:
            del now[k]
    for k, v in saved.items():
        if k not in now and not k.startswith("_"):
            now[k] = v


def _lazily_imported(name: str, module: Any, packages: dict[str, list[str]]) -> bool:
    """Whether ``module``, imported since the baseline, is a file of a package that was
    imported already (JAX imports some of its modules lazily and registers what they
    define: they stay)."""
    dirs = packages.get(name.partition(".")[0])
    where = getattr(module, "__file__", None)
    return bool(dirs and where and any(os.path.realpath(where).startswith(d) for d in dirs))


def _threads() -> int:
    """The threads running Python code in this process (``sys._current_frames``): a thread
    a script starts with ``_thread`` is not in ``threading``'s count, and could start a
    process after the export's end. (The kernel's count, ``/proc/self/task``, also has the
    native threads JAX's backend leaves behind, which no script started.)"""
    return len(sys._current_frames())


def _others_in_group() -> bool:
    """Whether a process other than this one is in this process's group (the script
    started one and left it running)."""
    me = os.getpid()
    group = os.getpgid(0)
    return any(p.group == group for pid, p in processes().items() if pid != me)


def _reset_peak() -> bool:
    """Resets this process's peak resident memory (``VmHWM``); ``False`` if it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_kib(reset: bool) -> int:
    """The peak resident memory of the export just run, with its waited-for children's."""
    peak = 0
    if reset:
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = int(line.split()[1])
        except (OSError, ValueError, IndexError):
            peak = 0
    if not peak:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return max(peak, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)


def _take_environment(env: dict[str, str]) -> None:
    """The caller's environment for one export: its variables but those read when the
    server started, which stay the server's (``Baseline`` puts all back after)."""
    for name in [n for n in os.environ if not server.read_at_startup(n) and n not in env]:
        del os.environ[name]
    os.environ.update({n: v for n, v in env.items() if not server.read_at_startup(n)})


def _export(req: dict, main: Callable[[list[str]], int]) -> int:
    """One export with its stderr into ``req["err"]``; its exit code."""
    err = os.open(req["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(err, 2)
    os.close(err)
    if "env" in req:
        _take_environment(req["env"])
    if "cwd" in req:
        os.chdir(req["cwd"])
    if req.get("tpu"):
        os.environ["SEMCHECK_TPU"] = req["tpu"]
    if req.get("interpret_values"):
        os.environ["SEMCHECK_INTERPRET_VALUES"] = "1"
    try:
        call, kernel = req.get("call"), req.get("kernel")
        if call:  # a function of the Python API's caller: semcheck.frontend._call's arguments
            from ._call import main as call_main

            return call_main([req["file"], call["qualname"], call["payload"], str(req["devices"]), req["out"],
                              *([kernel] if kernel else [])])
        return main(["export", "--no-lower", req["file"], "--devices", str(req["devices"]), "--out", req["out"],
                     *([f"--kernel={kernel}"] if kernel else []), "--", *req.get("argv", [])])
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: BLE001 - reported on the export's stderr
        traceback.print_exc()
        return 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass


#: How many exports a worker serves at most: each leaves a few megabytes that ending
#: JAX's backend does not give back (about 4 MB at psum.py's sizes; some of the backends
#: JAX ended stay alive), so a worker retires before that adds up.
MAX_EXPORTS = 16


def _retire_reason(code: int, served: int, baseline: Baseline | None, restartable: bool) -> str | None:
    if code != 0:
        return f"the export ended with status {code}"
    if baseline is None:
        return "what an export may change in this process could not be saved before the first"
    if not restartable:
        return "this JAX cannot restart its backend"
    if served >= MAX_EXPORTS:
        return f"it has served {served} exports"
    if _others_in_group():
        return "the script left a process running"
    jaxcompat.end_backend()
    forget_exports()
    return baseline.restore()


def work(requests: Any, answers: Any) -> None:
    """The worker's loop: one export per request line read from ``requests`` (a binary
    file), one answer line written to ``answers``, until the pipe ends or it retires."""
    from .__main__ import main

    restartable = jaxcompat.can_restart_backend()
    if restartable:
        from jax.extend import backend  # noqa: F401 - imported before the baseline

    try:
        baseline: Baseline | None = Baseline()
    except Exception:  # noqa: BLE001 - then this worker serves one export and retires
        baseline = None
    for served, line in enumerate(requests, 1):
        req = loads(line)
        if restartable:
            jaxcompat.set_cpu_devices(int(req["devices"]))
        reset = _reset_peak()
        code = _export(req, main)
        peak = _peak_kib(reset)
        try:
            why = _retire_reason(code, served, baseline, restartable)
        except Exception as e:  # noqa: BLE001 - whatever failed, this process is not reused
            first = (str(e).splitlines() or [""])[0]
            why = f"putting the process back failed: {type(e).__name__}: {first}"
        answers.write(dumps({"status": (code & 0xFF) << 8, "max_rss_kib": peak, "retire": why is not None,
                                  "why": why}) + "\n")
        answers.flush()
        if why is not None:
            return


__all__ = ["Baseline", "work"]
