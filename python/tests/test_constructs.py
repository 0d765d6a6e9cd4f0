"""Constructs beyond the seeds: loops, floor arithmetic, nested jit, device ids, 2-D
meshes, compute on loaded values."""

from __future__ import annotations

import os

import pytest

from conftest import KERNELS, SEEDS, needs_jax
from helpers import evaluate, line_of, ops, statements


def kernel(exports, name: str, n: int) -> dict:
    doc = exports.get(os.path.join(KERNELS, name + ".py"), n)
    assert doc["errors"] == [], doc["errors"]
    (k,) = doc["kernels"]
    assert k["status"] == "ok", k.get("errors")
    return k


def loads_of(value: dict) -> list[dict]:
    """The load leaves of a value tree."""
    if value["kind"] == "load":
        return [value]
    return [leaf for a in value.get("args", []) for leaf in loads_of(a)]


def run_loops(loop: dict, axes: dict) -> int:
    """Iterations a loop statement runs on a device (the semantics of SCHEMA.md)."""
    from semcheck.frontend import exprs as E

    env = E.Env(axes, (), ())
    values = [E.evaluate(E.from_json(e), env) for e in loop["init"]]
    k = 0
    while True:
        env.vars.update(zip(loop["vars"], values))
        if loop["count"] is not None and k >= loop["count"]:
            return k
        if loop["cond"] is not None and E.evaluate(E.from_json(loop["cond"]), env) == 0:
            return k
        values = [E.evaluate(E.from_json(e), env) for e in loop["next"]]
        k += 1


@pytest.mark.parametrize("n", (2, 4))
def test_fori_and_while_loops(exports, n):
    k = kernel(exports, "loops", n)
    fori, whl = k["body"]
    assert fori["op"] == "loop" and fori["count"] == 3 and fori["cond"] is None
    assert [s["op"] for s in fori["body"]] == ["dma_start", "dma_wait", "dma_wait"]
    assert whl["op"] == "loop" and whl["count"] is None
    # The while loop runs `axis_index` times: the trip count depends on the device.
    assert [run_loops(whl, {"x": d}) for d in range(n)] == list(range(n))
    assert run_loops(fori, {"x": 0}) == 3
    assert fori["loc"]["text"].startswith("lax.fori_loop(")


@pytest.mark.parametrize("n", (2, 3, 4))
def test_floor_mod_and_div_keep_python_semantics(exports, n):
    k = kernel(exports, "floor_mod", n)
    dest = k["body"][0]["dma"]["device"]["coords"][0]
    for d in range(n):
        left, half = (d - 1) % n, (d - 3) // 2   # Python's floor semantics
        expected = left if half < 0 else 0
        assert evaluate(dest, {"x": d}) == expected
    # Truncating lax.rem alone would give -1 for device 0: the export is not that.
    assert evaluate(dest, {"x": 0}) == n - 1


def test_nested_jit_is_inlined(exports):
    k = kernel(exports, "nested_jit", 3)
    dest = k["body"][0]["dma"]["device"]["coords"][0]
    assert [evaluate(dest, {"x": d}) for d in range(3)] == [1, 2, 0]


def test_dict_and_logical_device_ids(exports):
    k = kernel(exports, "device_ids", 4)
    by_dict, logical = k["body"][0]["device"], k["body"][1]["device"]
    assert by_dict["kind"] == "axes" and by_dict["axes"][0]["axis"] == "x"
    assert logical["kind"] == "logical"
    assert [evaluate(logical["id"], {"x": d}) for d in range(4)] == [1, 2, 3, 0]
    assert k["body"][3]["dma"]["device"]["kind"] == "mesh"


def test_two_dimensional_mesh(exports):
    k = kernel(exports, "mesh2d", 4)
    assert k["mesh"]["axes"] == [{"name": "x", "size": 2}, {"name": "y", "size": 2}]
    sig = k["body"][0]
    assert sig["device"] == {"kind": "axes", "axes": [
        {"axis": "x", "index": {"op": "sub", "args": [{"const": 1}, {"axis_index": "x"}]}}]}
    coords = k["body"][2]["dma"]["device"]["coords"]
    assert len(coords) == 2
    assert [evaluate(c, {"x": 1, "y": 1}) for c in coords] == [1, 0]


