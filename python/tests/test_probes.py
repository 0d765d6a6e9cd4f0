"""The guard of an index window's probe (probes.guard_window_probes) on bodies built by
hand: a probe reads its cell only where the value its load gives is used, and stays as it
is wherever that condition is unknown where the probe is."""

from __future__ import annotations

from semcheck.frontend import exprs as E
from semcheck.frontend.bindings import RefB
from semcheck.frontend.probes import guard_window_probes

WINDOW, PROBE, OUT = 0, 1, 2


def probe() -> dict:
    """A window's probe: a store of its element 0 into the private buffer."""
    return {"op": "store", "dst": RefB("buffer", PROBE, (("at", E.const(0)),)),
            "value": ("load", RefB("buffer", WINDOW, (("at", E.const(0)),)), 0, 0, None, None), "cellwise": True}


def load(var: str) -> dict:
    return {"op": "scalar_load", "var": var, "scalar": 0, "index": E.const(0)}


def bound(var: str) -> dict:
    """A variable some other scalar load binds."""
    return {"op": "scalar_load", "var": var, "scalar": 1, "index": E.const(0)}


def copy(start: E.Expr, size: E.Expr | int, device: E.Expr = E.const(0)) -> dict:
    """A remote copy of `size` rows from row `start` to `device`."""
    view = RefB("buffer", OUT, (("slice", start, size),))
    return {"op": "dma_start", "dma": {"kind": "remote", "src": view, "dst": view, "device": ("mesh", (device,))}}


LIVE = E.op("lt", E.const(1), ("var", "n"))  # row 1 of a tile of `n` rows
ROW = ("var", "row")


def guarded(body: list[dict]) -> E.Expr | None:
    """The condition the probe of `body` was wrapped in (None: left as it was)."""
    guard_window_probes(body, {PROBE})
    first = next(s for s in body if s["op"] in ("store", "when"))
    if first["op"] == "store":
        return None
    assert first.get("implicit") and first["body"][0].get("implicit")
    return first["cond"]


def evaluate(e: E.Expr, **values: int) -> int:
    env = E.Env({}, (), ())
    env.vars.update(values)
    return E.evaluate(e, env)


def test_a_dead_row_s_index_reads_its_cell_only_when_the_row_is_live():
    # Branchless: size 1 if live else 0, the device chosen by a select on liveness.
    size = E.op("select_n", LIVE, E.const(0), E.const(1))
    g = guarded([bound("n"), probe(), load("row"), copy(ROW, size, E.op("select_n", LIVE, E.const(0), ROW))])
    assert g is not None
    assert [evaluate(g, n=n) for n in (0, 1, 2, 3)] == [0, 0, 1, 1]


def test_a_use_inside_a_when_reads_the_cell_under_its_condition():
    g = guarded([bound("n"), probe(), load("row"), {"op": "when", "cond": LIVE, "body": [copy(ROW, 1)]}])
    assert g is not None and [evaluate(g, n=n) for n in (1, 2)] == [0, 1]


def test_an_unconditional_use_keeps_the_probe():
    assert guarded([bound("n"), probe(), load("row"), copy(ROW, 1)]) is None
    # One use guarded, another not: the cell is read.
    size = E.op("select_n", LIVE, E.const(0), E.const(1))
    assert guarded([bound("n"), probe(), load("row"), copy(ROW, size), copy(E.const(0), 1, ROW)]) is None


def test_a_condition_on_a_value_loaded_after_the_probe_keeps_it():
    # `n` is bound after the load: the condition cannot be evaluated where the probe is.
    size = E.op("select_n", LIVE, E.const(0), E.const(1))
    assert guarded([probe(), load("row"), bound("n"), copy(ROW, size)]) is None


def test_a_use_outside_the_probe_s_statement_list_keeps_it():
    # Loaded in a loop's body, used by the loop's next values: another list.
    size = E.op("select_n", LIVE, E.const(0), E.const(1))
    loop = {"op": "loop", "vars": ["i"], "init": [E.const(0)], "next": [ROW], "count": 2, "cond": None,
            "body": [probe(), load("row"), copy(ROW, size)]}
    body = [bound("n"), loop]
    guard_window_probes(body, {PROBE})
    assert loop["body"][0]["op"] == "store"


def test_an_unused_value_keeps_the_probe():
    assert guarded([bound("n"), probe(), load("row")]) is None
