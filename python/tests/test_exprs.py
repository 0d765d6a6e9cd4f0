"""The expression semantics the Rust compiler must share (SCHEMA.md, Expressions)."""

import pytest

from semcheck.frontend import exprs as E


def ev(e, **axes):
    return E.evaluate(e, E.Env(axes, (), ()))


def test_div_and_rem_truncate_like_lax():
    assert ev(E.op("rem", E.const(-1), E.const(4))) == -1
    assert ev(E.op("div", E.const(-7), E.const(2))) == -3
    assert ev(E.op("rem", E.const(7), E.const(-2))) == 1


def test_exactdiv_refuses_to_round():
    assert ev(E.op("exactdiv", ("axis_index", "x"), E.const(8)), x=16) == 2
    with pytest.raises(E.EvalError):
        ev(E.op("exactdiv", ("axis_index", "x"), E.const(8)), x=12)


def test_select_n_evaluates_only_the_chosen_case():
    e = E.op("select_n", ("axis_index", "x"), E.const(5), E.op("div", E.const(1), ("axis_index", "y")))
    assert ev(e, x=0, y=0) == 5
    with pytest.raises(E.EvalError):
        ev(e, x=1, y=0)
    with pytest.raises(E.EvalError):
        ev(e, x=2, y=1)


def test_constant_folding_and_json_round_trip():
    e = E.op("add", E.op("mul", ("program_id", 0), E.const(8)), E.const(0))
    assert E.op("exactdiv", e, E.const(8)) == ("program_id", 0)
    j = E.to_json(E.op("sub", ("axis_index", "x"), ("var", "i1")))
    assert E.from_json(j) == ("sub", (("axis_index", "x"), ("var", "i1")))
    assert E.op("add", E.const(2), E.const(3)) == E.const(5)


def test_overflow_is_an_error():
    with pytest.raises(E.EvalError):
        ev(E.op("mul", E.const(1 << 62), E.const(4)))