def test_compute_on_loaded_values(exports):
    k = kernel(exports, "compute", 2)
    stores = [s for s in statements(k["body"]) if s["op"] == "store"]
    names = {b["name"]: i for i, b in enumerate(k["buffers"])}
    a_plus, dot, cast, copy = stores
    assert a_plus["value"]["kind"] == "add" and a_plus["cellwise"]
    assert dot["value"]["kind"] == "fn" and dot["value"]["name"].startswith("dot_general(")
    assert not dot["cellwise"]
    assert [arg["view"]["buffer"] for arg in dot["value"]["args"]] == [names["a"], names["buf"]]
    assert cast["value"]["name"] == "float32({})" and cast["cellwise"]
    assert copy["value"] == {"kind": "load", "view": {"buffer": names["a"], "indices": []}}
    assert ops(k)[:3] == ["dma_start", "dma_wait:send", "dma_wait:recv"]


def private_buffer(exports, name: str, prefix: str, marker: str) -> tuple[dict, list[str], int, int]:
    """The kernel of ``name``.py at N = 2, its buffer names, and the private VMEM buffer
    ``PREFIX@LINE`` the exporter made for the line holding ``marker`` (and that line)."""
    path = os.path.join(KERNELS, name + ".py")
    k = kernel(exports, name, 2)
    names = [b["name"] for b in k["buffers"]]
    line = line_of(path, marker)
    reg = names.index(f"{prefix}@{line}")
    assert k["buffers"][reg]["space"] == "vmem" and k["buffers"][reg]["role"] == "scratch"
    return k, names, reg, line


def test_a_value_kept_across_a_copy_is_read_where_it_is_loaded(exports):
    # The load leaves a copy into a private VMEM buffer where it is, before the copy...
    k, names, snap, line = private_buffer(exports, "kept_value", "x_ref", "# loaded before the copy")
    assert ops(k)[:2] == ["store", "dma_start"]
    first = k["body"][0]
    assert first["dst"]["buffer"] == snap and first["loc"]["line"] == line
    assert first["value"] == {"kind": "load", "view": {"buffer": names.index("x_ref"), "indices": []}}
    # ... and the store after the copy reads that buffer, not x_ref.
    last = k["body"][-1]
    assert last["loc"]["line"] == line_of(os.path.join(KERNELS, "kept_value.py"), "# stored after it")
    reads = [a["view"]["buffer"] for a in loads_of(last["value"])]
    assert sorted(reads) == sorted([snap, names.index("buf")])


def test_a_load_used_at_once_leaves_nothing_behind(exports):
    # compute.py stores every loaded value at once: no private copies.
    k = kernel(exports, "compute", 2)
    assert not any("@" in b["name"] for b in k["buffers"])


def test_a_loop_that_carries_data_keeps_it_in_a_buffer_of_its_own(exports):
    # A fori_loop with static bounds: a scan carrying acc only.
    k, names, reg, _ = private_buffer(exports, "carry", "carry0", "# a data carry")
    init, loop = k["body"][0], k["body"][1]
    # Stored before the loop, from x_ref ...
    assert init["op"] == "store" and init["dst"]["buffer"] == reg
    assert init["value"] == {"kind": "load", "view": {"buffer": names.index("x_ref"), "indices": []}}
    # ... and at the end of every iteration, from itself and x_ref; the loop keeps only
    # its integer carries.
    assert loop["op"] == "loop" and loop["count"] == 3 and loop["vars"] == []
    (last,) = loop["body"]
    assert last["dst"]["buffer"] == reg and last["value"]["kind"] == "add"
    assert sorted(a["view"]["buffer"] for a in loads_of(last["value"])) == sorted([reg, names.index("x_ref")])
    # The loop's result is read from the buffer after the copy.
    assert reg in [a["view"]["buffer"] for a in loads_of(k["body"][-1]["value"])]


