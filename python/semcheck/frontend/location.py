"""Source locations of jaxpr equations, in the user's words.

A location is the innermost *user* frame of the equation's traceback (JAX's own
``source_info_util.user_frame``; frames of JAX, the standard library and this package
are excluded), with the text of the source line, and the chain of user frames up to
the kernel function (``stack``), so that ``psum.py:33`` inside ``neighbor_barrier`` can
also be shown as called from ``psum.py:73``.
"""

from __future__ import annotations

import ast
import functools
import io
import linecache
import os
import re
import tokenize
from typing import Any

from jax._src import source_info_util

from . import jaxcompat

_PACKAGE_DIR = os.path.dirname(os.path.realpath(__file__)) + os.sep
for _d in {_PACKAGE_DIR, os.path.dirname(__file__) + os.sep, os.path.dirname(os.path.abspath(__file__)) + os.sep}:
    source_info_util.register_exclusion(_d)


@functools.lru_cache(maxsize=None)
def is_ours(filename: str) -> bool:
    """Whether a frame belongs to this package (however it was imported). Cached: a
    kernel's equations name a few files thousands of times, and ``realpath`` asks the
    file system each time."""
    return os.path.realpath(filename).startswith(_PACKAGE_DIR)


def user_frames(traceback: object) -> list:
    """The user frames of a JAX traceback, innermost first, without this package's nor
    the interpreter's frozen modules' (``<frozen runpy>``, which runs the script)."""
    return [f for f in jaxcompat.user_frames(traceback)
            if not is_ours(f.file_name) and not f.file_name.startswith("<frozen")]


def without_comments(source: str) -> str:
    """``source`` (one line, or the lines of one statement) without its comments, each line
    right-stripped: Python's tokenizer finds them, so a ``#`` inside a string stays. A
    source the tokenizer cannot read to the end (the first line of a call that continues
    on the next line, an unterminated string) keeps the comments it found before that
    point cut and the rest as it is."""
    if "#" not in source:
        return "\n".join(line.rstrip() for line in source.split("\n"))
    lines = source.split("\n")
    cuts: dict[int, int] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                cuts[tok.start[0] - 1] = tok.start[1]
    except (tokenize.TokenError, SyntaxError):
        pass
    return "\n".join((line[:cuts[i]] if i in cuts else line).rstrip() for i, line in enumerate(lines))


def _line(file_name: str, line: int) -> str:
    """The text of one source line, without its comment, stripped."""
    return without_comments(linecache.getline(file_name, line).rstrip("\n")).strip()


@functools.lru_cache(maxsize=64)
def _statements(file_name: str) -> tuple[tuple[int, int], ...]:
    """The line spans of the simple statements of a source file (none when it cannot be
    parsed)."""
    try:
        tree = ast.parse("".join(linecache.getlines(file_name)))
    except (SyntaxError, ValueError):
        return ()
    return tuple((n.lineno, n.end_lineno or n.lineno) for n in ast.walk(tree)
                 if isinstance(n, ast.stmt) and not hasattr(n, "body"))


def _elide_arguments(text: str) -> str:
    """``f(a, b, ...).wait_recv()`` as ``f(...).wait_recv()``: the arguments of the
    statement's first call elided, so that the method called on its result stays in
    sight."""
    start = text.find("(")
    depth = 0
    for i in range(start, len(text)) if start >= 0 else ():
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[:start] + "(...)" + text[i + 1:]
    return text


def _span(frame: source_info_util.Frame) -> tuple[int, int]:
    """The lines of the frame's call, from the start of its expression: Python locates a
    method called on a call that spans lines (``make_async_remote_copy(...).wait_recv()``)
    at the method's name, on the line of the ``)``, which alone says nothing, so such a
    location starts where its statement does."""
    first = frame.start_line
    last = frame.end_line if frame.end_line and frame.end_line >= first else first
    column = getattr(frame, "start_column", -1)
    before = linecache.getline(frame.file_name, first)[:column].strip() if column and column > 0 else ""
    if before.endswith("."):
        inside = [(a, b) for a, b in _statements(frame.file_name) if a < first <= b]
        if inside:
            first = max(inside)[0]
    return first, min(last, first + 30)


def _code(frame: source_info_util.Frame) -> str:
    """The source lines of the statement, without comments, whitespace-collapsed (a call
    may span lines)."""
    first, last = _span(frame)
    raw = "".join(linecache.getline(frame.file_name, n) for n in range(first, last + 1))
    lines = [x.strip() for x in without_comments(raw.rstrip("\n")).split("\n")]
    text = " ".join(x for x in lines if x)
    if len(lines) > 1:
        text = re.sub(r"\(\s+", "(", text)
        text = re.sub(r",\s*\)$", ")", text)
    if first < frame.start_line and len(text) > 80:
        text = _elide_arguments(text)
    if len(text) > 160:
        text = text[:157] + "..."
    return text


def file_name(name: str) -> str:
    """A frame's file as the document names it: without ``..`` and ``.`` parts (a module
    imported through ``sys.path.insert(0, "../src")`` is named where it is); a name like
    ``<string>`` as it is."""
    return name if name.startswith("<") else os.path.normpath(name)


def frame_record(frame: source_info_util.Frame) -> dict[str, Any]:
    """One frame as a JSON record."""
    return {
        "file": file_name(frame.file_name),
        "line": frame.start_line,
        "function": frame.function_name,
        "text": _line(frame.file_name, frame.start_line),
        "code": _code(frame),
    }


def of_function(jaxpr: Any) -> tuple[str | None, dict | None]:
    """The name of the Python function ``jaxpr`` was traced from and where it is
    defined (``None`` where JAX did not record it)."""
    info = getattr(jaxpr, "debug_info", None)
    src = getattr(info, "func_src_info", None) if info else None
    if not src or " at " not in src:
        return None, None
    fname, where = src.rsplit(" at ", 1)
    file, _, line = where.rpartition(":")
    try:
        line_no = int(line)
    except ValueError:
        return fname, None
    return fname, {"file": os.path.abspath(file), "line": line_no, "function": fname}


def site(source_info: Any) -> str:
    """Where an equation was traced, as one key: its user frames, innermost first, as
    ``file:line`` joined by ``<``. Two equations traced by the same statements (a copy in
    a Python loop) share it; the walker and the interpreted run (``--interpret-values``)
    both name an equation's copies by it."""
    return "<".join(f"{f.file_name}:{f.start_line}" for f in user_frames(source_info.traceback))


def recorded_key(site_key: str) -> str:
    """The key, among a kernel call's known values per device, of the values the copies
    into SMEM started at ``site_key`` (:func:`site`) carried in JAX's interpreted run."""
    return f"copied@{site_key}"


def of_eqn(eqn: Any, kernel_function: str | None = None) -> dict[str, Any] | None:
    """The location of an equation: its innermost user frame and the user stack."""
    frames = user_frames(eqn.source_info.traceback)
    if not frames:
        return None
    loc = frame_record(frames[0])
    stack = []
    for f in frames[1:]:
        stack.append({"file": file_name(f.file_name), "line": f.start_line, "function": f.function_name,
                      "text": _line(f.file_name, f.start_line)})
        if kernel_function is not None and f.function_name == kernel_function:
            break
    if kernel_function is not None and frames[0].function_name == kernel_function:
        stack = []
    loc["stack"] = stack
    return loc


def short(loc: dict[str, Any] | None) -> str:
    """``psum.py:57``."""
    if not loc:
        return "<unknown location>"
    return f"{os.path.basename(loc['file'])}:{loc['line']}"
