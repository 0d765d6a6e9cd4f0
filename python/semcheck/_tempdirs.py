"""The API's temporary folders, and the removal of those a killed process left behind: the
rule of the binary's (``src/cleanup.rs``). A folder ``<tmp>/semcheck-<kind><pid>-<tag>``
has a lock file ``<folder>.lock`` beside it, on which its process holds an exclusive
``flock`` from before the folder exists until it is removed. The kernel drops a process's
locks however it ends (``SIGKILL``, an xdist worker's ``os._exit``): a folder whose lock
file no process holds is stale, and :func:`sweep` removes it. The lock's descriptor is not
inherited (Python opens files close-on-exec), so processes the owner started do not keep
its folder."""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import tempfile
import time
from types import TracebackType

#: The prefix of every folder (and lock file) of this module.
PREFIX = "semcheck-"

#: How old a lock file without its folder must be to be removed: younger, its process
#: may be between creating it and making the folder.
_ORPHAN_LOCK_SECONDS = 60.0


class TempFolder:
    """A temporary folder of this process, locked while it lives; removed (with its lock
    file) by :meth:`cleanup`, or on leaving a ``with`` block, which gives its path."""

    def __init__(self, kind: str = ""):
        parent = tempfile.gettempdir()
        name = f"{PREFIX}{kind}{os.getpid()}-{secrets.token_hex(4)}"
        self.lock_path = os.path.join(parent, f"{name}.lock")
        # Locked before the folder exists: a sweep that finds the folder finds it locked.
        self._lock = open(self.lock_path, "x")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.path = os.path.join(parent, name)
            os.mkdir(self.path, 0o700)
        except BaseException:
            self._unlock()
            raise

    def cleanup(self) -> None:
        """Removes the folder, then its lock file."""
        shutil.rmtree(self.path, ignore_errors=True)
        self._unlock()

    def _unlock(self) -> None:
        with contextlib.suppress(OSError):
            os.remove(self.lock_path)
        self._lock.close()

    def __enter__(self) -> str:
        return self.path

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.cleanup()


def sweep() -> list[str]:
    """Removes the stale folders of this module under the temporary directory (and their
    lock files, and lock files whose folder is gone after a minute); returns the folders
    removed. What another process removes meanwhile, or cannot be read, is left alone."""
    removed = []
    parent = tempfile.gettempdir()
    with contextlib.suppress(OSError):
        entries = [e for e in os.scandir(parent) if e.name.startswith(PREFIX) and e.name.endswith(".lock")]
        for entry in entries:
            with contextlib.suppress(OSError):
                fd = os.open(entry.path, os.O_WRONLY | os.O_NOFOLLOW)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # OSError while its process lives
                    folder = entry.path.removesuffix(".lock")
                    if os.path.isdir(folder) and not os.path.islink(folder):
                        shutil.rmtree(folder, ignore_errors=True)
                        removed.append(folder)
                    elif time.time() - os.fstat(fd).st_mtime < _ORPHAN_LOCK_SECONDS:
                        continue
                    os.remove(entry.path)
                finally:
                    os.close(fd)
    return removed