def test_the_old_value_of_a_swap_is_read_just_before_the_store(exports):
    k, names, old, _ = private_buffer(exports, "swap", "buf", "# the old value")
    stores = [s for s in k["body"] if s["op"] == "store"]
    # buf = x; the copy of buf's old value; buf = 2 x; ...; buf = old + buf.
    assert [s["dst"]["buffer"] for s in stores[:3]] == [names.index("buf"), old, names.index("buf")]
    assert stores[1]["value"]["view"]["buffer"] == names.index("buf")
    assert old in [a["view"]["buffer"] for a in loads_of(stores[-1]["value"])]


def test_emit_pipeline_is_read_with_its_copies_at_the_user_s_line(exports):
    # The batch export traces with SEMCHECK_TPU=v6e: emit_pipeline asks for the TPU's sizes.
    k = kernel(exports, "pipeline", 2)
    line = line_of(os.path.join(KERNELS, "pipeline.py"), "pltpu.emit_pipeline(")
    local = [s for s in statements(k["body"]) if s["op"] == "dma_start" and s["dma"]["kind"] == "local"]
    assert local and all(s["loc"]["line"] == line for s in local)


def test_a_reversed_scan_without_xs_or_ys_runs_its_carries_forward(exports):
    k = kernel(exports, "reversed_scan", 2)
    (loop,) = [s for s in k["body"] if s["op"] == "loop"]
    assert loop["count"] == 4 and loop["vars"] and [s["op"] for s in loop["body"]][0] == "dma_start"


def scalar_loads(k: dict) -> dict[str, tuple[int, dict]]:
    """The SMEM scalar loads of a kernel: variable -> (scalar array, index)."""
    return {s["var"]: (s["scalar"], s["index"]) for s in statements(k["body"]) if s["op"] == "scalar_load"}


def test_scalar_prefetch_values_are_read_as_known_per_device(exports):
    k = kernel(exports, "prefetch_perm", 3)
    (table,) = k["prefetch"]["operands"]
    assert table["name"] == "table_ref"
    per_device = [([0], [1, 1]), ([1], [2, 1]), ([2], [0, 1])]
    assert [(v["device"], v["values"]) for v in table["values"]] == per_device
    # The table is SMEM scalar state with those entry values, read where the kernel reads it.
    assert k["scalars"] == [{"name": "table_ref", "len": 2,
                             "init": [{"device": d, "values": v} for d, v in per_device]}]
    loads = scalar_loads(k)
    (start,) = [s for s in statements(k["body"]) if s["op"] == "dma_start"]
    (target,) = start["dma"]["device"]["coords"]
    assert loads[target["var"]] == (0, {"const": 0})
    loop = next(s for s in k["body"] if s["op"] == "loop")
    assert loads[loop["init"][1]["var"]] == (0, {"const": 1})  # the trip count


def test_scalar_prefetch_values_decide_trip_counts_and_conditions(exports):
    k = kernel(exports, "prefetch_count", 2)
    loads = scalar_loads(k)
    loop = next(s for s in k["body"] if s["op"] == "loop")
    assert loop["loc"]["line"] == line_of(os.path.join(KERNELS, "prefetch_count.py"), "# trip count")
    assert loads[loop["init"][1]["var"]] == (0, {"const": 0})
    when = next(s for s in k["body"] if s["op"] == "when")
    assert loads[when["cond"]["args"][0]["var"]] == (0, {"const": 1})


def test_smem_scratch_is_scalar_state_read_and_written_in_program_order(exports):
    k = kernel(exports, "smem_slot", 2)
    assert k["scalars"] == [{"name": "slot_ref", "len": 1, "init": []}]
    stores = [s for s in statements(k["body"]) if s["op"] == "scalar_store"]
    path = os.path.join(KERNELS, "smem_slot.py")
    assert [s["loc"]["line"] for s in stores] == [line_of(path, "# first slot"), line_of(path, "# flip")]
    assert stores[0]["value"] == {"const": 0}


def test_a_kernel_called_with_two_sets_of_values_is_two_kernels(exports):
    doc = exports.get(os.path.join(KERNELS, "prefetch_twice.py"), 2)
    assert [k["name"] for k in doc["kernels"]] == ["kernel", "kernel#2"]
    shifts = [k["prefetch"]["operands"][0]["values"][0]["values"] for k in doc["kernels"]]
    assert shifts == [[1], [0]]


