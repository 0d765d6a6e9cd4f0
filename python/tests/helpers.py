"""Helpers for reading exported documents in tests."""

from __future__ import annotations

from typing import Iterator

from semcheck.frontend import exprs as E


def statements(body: list[dict]) -> Iterator[dict]:
    """Every statement, nested ones included, in order."""
    for s in body:
        yield s
        for key in ("body",):
            if key in s:
                yield from statements(s[key])
        for br in s.get("branches", []):
            yield from statements(br)


def ops(kernel: dict) -> list[str]:
    """Statement kinds in order, with the wait part."""
    return [s["op"] + (f":{s['part']}" if "part" in s else "") for s in statements(kernel["body"])]


def line_of(path: str, needle: str, nth: int = 0) -> int:
    """The 1-based line of the nth line of `path` containing `needle`."""
    hits = [i + 1 for i, line in enumerate(open(path).read().splitlines()) if needle in line]
    return hits[nth]


def sem_uses(kernel: dict, name: str) -> list[dict]:
    """Statements that signal or wait on the semaphore `name`."""
    ids = [i for i, s in enumerate(kernel["semaphores"]) if s["name"] == name]
    out = []
    for s in statements(kernel["body"]):
        if s["op"] in ("signal", "wait") and s["sem"]["sem"] in ids:
            out.append(s)
    return out


def evaluate(j: dict, axes: dict[str, int], program_ids: tuple = (), grid: tuple = ()) -> int:
    """Evaluates an exported expression on one device."""
    return E.evaluate(E.from_json(j), E.Env(axes, program_ids, grid))
