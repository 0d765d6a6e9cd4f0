"""The processes of this machine, as ``/proc`` lists them: what the export worker reads to
see whether a script left a process in its group, and what the API's export session
reads to find what an export left running under ``semcheck supervise``."""

from __future__ import annotations

import contextlib
import dataclasses
import os


@dataclasses.dataclass(frozen=True)
class Proc:
    """What is read of one process's ``/proc/PID/stat`` line."""

    #: The parent's pid.
    ppid: int
    #: Its process group.
    group: int
    #: When it started, in clock ticks after boot.
    start: int
    #: It has ended and waits to be reaped.
    zombie: bool


def processes() -> dict[int, Proc]:
    """Every process, by pid, from one reading of ``/proc`` (empty where there is none)."""
    out: dict[int, Proc] = {}
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    # The command (field 2) is in parentheses and may hold spaces and
                    # parentheses; after it: state, ppid, pgrp, ..., starttime (the 20th).
                    fields = f.read().rpartition(b")")[2].split()
            except OSError:
                continue  # ended meanwhile
            if len(fields) > 19:
                out[int(name)] = Proc(ppid=int(fields[1]), group=int(fields[2]), start=int(fields[19]),
                                      zombie=fields[0] == b"Z")
    return out


def descendants(root: int) -> dict[int, Proc]:
    """The running processes descended from ``root`` (zombies left out), by pid."""
    procs = {pid: p for pid, p in processes().items() if not p.zombie}
    children: dict[int, list[int]] = {}
    for pid, p in procs.items():
        children.setdefault(p.ppid, []).append(pid)
    out: dict[int, Proc] = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        out[pid] = procs[pid]
        todo.extend(children.get(pid, []))
    return out


#: The variable in which the semcheck binary gives the processes it starts its own pid
#: (``semcheck::children::PARENT_PID``).
PARENT_PID = "SEMCHECK_PARENT_PID"


def starting_parent() -> int:
    """The pid of the process that started this one: the one the semcheck binary named in
    :data:`PARENT_PID` (removed from the environment, so that the user's script and what it
    starts do not inherit it), else this process's parent now. A process that finds
    itself orphaned (see :func:`orphaned`) runs nothing of the user's: semcheck ended while
    it was starting, and nothing of it may outlive semcheck."""
    named = os.environ.pop(PARENT_PID, "")
    return int(named) if named.isdigit() else os.getppid()


def orphaned(parent: int) -> bool:
    """Whether ``parent`` (from :func:`starting_parent`) is no longer this process's parent:
    it ended, and this process was reparented."""
    return os.getppid() != parent