def test_a_slice_of_dynamic_size_is_a_size_expression_in_cells(exports):
    k = kernel(exports, "dynamic_size", 3)
    (start,) = [s for s in statements(k["body"]) if s["op"] == "dma_start"]
    (src,) = start["dma"]["src"]["indices"]
    # Rows 0, 4 and 8 are copied: cells of 4 rows, the size in cells computed per device.
    assert src["slice"]["size"]["op"] == "exactdiv" and src["slice"]["size"]["args"][1] == {"const": 4}
    x = next(b for b in k["buffers"] if b["name"] == "x_ref")
    assert x["shape"] == [2] and x["cell"][0] == 4


def test_a_whole_array_smem_input_is_read_with_its_values_like_scalar_prefetch(exports):
    k = kernel(exports, "smem_input", 2)
    assert k["scalars"] == [{"name": "shift_ref", "len": 1,
                             "init": [{"device": [0], "values": [1]}, {"device": [1], "values": [1]}]}]
    assert [o["name"] for o in k["prefetch"]["operands"]] == ["shift_ref"]


def test_an_eager_shard_map_and_a_call_that_never_runs(exports):
    doc = exports.get(os.path.join(KERNELS, "eager_shard_map.py"), 2)
    # The eager shard_map's placeholders are sharded like its results: the script goes on.
    assert doc["script"]["status"] == "ok" and doc["warnings"] == []
    first, second = doc["kernels"]
    assert first["status"] == "ok" and first["prefetch"]["operands"][0]["values"][0]["values"] == [1]
    # The call under a branch no device takes never ran: its values are unknown, said so.
    assert second["status"] == "unsupported"
    assert "did not run" in second["prefetch"]["error"]


def test_smem_integers_that_hold_data_are_data(exports):
    k = kernel(exports, "smem_data", 2)
    # Data stored into SMEM scratch: the walk is redone with it read as data.
    assert k["scalars"] == []
    stores = [s for s in statements(k["body"]) if s["op"] == "store"]
    assert [s["dst"]["buffer"] for s in stores] == [3, 2]  # t_ref, then p_ref


def test_reshaped_and_strided_views_are_stages_on_cells_of_single_elements(exports):
    k = kernel(exports, "reshaped_pages", 3)
    pages = next(b for b in k["buffers"] if b["name"] == "pages")
    # Merged pages and rows: a cell per row (the columns, never cut, are one cell).
    assert pages["array_shape"] == [4, 2, 128] and pages["shape"] == [4, 2] and pages["cell"] == [1, 1, 128]
    (start,) = [s for s in statements(k["body"]) if s["op"] == "dma_start"]
    dst = start["dma"]["dst"]
    assert dst["indices"] == [{"slice": {"start": {"const": 0}, "size": 4}}, {"slice": {"start": {"const": 0}, "size": 2}}]
    assert dst["stages"] == [{"reshape": [8]}, {"indices": [{"slice": {"start": {"const": 2}, "size": 4}}]}]
    src = start["dma"]["src"]
    assert src["stages"][:2] == [{"reshape": [4, 2]}, {"reshape": [8]}]
    (store,) = [s for s in statements(k["body"]) if s["op"] == "store"]
    (load,) = loads_of(store["value"])
    assert load["view"]["stages"][-1] == {"indices": [{"slice": {"start": {"const": 3}, "size": 2, "step": 2}}]}


def test_a_computation_that_reuses_its_values_stays_one_function_of_what_it_read(exports):
    k = kernel(exports, "deep_compute", 2)
    (store,) = [s for s in statements(k["body"]) if s["op"] == "store"]
    value = store["value"]
    # Written out it would have 3^12 loads of `buf`: one function of that load instead,
    # named after the operation, the line and the size of the tree it stands for.
    assert value["kind"] == "fn" and value["name"].startswith("add…@deep_compute.py:17[")
    assert [a["kind"] for a in value["args"]] == ["load"] and store["cellwise"]


