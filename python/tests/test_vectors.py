"""Small arrays of index values (vectors.py): what each element is, per device."""

import os

from semcheck.frontend import exprs as E
from semcheck.frontend import vectors as V

from conftest import KERNELS
from helpers import statements


def ev(e, **axes):
    return E.evaluate(e, E.Env(axes, (), ()))


def values(v, **axes):
    return [ev(e, **axes) for e in v.exprs]


def depth(e):
    return 1 + max((depth(a) for a in e[1]), default=0) if e[0] in E.OPS else 1


def test_iota_slices_and_reductions_are_element_by_element():
    x = ("axis_index", "x")
    row = V.iota({"shape": (2, 3), "dimension": 1}, "int32")
    assert values(row) == [0, 1, 2, 0, 1, 2]
    shifted = V.IdxVec(tuple(E.op("add", e, x) for e in row.exprs), row.shape, "i", "int32")
    assert values(V.structural("slice", {"start_indices": (1, 1), "limit_indices": (2, 3)}, [shifted], (1, 2),
                               "int32"), x=5) == [6, 7]
    total = V.structural("reduce_sum", {"axes": (0, 1)}, [shifted], (), "int32")
    assert values(total, x=1) == [12]
    per_row = V.structural("reduce_max", {"axes": (1,)}, [shifted], (2,), "int32")
    assert values(per_row, x=0) == [2, 2]
    stacked = V.structural("stack", {"axis": 0}, [V.IdxVec((x,), (), "i", "int32")] * 3, (3,), "int32")
    assert values(stacked, x=4) == [4, 4, 4]


def test_a_sum_of_many_elements_stays_shallow():
    # The document's reader bounds how deep an expression nests.
    v = V.IdxVec(tuple(E.op("add", ("axis_index", "x"), E.const(i)) for i in range(1024)), (1024,), "i", "int32")
    (s,) = V.structural("reduce_sum", {"axes": (0,)}, [v], (), "int32").exprs
    assert ev(s, x=1) == sum(range(1024)) + 1024
    assert depth(s) <= 13


def test_an_element_at_a_computed_index_is_selected_and_clamped_like_dynamic_slice():
    v = V.IdxVec(tuple(E.const(10 * i) for i in range(4)), (4,), "i", "int32")
    x = ("axis_index", "x")
    assert [ev(V.element(v, [x]), x=i) for i in range(4)] == [0, 10, 20, 30]
    window = V.dynamic_slice(v, [x], [2], "int32")
    assert [values(window, x=i) for i in (0, 1, 3)] == [[0, 10], [10, 20], [20, 30]]


def test_row_flags_and_their_sum_size_copies(exports):
    doc = exports.get(os.path.join(KERNELS, "index_vectors.py"), 2)
    (k,) = doc["kernels"]
    assert k["status"] == "ok", k.get("errors")
    starts = [s for s in statements(k["body"]) if s["op"] == "dma_start"]
    assert len(starts) == 4


def test_running_sums_give_each_row_its_offset():
    x = ("axis_index", "x")
    sizes = V.IdxVec((x, E.const(2), E.op("add", x, E.const(1))), (3,), "i", "int32")
    assert values(V.structural("cumsum", {"axis": 0, "reverse": False}, [sizes], (3,), "int32"), x=4) == [4, 6, 11]
    assert values(V.structural("cumsum", {"axis": 0, "reverse": True}, [sizes], (3,), "int32"), x=4) == [11, 7, 5]
    # As shallow as a sum: the document's reader bounds how deep an expression nests.
    many = V.IdxVec(tuple(E.op("add", x, E.const(i)) for i in range(300)), (300,), "i", "int32")
    for reverse in (False, True):
        run = V.structural("cumsum", {"axis": 0, "reverse": reverse}, [many], (300,), "int32")
        assert max(depth(e) for e in run.exprs) <= 20
        sums = [sum(range(j + 1)) + 2 * (j + 1) for j in range(300)]  # x + i for i <= j, x = 2
        suffixes = [sums[-1] - before for before in [0] + sums[:-1]]
        assert values(run, x=2) == (suffixes if reverse else sums)
    grid = V.IdxVec(tuple(E.const(n) for n in (3, 1, 2, 5)), (2, 2), "i", "int32")
    assert values(V.structural("cummax", {"axis": 1, "reverse": False}, [grid], (2, 2), "int32")) == [3, 3, 2, 5]
