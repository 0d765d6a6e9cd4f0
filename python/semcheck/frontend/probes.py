"""Guarding the probes of index-window loads by where their values are used.

Every load of an SMEM window (scratch a copy of known integers fills) is preceded by a
*probe*, a ``store`` of the window's element into a private buffer (``NAME@loads``,
:meth:`~semcheck.frontend.scalars.Scalars.read_window`), so the checker sees the load
read the window's cell: a load a copy into that cell may not have landed for is a race.
A race on a value nothing uses is no bug, though. Branchless copy loops load an index
for every row of a tile and use it only for the live ones (a dead row's copy has size 0,
its device is chosen by a ``select`` the row's liveness steers), and at the pipeline's
first step every row is dead while the window's first fetch is still in flight.

:func:`guard_window_probes` runs on a kernel's finished body and wraps such a probe in a
``when`` of the condition under which the loaded value is used: the disjunction, over
its uses, of the ``select_n`` cases and the non-empty slices (a slice whose computed size
is 0 does not read its start, in the checker as here) and ``when`` bodies each use sits
in. That condition is evaluated where the probe is, with the values its uses see, so it
is kept only when it can be: every use is later in the probe's own statement list (or
nested in a later statement of it), and every variable the condition reads is bound
before the probe (a load earlier in the list or in an enclosing one, a loop's variable).
Otherwise, or when any use is unconditional, the probe stays as it is. The guard and the
probe are ``implicit``: statements of semcheck's, not of the kernel's source.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable

from . import exprs as E
from .bindings import RefB
from .cells import children

#: A use's condition: ``None`` when it is unconditional.
Guard = E.Expr | None


def guard_window_probes(body: list[dict], probes: set[int]) -> None:
    """Wraps, in place, each probe (a ``store`` into one of the buffers ``probes``) that
    a ``scalar_load`` follows in a ``when`` of the condition its value is used under."""
    totals: dict[str, int] = {}
    for stmt in body:
        for var, _ in _uses(stmt, None):
            totals[var] = totals.get(var, 0) + 1
    _guard_block(body, probes, totals, frozenset())


def _guard_block(block: list[dict], probes: set[int], totals: dict[str, int], bound: frozenset[str]) -> None:
    here = set(bound)
    for i, stmt in enumerate(block):
        following = block[i + 1] if i + 1 < len(block) else None
        probe = _probe(block, i, probes)
        if probe is not None and following is not None and following["op"] == "scalar_load":
            guard = _condition(following["var"], block[i + 2:], totals, frozenset(here))
            if guard is not None:
                store = probe[0][probe[1]]
                store["implicit"] = True
                probe[0][probe[1]] = {"op": "when", "cond": guard, "body": [store], "loc": store.get("loc"),
                                      "implicit": True}
        for child in children(stmt):
            _guard_block(child, probes, totals, frozenset(here | set(stmt.get("vars", ()))))
        if stmt["op"] == "scalar_load":
            here.add(stmt["var"])
        elif stmt["op"] == "loop":
            here |= set(stmt["vars"])


def _probe(block: list[dict], i: int, probes: set[int]) -> tuple[list[dict], int] | None:
    """Where the probe ``block[i]`` is (the list holding it, its index): ``block[i]``
    itself, or the one statement of a ``when`` that keeps an index outside the window
    from being read (:meth:`~semcheck.frontend.scalars.Scalars.read_window`); ``None``
    when ``block[i]`` is no probe."""
    def is_probe(s: dict) -> bool:
        return s["op"] == "store" and isinstance(s.get("dst"), RefB) and s["dst"].id in probes

    stmt = block[i]
    if is_probe(stmt):
        return block, i
    if stmt["op"] == "when" and len(stmt["body"]) == 1 and is_probe(stmt["body"][0]):
        return stmt["body"], 0
    return None


def _condition(var: str, later: list[dict], totals: dict[str, int], bound: frozenset[str]) -> Guard:
    """The condition under which ``var`` is used, if every use of it is in ``later`` and
    each is conditional on variables ``bound`` reads; ``None`` otherwise."""
    guards = [g for stmt in later for v, g in _uses(stmt, None) if v == var]
    if not guards or len(guards) != totals.get(var, 0):
        return None
    conditions = [g for g in dict.fromkeys(guards) if g is not None]  # in order, once each
    if len(conditions) != len(set(guards)) or any(not E.free_vars(g) <= bound for g in conditions):
        return None  # a use is unconditional, or its condition reads what is bound later
    out = conditions[0]
    for g in conditions[1:]:
        out = E.op("or", out, g)
    return out


def _uses(obj: Any, guard: Guard) -> Iterable[tuple[str, Guard]]:
    """Every occurrence of a variable in ``obj`` (a statement, or anything in one), with
    the condition it is used under."""
    if isinstance(obj, tuple):
        if len(obj) == 2 and obj[0] == "var" and isinstance(obj[1], str):
            yield obj[1], guard
        elif len(obj) == 2 and obj[0] == "select_n" and isinstance(obj[1], tuple):
            which, *cases = obj[1]
            yield from _uses(which, guard)
            for k, case in enumerate(cases):
                yield from _uses(case, _and(guard, E.op("eq", which, E.const(k))))
        else:
            for x in obj:
                yield from _uses(x, guard)
    elif isinstance(obj, RefB):
        for d in obj.dims:
            if d[0] == "slice" and not isinstance(d[2], int):
                yield from _uses(d[2], guard)
                # A slice whose computed size is 0 does not read its start.
                yield from _uses(d[1], _and(guard, E.op("ne", d[2], E.const(0))))
                yield from _uses(d[3:], guard)
            else:
                yield from _uses(d, guard)
        yield from _uses((obj.stages, obj.view, obj.packed), guard)
    elif isinstance(obj, dict):
        inner = _and(guard, E.op("ne", obj["cond"], E.const(0))) if obj.get("op") == "when" else guard
        for key, x in obj.items():
            yield from _uses(x, inner if key == "body" else guard)
    elif isinstance(obj, list):
        for x in obj:
            yield from _uses(x, guard)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from _uses(getattr(obj, f.name), guard)


def _and(guard: Guard, cond: E.Expr) -> E.Expr:
    return cond if guard is None else E.op("and", guard, cond)