@pytest.mark.parametrize("name,semaphores", [
    # Handed on to another function: the parameters they reach.
    ("forwarded_args", ["send_sem", "recv_sem"]),
    # Unpacked by the kernel: what it unpacks them into; the one never unpacked keeps its place.
    ("unpacked_args", ["send_sem", "refs[3]"]),
    # Taken from an iterator, some under a flag: what the body binds them to.
    ("iterated_args", ["send_sem", "recv_sem"]),
])
def test_refs_of_a_star_args_kernel_take_the_names_its_source_gives_them(exports, name, semaphores):
    k = kernel(exports, name, 2)
    assert [b["name"] for b in k["buffers"]] == ["x_ref", "o_ref"]
    assert [s["name"] for s in k["semaphores"]] == semaphores


def test_a_load_a_reduction_reads_is_the_cells_around_it_and_cuts_nothing(exports):
    k = kernel(exports, "covering_load", 2)
    buf = next(b for b in k["buffers"] if b["name"] == "buf")
    # Halves, as the copy and the store cut it; the load of rows 5..8 does not cut rows.
    assert buf["shape"] == [2] and buf["cell"] == [4, 128]
    store = [s for s in statements(k["body"]) if s["op"] == "store" and not s["cellwise"]][-1]
    (load,) = loads_of(store["value"])
    (ix,) = load["view"]["indices"]
    assert (evaluate(ix["slice"]["start"], {"x": 0}), ix["slice"]["size"]) == (1, 1)


@needs_jax((0, 10, 1), "jax 0.10.0 and earlier fail to trace it (arithmetic on a value loaded from an "
                      "SMEM-constrained operand), and 0.8 and 0.9 stage pl.kernel as refs a core_map closes over, "
                      "whose operands semcheck does not read")
def test_a_one_core_mesh_in_a_shard_map_is_a_kernel_per_device_with_its_smem_operands_read(exports):
    k = kernel(exports, "core_mesh_rows", 2)
    # One kernel per device of the shard_map; the core axis reads 0.
    assert k["primitive"] == "mpmd_map" and k["mesh"] == {"kind": "shard_map", "axes": [{"name": "x", "size": 2}]}
    assert {o["name"]: o["values"][0]["values"] for o in k["prefetch"]["operands"]} == {
        "count_smem": [2], "route_hbm": [3, 1, 0, 2]}
    # The window is fetched by a copy of the length the operand gives: its scalar copy
    # takes at most the window's elements, as many as the value loaded from the operand.
    body = list(statements(k["body"]))
    (load,) = [s for s in body if s["op"] == "scalar_load" and s["scalar"] == 0]
    (copy,) = [s for s in body if s["op"] == "scalar_copy"]
    assert [copy[r]["dims"] for r in ("src", "dst")] == [[[4, 1]], [[4, 1]]]
    assert copy["src"]["count"] == copy["dst"]["count"] == {"var": load["var"]}
    # Each load of the window reads its cell only where the value is used (a live row):
    # its probe sits in an implicit `when` of that condition, which reads the count.
    probe = next(b for b, d in enumerate(k["buffers"]) if d["name"] == "win@loads")
    loads = [i for i, s in enumerate(k["body"]) if s["op"] == "scalar_load" and s["scalar"] == copy["scalar"]]
    assert len(loads) == 4
    for i in loads:
        guard = k["body"][i - 1]
        assert guard["op"] == "when" and guard.get("implicit") and load["var"] in str(guard["cond"])
        (inner,) = guard["body"]
        if inner["op"] == "when":  # the index kept inside the window
            (inner,) = inner["body"]
        assert inner["op"] == "store" and inner["dst"]["buffer"] == probe and inner.get("implicit")


