"""Running a user's kernel file the way its author runs it.

A kernel file is run as ``python FILE ARGS`` runs it: as ``__main__``, with its folder
first on ``sys.path``. One kind of file cannot run that way: a module of a package that
imports its siblings relatively (``from .common import ring``), which its author runs as
``python -m package.module`` from the folder above the package. Such a file is run that
way here: under its dotted name as ``__main__``, after its package is imported, with the
folder above the outermost package (the first without an ``__init__.py``) first on
``sys.path``. A package's own ``__init__.py`` that imports relatively is imported as the
package (its kernel calls made when it is imported are seen; Python runs no
``__init__.py`` as ``__main__``).

Importing this module does not import JAX.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import os
import runpy
import sys
from typing import Any


def as_module(path: str) -> tuple[str, str] | None:
    """The dotted name ``python -m`` runs ``path`` under and the folder it is imported
    from, when ``path`` is a module of a package and imports relatively; ``None`` for a
    file run as a script."""
    folder, file = os.path.split(os.path.abspath(path))
    if not os.path.isfile(os.path.join(folder, "__init__.py")) or not _imports_relatively(path):
        return None
    stem = os.path.splitext(file)[0]
    parts = [] if stem == "__init__" else [stem]
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        folder, package = os.path.split(folder)
        parts.insert(0, package)
    return (".".join(parts), folder) if all(p.isidentifier() for p in parts) else None


def run_as_main(path: str, argv: list[str]) -> None:
    """Runs the kernel file ``path`` with ``argv`` as its arguments, as its author does
    (the module's docstring says how); ``sys.argv`` and ``sys.path`` are put back after."""
    path = os.path.abspath(path)
    module = as_module(path)
    old_argv, old_path = sys.argv, list(sys.path)
    sys.argv = [path, *argv]
    sys.path.insert(0, os.path.dirname(path) if module is None else module[1])
    try:
        if module is None:
            runpy.run_path(path, run_name="__main__")
        elif os.path.basename(path) == "__init__.py":
            importlib.import_module(module[0])
        else:
            runpy.run_module(module[0], run_name="__main__", alter_sys=True)
    finally:
        sys.argv = old_argv
        sys.path[:] = old_path


class StderrTail:
    """``sys.stderr`` while a script runs: writes through to the stream it replaces and
    keeps the last line of text written (what a script says as it exits: argparse's
    usage error, ``sys.exit``'s message)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.last = ""

    def write(self, text: str) -> int:
        """Writes ``text`` on; keeps its last non-blank line."""
        lines = [line.strip() for line in str(text).splitlines() if line.strip()]
        if lines:
            self.last = lines[-1][:500]
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def keeping(self) -> contextlib.AbstractContextManager:
        """``sys.stderr`` replaced by this tail for a block."""
        return contextlib.redirect_stderr(self)  # type: ignore[type-var]  # a stream in all but name


def exit_message(e: SystemExit, tail: StderrTail) -> str | None:
    """What a script's ``SystemExit`` says to the user; ``None`` for a normal end."""
    if e.code in (None, 0):
        return None
    if not isinstance(e.code, int):
        return f"the script exited: {e.code}"
    said = f" after printing `{tail.last}`" if tail.last else ""
    # 2 is argparse's (and the shell's) usage error.
    hint = (" (the script's own arguments go after `--`: `semcheck check FILE -- ARGS`)" if e.code == 2 else "")
    return f"the script exited with status {e.code}{said}{hint}"


def _imports_relatively(path: str) -> bool:
    """Whether the file has a relative import (one it cannot run as a script with); a
    file that does not parse is run as a script, which reports its syntax error."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return False
    return any(isinstance(node, ast.ImportFrom) and node.level > 0 for node in ast.walk(tree))
