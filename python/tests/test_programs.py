"""Programs of several kernels: kernels of one script that hand semaphores
(``pltpu.SEMAPHORE``-space operands) from one to the next are exported as a program
(``programs`` of SCHEMA.md), with the arguments that hold one value linked."""

from __future__ import annotations

import os

import pytest

from conftest import KERNELS, SEEDS


def doc_of(exports, path: str, n: int = 2, env: dict | None = None) -> dict:
    doc = exports.get(path, n, env)
    assert doc["errors"] == [], doc["errors"]
    assert all(k["status"] == "ok" for k in doc["kernels"]), [k.get("errors") for k in doc["kernels"]]
    return doc


def names(doc: dict, program: dict) -> list[str]:
    return [doc["kernels"][k]["name"] for k in program["kernels"]]


@pytest.mark.parametrize("n", (2, 3))
def test_split_ppermute_is_one_program_of_three_kernels(exports, n):
    doc = doc_of(exports, os.path.join(SEEDS, "split_ppermute.py"), n)
    assert doc["warnings"] == []
    (p,) = doc["programs"]
    assert p["name"] == "permute" and p["invocations"] == 1
    assert names(doc, p) == ["start_kernel", "send_done_kernel", "recv_done_kernel"]
    assert p["call"]["text"] == "y = permute(x)"
    # The kernel reading the block after recv_done is no part of it: checked alone.
    standalone = {k["name"]: k["standalone"] for k in doc["kernels"]}
    assert standalone == {"start_kernel": False, "send_done_kernel": False, "recv_done_kernel": False,
                          "use_kernel": True}
    start, send_done, recv_done = (doc["kernels"][k] for k in p["kernels"])
    # The start kernel's arguments: x (aliased: one buffer), o_ref, and two semaphores it
    # hands out.
    assert start["arguments"] == [{"buffer": 0}, {"buffer": 0}, {"buffer": 1}, {"semaphore": 0}, {"semaphore": 1}]
    assert [(s["name"], s["role"]) for s in start["semaphores"]] == [
        ("send_sem", "output"), ("recv_sem", "output"), ("barrier", "scratch")]
    assert [(s["name"], s["role"]) for s in send_done["semaphores"]] == [("send_sem", "input")]
    assert [(s["name"], s["role"]) for s in recv_done["semaphores"]] == [("recv_sem", "input")]
    links = sorted((tuple(link["from"]), tuple(link["to"])) for link in p["links"])
    assert links == sorted([
        ((0, 1), (1, 0)),  # x, as start_kernel hands it back, into send_done_kernel
        ((0, 3), (1, 1)),  # send_sem
        ((1, 2), (2, 0)),  # x, as send_done_kernel hands it back, into recv_done_kernel
        ((0, 2), (2, 1)),  # the block the copy lands in
        ((0, 4), (2, 2)),  # recv_sem
    ])


def test_a_read_before_recv_done_joins_the_program(exports):
    doc = doc_of(exports, os.path.join(SEEDS, "split_ppermute--early-read.py"))
    (p,) = doc["programs"]
    assert names(doc, p) == ["start_kernel", "send_done_kernel", "use_kernel", "recv_done_kernel"]
    assert all(not k["standalone"] for k in doc["kernels"])


def test_a_start_kernel_alone_is_a_program_of_one_kernel(exports):
    path = os.path.join(KERNELS, "split_start_only.py")
    doc = doc_of(exports, path)
    (p,) = doc["programs"]
    assert names(doc, p) == ["start_kernel"] and p["links"] == []
    doc = doc_of(exports, path, env={"DONE": "1"})
    (p,) = doc["programs"]
    assert names(doc, p) == ["start_kernel", "done_kernel"]


def test_semaphores_passed_through_the_script_link_two_jitted_functions(exports):
    doc = doc_of(exports, os.path.join(KERNELS, "split_two_jits.py"))
    (p,) = doc["programs"]
    assert p["name"] == "start+done"
    assert names(doc, p) == ["start_kernel", "done_kernel"]
    links = sorted((tuple(link["from"]), tuple(link["to"])) for link in p["links"])
    # start_kernel(x, out, send, recv), done_kernel(x, out, send, recv, aliased out): x is
    # one array passed to both, the others are start_kernel's results.
    assert links == [((0, 0), (1, 0)), ((0, 1), (1, 1)), ((0, 2), (1, 2)), ((0, 3), (1, 3))]


def test_nested_tuples_of_semaphore_outputs_and_an_unrolled_loop(exports):
    path = os.path.join(KERNELS, "split_bidi.py")
    doc = doc_of(exports, path)
    (p,) = doc["programs"]
    assert names(doc, p) == ["start_kernel", "send_done_kernel", "recv_done_kernel"]
    start = doc["kernels"][p["kernels"][0]]
    assert [s["role"] for s in start["semaphores"]] == ["output"] * 4 + ["scratch"]
    # Two iterations of a fori_loop: nothing is in flight from one to the next, so each
    # is the same program, run twice.
    doc = doc_of(exports, path, env={"LOOP": "2"})
    (p,) = doc["programs"]
    assert p["invocations"] == 2


def test_a_start_kernel_with_scalar_prefetch_has_its_values_read(exports):
    """The CPU run that recovers scalar-prefetch values survives semaphore-typed outputs."""
    doc = doc_of(exports, os.path.join(KERNELS, "split_prefetch.py"))
    (p,) = doc["programs"]
    start = doc["kernels"][p["kernels"][0]]
    prefetch = start["prefetch"]
    assert "error" not in prefetch, prefetch
    (operand,) = prefetch["operands"]
    assert [v["values"] for v in operand["values"]] == [[1], [2]]


def test_kernels_of_a_program_cut_a_shared_array_alike(exports):
    """The start kernel copies halves, the done kernel waits on whole blocks: both cut
    x and the block into halves."""
    doc = doc_of(exports, os.path.join(KERNELS, "split_two_jits.py"), env={"HALVES": "1"})
    (p,) = doc["programs"]
    start, done = (doc["kernels"][k] for k in p["kernels"])
    for k in (start, done):
        assert [(b["name"], b["shape"], b["cell"]) for b in k["buffers"][:2]] == [
            ("x_ref", [2], [4, 128]), ("o_ref", [2], [4, 128])], k["name"]


@pytest.mark.parametrize("n", (3, 4))
def test_a_staggered_loop_is_one_program_run_once_per_copy(exports, n):
    doc = doc_of(exports, os.path.join(KERNELS, "split_staggered.py"), n)
    (p,) = doc["programs"]
    assert names(doc, p) == ["start_kernel", "send_done_kernel", "recv_done_kernel"]
    assert p["invocations"] == n - 1