def test_a_copy_of_known_integers_into_smem_is_scalar_state_and_a_dma(exports):
    k = kernel(exports, "smem_window", 2)
    # The input's values are a table of scalar state; the window, scalar state filled by
    # the copy where it starts.
    win, route = k["scalars"]
    assert (route["name"], route["init"][0]["values"]) == ("route_hbm", [2, 0, 3, 1])
    assert (win["name"], win["init"]) == ("win", [])
    assert [(o["name"], o.get("copied")) for o in k["prefetch"]["operands"]] == [("route_hbm", True)]
    body = list(statements(k["body"]))
    first = next(i for i, s in enumerate(body) if s["op"] == "dma_start")
    assert body[first]["dma"]["src"]["buffer"] == 0
    copy = body[first + 1]
    assert (copy["op"], copy["scalar"], copy["source"]) == ("scalar_copy", 0, 1)
    # Window k of the route (W = 2 entries) into row 0 of `win`: elements 0, 1.
    assert [copy[k]["dims"] for k in ("src", "dst")] == [[[2, 1]], [[2, 1]]]
    assert evaluate(copy["src"]["start"], {"x": 0}) == 0 and evaluate(copy["dst"]["start"], {"x": 0}) == 0
    # Every load of the window also reads its cell (a copy into `win@loads`).
    loads = [i for i, s in enumerate(body) if s["op"] == "scalar_load" and s["scalar"] == 0]
    assert len(loads) == 4
    probe = next(b for b, d in enumerate(k["buffers"]) if d["name"] == "win@loads")
    assert all(body[i - 1]["op"] == "store" and body[i - 1]["dst"]["buffer"] == probe for i in loads)


def test_blocks_pallas_pipelines_are_copied_in_and_out_around_grid_steps(exports):
    k = kernel(exports, "grid_blocks", 2)
    buffers = {b["name"]: b for b in k["buffers"]}
    # The kernel's refs are VMEM blocks; the arrays they are copied from and to, HBM.
    assert [(buffers[n]["space"], buffers[n]["role"], buffers[n]["array_shape"]) for n in
            ("x_ref", "x_ref@hbm", "o_ref", "o_ref@hbm")] == [
        ("vmem", "scratch", [8, 128]), ("hbm", "input", [16, 128]),
        ("vmem", "scratch", [8, 128]), ("hbm", "output", [16, 128])]
    first, last = k["body"][0], k["body"][-1]
    for s, dst, src in ((first, "x_ref", "x_ref@hbm"), (last, "o_ref@hbm", "o_ref")):
        assert s["op"] == "when"
        (store,) = s["body"]
        assert s["implicit"] and store["implicit"]  # Pallas's, not the author's: not mutated
        assert k["buffers"][store["dst"]["buffer"]]["name"] == dst
        assert k["buffers"][store["value"]["view"]["buffer"]]["name"] == src
        path = os.path.join(KERNELS, "grid_blocks.py")
        assert store["loc"]["line"] == line_of(path, "spec = pl.BlockSpec(")
        assert store["loc"]["code"].startswith(f"BlockSpec pipeline: the block of `{dst.split('@')[0]}` copied")
    # Grid (2, 2), block index (i, 0): copied in when i changes (k = 0), out before it
    # changes and at the last step (k = 1).
    steps = [(i, j) for i in range(2) for j in range(2)]
    assert [evaluate(first["cond"], {"x": 0}, s, (2, 2)) for s in steps] == [1, 0, 1, 0]
    assert [evaluate(last["cond"], {"x": 0}, s, (2, 2)) for s in steps] == [0, 1, 0, 1]


def test_a_while_condition_reads_a_table_at_the_loop_s_own_index(exports):
    k = kernel(exports, "prefetch_sentinel", 2)
    body = k["body"]
    at = next(i for i, s in enumerate(body) if s["op"] == "loop" and s["cond"] is not None)
    loop, before = body[at], body[at - 1]
    # Read before the loop at the initial index, and at the end of every iteration at the
    # next one: the condition sees rows_ref[i] for the i it is about to run with.
    assert (before["op"], before["index"]) == ("scalar_load", {"const": 0})
    reload = loop["body"][-1]
    assert reload["op"] == "scalar_load"
    if len(loop["vars"]) == 1:  # the condition reads the table itself
        (i,) = loop["vars"]
        assert reload["var"] == before["var"]
        assert loop["cond"] == {"op": "ge", "args": [{"var": before["var"]}, {"const": 0}]}
    else:  # jax 0.12.1 carries the condition's value beside the index, computed from the reads
        pred, i = loop["vars"]
        assert loop["cond"] == {"var": pred}
        assert loop["init"][0] == {"op": "ge", "args": [{"var": before["var"]}, {"const": 0}]}
        assert loop["next"][0] == {"op": "ge", "args": [{"var": reload["var"]}, {"const": 0}]}
    assert reload["index"] == {"op": "add", "args": [{"var": i}, {"const": 1}]}


def test_a_semaphore_read_that_only_reaches_debug_output_is_read_and_noted(exports):
    path = os.path.join(KERNELS, "semaphore_read_debug.py")
    (k,) = exports.get(path, 2)["kernels"]
    assert k["status"] == "ok" and k["errors"] == []
    reads = [i for i in k["ignored"] if i["construct"] == "semaphore_read"]
    # The printed read is listed with why it is not modelled; the one the helper discards
    # leaves nothing to read.
    assert [i["loc"]["line"] for i in reads] == [line_of(path, "# printed")]
    assert reads[0]["why"] == "its value reaches only debug output, or nothing"
    assert "debug_print" in {i["construct"] for i in k["ignored"]}
    # A read whose value decides the amount of a wait stays refused, by name, where it steers.
    (k,) = exports.get(path, 2, {"STEER": "1"})["kernels"]
    assert k["status"] == "unsupported"
    (err,) = k["errors"]
    assert err["construct"] == "semaphore_read" and err["loc"]["line"] == line_of(path, "# steers")
    assert "steers the kernel" in err["message"]


def test_routing_from_a_vmem_input_is_read_with_the_values_the_script_passes(exports):
    path = os.path.join(KERNELS, "moe_dispatch.py")
    k = kernel(exports, "moe_dispatch", 2)
    (route,) = k["prefetch"]["operands"]
    assert route["name"] == "route_ref" and route["space"] == "vmem" and "set" not in k["prefetch"]
    # A load of the table is one scalar load per element: the whole table, then this
    # device's row (at an index computed from axis_index).
    loads = [s for s in statements(k["body"]) if s["op"] == "scalar_load"]
    assert len(loads) == 8 + 4
    assert [evaluate(s["index"], {"x": 1}) for s in loads[8:]] == [4, 5, 6, 7]
    # The device of each copy is computed from the loaded ids.
    starts = [s for s in statements(k["body"]) if s["op"] == "dma_start" and s["dma"]["kind"] == "remote"]
    assert len(starts) == 4 and starts[0]["loc"]["line"] == line_of(path, "c.start()", 1)
    # Several routings: one kernel per set, each saying which of how many it is.
    doc = exports.get(path, 2, {"ROUTING": "generated"})
    sets = [k["prefetch"]["set"] for k in doc["kernels"]]
    names = ["spread", "all-to-one", "local-only", "remote-only", "empty-experts", "random-1", "random-2", "random-3"]
    assert sets == [{"index": i, "of": 8, "group": "kernel", "name": n} for i, n in enumerate(names, 1)]


def test_generated_routings_are_what_they_say():
    from semcheck.routings import FAMILIES, every, generated

    n, t, k, e = 2, 3, 2, 4
    got = dict(generated(devices=n, tokens=t, top_k=k, experts=e, random=2))
    assert list(got)[:4] == list(FAMILIES[:4]) and len(got) == 6
    per = e // n
    for name, r in got.items():
        assert r.shape == (n, t, k) and r.dtype.name == "int32"
        assert all(len(set(row)) == k for row in r.reshape(-1, k)), name  # distinct experts per token
        assert ((0 <= r) & (r < e)).all(), name
    dev = lambda r: r // per  # noqa: E731
    assert (got["all-to-one"][..., 0] == 0).all()
    assert all((dev(got["local-only"][d]) == d).all() for d in range(n))
    assert all((dev(got["remote-only"][d]) != d).all() for d in range(n))
    assert set(got["empty-experts"].reshape(-1)) < set(range(e))
    all_nine = list(every(devices=1, tokens=2, top_k=1, experts=3))
    assert len(all_nine) == 9
    # Named from 1, as semcheck's notes count routings (`routing 9 of the 9`, `every-9`).
    assert [name for name, _ in all_nine] == [f"every-{k}" for k in range(1, 10)]
    assert all_nine[0][1].reshape(-1).tolist() == [0, 0] and all_nine[-1][1].reshape(-1).tolist() == [2, 2]
    from semcheck import routings

    with routings.routing("all-to-one"):
        assert routings.current == "all-to-one"
    assert routings.current is None


def test_a_routing_the_kernel_computes_is_read_with_the_values_of_the_interpreted_run(exports):
    path = os.path.join(KERNELS, "computed_routing.py")
    # Without --interpret-values the row ids, an argmax of float scores, are run-time data.
    (plain,) = exports.get(path, 2)["kernels"]
    assert plain["status"] == "unsupported"
    assert {e["construct"] for e in plain["errors"]} == {"run-time data"}
    # With it, the copy into SMEM takes the values it carried in JAX's interpret mode.
    (k,) = exports.get(path, 2, {"SEMCHECK_INTERPRET_VALUES": "1"})["kernels"]
    assert k["status"] == "ok", k.get("errors")
    table = next(s for s in k["scalars"] if s["name"].endswith("(copied values)"))
    assert [(d["device"], d["values"]) for d in table["init"]] == [([0], [2, 0, 3, 1]), ([1], [2, 0, 3, 1])]
    assert [r["name"] for r in k["prefetch"]["recorded"]] == ["route_vmem@computed_routing.py:27"]
    assert k["prefetch"]["recorded"][0]["copies"] == [{"device": [0], "count": 1}, {"device": [1], "count": 1}]
    body = list(statements(k["body"]))
    copy = next(s for s in body if s["op"] == "scalar_copy")
    assert copy["source"] == k["scalars"].index(table) and copy["src"]["dims"] == [[4, 1]]
    # The copy stays a DMA of the checker, and each load of its destination reads its cell.
    assert any(s["op"] == "dma_start" and s["dma"]["kind"] == "local" for s in body)
    probe = next(i for i, b in enumerate(k["buffers"]) if b["name"] == "route_smem@loads")
    assert sum(s["op"] == "store" and s["dst"]["buffer"] == probe for s in body) == 4


def test_a_bitcast_view_to_a_wider_type_reads_each_word_as_one_cell(exports):
    k = kernel(exports, "bitcast_views", 2)
    buf = next(b for b in k["buffers"] if b["name"] == "buf")
    # The 2 halves a word packs are one cell; the rows, read two at a time, cells of two.
    assert buf["array_shape"] == [4, 2, 128] and buf["cell"] == [2, 2, 128]
    res = k["buffers"].index(next(b for b in k["buffers"] if b["name"] == "res"))
    stores = [s for s in statements(k["body"]) if s["op"] == "store" and s["dst"]["buffer"] == res]
    assert len(stores) == 2 and not any(s["cellwise"] for s in stores)
    assert {leaf["view"]["buffer"] for s in stores for leaf in loads_of(s["value"])} == {k["buffers"].index(buf)}


def test_a_module_imported_through_a_relative_path_is_named_where_it_is(exports, tmp_path):
    # The kernel lives in lib/ring.py; the script imports it through "<its folder>/../lib":
    # the document names lib/ring.py itself, no `..` in any file it names.
    (tmp_path / "lib").mkdir()
    (tmp_path / "scripts").mkdir()
    with open(os.path.join(SEEDS, "psum.py")) as f:
        (tmp_path / "lib" / "ring.py").write_text(f.read())
    script = tmp_path / "scripts" / "check_ring.py"
    script.write_text("import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'lib'))\n"
                      "import ring  # noqa: E402,F401\n")
    doc = exports.get(str(script), 2)
    assert doc["errors"] == [] and doc["kernels"], doc["errors"]
    files = set()

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("file"), str):
                files.add(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc["kernels"])
    assert str(tmp_path / "lib" / "ring.py") in files, files
    assert not any(".." in f.split(os.sep) for f in files), files
