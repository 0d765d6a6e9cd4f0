"""Every seed kernel and mutant file exports at N = 2, 3, 4 with the DSL's declarations,
cells and statements, each statement naming its source line."""

from __future__ import annotations

import os

import pytest

from conftest import KERNELS, PL_KERNEL_KEYWORDS, PL_KERNEL_KEYWORDS_FROM, SEEDS, needs_jax, seed_params
from helpers import evaluate, line_of, ops, sem_uses, statements

NS = (2, 3, 4)


def kernel_of(exports, name: str, n: int) -> dict:
    doc = exports.get(os.path.join(SEEDS, name + ".py"), n)
    assert doc["errors"] == [], doc["errors"]
    assert doc["format"] == "semcheck-kernel 1"
    assert doc["devices"] == n
    (k,) = doc["kernels"]
    assert k["status"] == "ok", (k.get("errors"), k.get("refusal"))
    return k


def decls(k: dict) -> tuple:
    bufs = [(b["name"], b["role"], b["space"], b["shape"], b["cell_bytes"], b["shared"]) for b in k["buffers"]]
    sems = [(s["name"], s["kind"], s["len"], s["scoped"]) for s in k["semaphores"]]
    return bufs, sems


@pytest.mark.parametrize("path", seed_params(), ids=lambda p: os.path.basename(p))
@pytest.mark.parametrize("n", NS)
def test_every_seed_file_exports_with_located_statements(exports, path, n):
    doc = exports.get(path, n)
    assert doc["errors"] == []
    # One kernel, or (split_ppermute) the kernels of one program of several kernels.
    if doc["programs"]:
        assert len(doc["programs"]) == 1 and len(doc["kernels"]) >= 2, (doc["programs"], len(doc["kernels"]))
    else:
        assert len(doc["kernels"]) == 1
    assert doc["files"][path] == doc["script"]["sha256"]
    src = open(path).read().splitlines()
    for k in doc["kernels"]:
        assert k["status"] == "ok"
        assert k["function"]["file"] == path
        for s in statements(k["body"]):
            loc = s["loc"]
            assert loc is not None, s["op"]
            assert loc["file"] == path
            assert loc["text"] == src[loc["line"] - 1].strip()
            assert loc["text"]


@pytest.mark.parametrize("n", NS)
def test_ppermute(exports, n):
    k = kernel_of(exports, "ppermute", n)
    path = os.path.join(SEEDS, "ppermute.py")
    assert decls(k) == ([("x_ref", "input", "hbm", [], 4096, False), ("y_ref", "output", "hbm", [], 4096, False)],
                        [("send_sem", "dma", None, False), ("recv_sem", "dma", None, False)])
    assert k["grid"] == [] and k["mesh"]["axes"] == [{"name": "x", "size": n}]
    assert ops(k) == ["dma_start", "dma_wait:send", "dma_wait:recv"]
    start = k["body"][0]
    assert start["loc"]["line"] == line_of(path, "dma.start()") and start["loc"]["text"] == "dma.start()"
    assert start["loc"]["function"] == "right_shift_kernel"
    dest = start["dma"]["device"]
    assert dest["kind"] == "mesh"
    assert [evaluate(dest["coords"][0], {"x": d}) for d in range(n)] == [(d + 1) % n for d in range(n)]
    assert k["entry"]["implicit_entry_barrier"] and k["entry"]["collective_id"] is None


@pytest.mark.parametrize("n", NS)
def test_all_gather(exports, n):
    k = kernel_of(exports, "all_gather", n)
    assert k["grid"] == [n - 1]
    bufs, sems = decls(k)
    assert bufs == [("x_ref", "input", "hbm", [], 4096, False), ("out_ref", "output", "hbm", [n], 4096, False)]
    assert sems == [("local_sem", "dma", None, False), ("send_sem", "dma", None, False),
                    ("recv_sems", "dma", n - 1, False)]
    assert ops(k) == ["when", "dma_start", "dma_wait:all", "dma_start", "dma_wait:send", "dma_wait:recv"]
    remote = k["body"][1]["dma"]
    assert remote["recv_sem"]["index"] == {"program_id": 0}
    slot = remote["src"]["indices"][0]["at"]
    assert [evaluate(slot, {"x": 0}, (s,), (n - 1,)) for s in range(n - 1)] == [(0 - s) % n for s in range(n - 1)]


@pytest.mark.parametrize("n", NS)
def test_psum(exports, n):
    k = kernel_of(exports, "psum", n)
    path = os.path.join(SEEDS, "psum.py")
    assert k["grid"] == [n]
    assert decls(k) == (
        [("x_ref", "input", "vmem", [], 4096, False), ("o_ref", "output", "vmem", [], 4096, False),
         ("hbm_buf", "output", "hbm", [2], 4096, False), ("vmem_recv", "scratch", "vmem", [], 4096, False)],
        [("local_copy_sem", "dma", None, False), ("remote_recv_sem", "dma", None, False),
         ("remote_send_sem", "dma", None, False), ("capacity_sem", "regular", None, False),
         ("barrier", "barrier", None, False), ("second", "regular", None, True)])
    assert ops(k) == ["when", "signal", "signal", "wait", "scoped", "signal", "signal", "wait", "store", "store",
                      "dma_start", "dma_wait:send", "dma_wait:recv", "signal", "dma_start", "wait", "dma_start",
                      "dma_wait:all", "store", "dma_wait:send", "dma_wait:recv"]
    e = k["entry"]
    assert (e["collective_id"], e["uses_barrier_semaphore"], e["implicit_entry_barrier"]) == (0, True, False)
    acc = [s for s in statements(k["body"]) if s["op"] == "store"][-1]
    assert acc["loc"]["line"] == line_of(path, "o_ref[...] += vmem_recv[...]")
    assert acc["value"] == {"kind": "add", "args": [{"kind": "load", "view": {"buffer": 1, "indices": []}},
                                                     {"kind": "load", "view": {"buffer": 3, "indices": []}}]}
    # neighbor_barrier's signals name their line and the call in the kernel.
    sig = next(statements(k["body"][0]["body"]))
    assert sig["loc"]["line"] == line_of(path, "pl.semaphore_signal(", 0)
    assert sig["loc"]["function"] == "neighbor_barrier"
    assert sig["loc"]["stack"][-1]["line"] == line_of(path, "neighbor_barrier(left, right)")


@pytest.mark.parametrize("n", NS)
def test_psum_scatter(exports, n):
    k = kernel_of(exports, "psum_scatter", n)
    assert k["grid"] == [n, 2]
    bufs, sems = decls(k)
    assert bufs == [("x_ref", "input", "vmem", [n, 2], 4096, False), ("o_ref", "output", "vmem", [2], 4096, False),
                    ("hbm_buf", "output", "hbm", [2, 2], 4096, False), ("accum", "scratch", "vmem", [], 4096, False)]
    assert [s[0] for s in sems] == ["local_copy_sem", "left_recv_sem", "left_send_sem", "right_recv_sem",
                                    "right_send_sem", "left_capacity_sem", "right_capacity_sem", "barrier", "second"]
    # current_half = pl.ds(phase * 8, 8) is cell `phase` of the halves.
    local = [s for s in statements(k["body"]) if s["op"] == "dma_start" and s["dma"]["kind"] == "local"][0]
    half = local["dma"]["src"]["indices"][1]["slice"]
    assert half["size"] == 1
    assert [evaluate(half["start"], {"x": 0}, (0, p), (n, 2)) for p in (0, 1)] == [0, 1]


def _is_seed_001s_exchange(k: dict) -> dict:
    """Asserts that `k` is seed 001's exchange between the two TensorCores of a chip (its
    operands, semaphores and statements, its signal to the other core); returns the signal."""
    assert decls(k) == ([("x_hbm", "input", "hbm", [2], 4096, True), ("o_hbm", "output", "hbm", [2], 4096, True),
                         ("send_vmem", "scratch", "vmem", [], 4096, False),
                         ("recv_vmem", "scratch", "vmem", [], 4096, False)],
                        [("sems", "dma", 4, False), ("barrier", "barrier", None, False)])
    assert ops(k) == ["dma_start", "dma_wait:all", "signal", "wait", "dma_start", "dma_wait:send", "dma_wait:recv",
                      "dma_start", "dma_wait:all"]
    sig = k["body"][2]
    assert sig["device"]["kind"] == "axes" and sig["device"]["axes"][0]["axis"] == "tc"
    assert [evaluate(sig["device"]["axes"][0]["index"], {"tc": c}) for c in (0, 1)] == [1, 0]
    return sig


@needs_jax(PL_KERNEL_KEYWORDS_FROM, PL_KERNEL_KEYWORDS)
def test_tensorcore_seeds(exports):
    k = kernel_of(exports, "tc_exchange", 2)
    assert k["primitive"] == "mpmd_map" and k["mesh"] == {"kind": "tensorcore", "axes": [{"name": "tc", "size": 2}]}
    _is_seed_001s_exchange(k)
    assert k["entry"]["collective_id"] == 1 and not k["entry"]["implicit_entry_barrier"]

    k = kernel_of(exports, "producer_consumer", 2)
    assert decls(k)[0] == [("x_hbm", "input", "hbm", [], 4096, True), ("o_hbm", "output", "hbm", [2], 4096, True),
                           ("vmem", "scratch", "vmem", [], 4096, False)]
    stores = [s for s in statements(k["body"]) if s["op"] == "store"]
    assert [s["value"]["name"] for s in stores] == ["2*{}", "{}+1"]
    assert k["entry"]["implicit_entry_barrier"]


def test_pl_kernel_is_read_alike_under_every_jax(exports):
    """tc_core_index.py is seed 001's exchange with its rendezvous signalled by
    `core_index=`, written to run under every JAX: `pl.kernel` (staged as `mpmd_map` by
    jax 0.10, as refs closed over by a `core_map` by 0.8 and 0.9) is read with the same
    arguments, names, roles and statements."""
    path = os.path.join(KERNELS, "tc_core_index.py")
    doc = exports.get(path, 2)
    assert doc["errors"] == []
    (k,) = doc["kernels"]
    assert k["status"] == "ok", k["errors"]
    assert (k["name"], k["primitive"]) == ("exchange_kernel", "mpmd_map")
    assert k["function"] == {"file": path, "line": line_of(path, "def exchange_kernel"), "function": "exchange_kernel"}
    assert k["mesh"] == {"kind": "tensorcore", "axes": [{"name": "tc", "size": 2}]}
    sig = _is_seed_001s_exchange(k)
    assert sig["loc"]["line"] == line_of(path, "pl.semaphore_signal(ready, 1, core_index=")
    assert k["entry"]["collective_id"] == 1 and not k["entry"]["implicit_entry_barrier"]


@pytest.mark.parametrize("n", NS)
def test_mutants_differ_from_their_seed_as_named(exports, n):
    k = kernel_of(exports, "all_gather--shared-recv-sem", n)
    assert ("recv_sem", "dma", None, False) in decls(k)[1]

    assert sem_uses(kernel_of(exports, "psum", n), "capacity_sem")
    assert sem_uses(kernel_of(exports, "psum--no-capacity", n), "capacity_sem") == []

    for proto in ("psum", "psum_scatter"):
        k = kernel_of(exports, f"{proto}--no-barrier", n)
        assert "barrier" not in [s["name"] for s in k["semaphores"]]
        e = k["entry"]
        assert (e["collective_id"], e["skip_device_barrier"], e["implicit_entry_barrier"]) == (None, True, False)

    k = kernel_of(exports, "psum--single-barrier", n)
    assert "scoped" not in ops(k) and k["invocations"] == 2

    k = kernel_of(exports, "psum_scatter--no-capacity", n)
    assert sem_uses(k, "left_capacity_sem") == sem_uses(k, "right_capacity_sem") == []
    seed = len(sem_uses(kernel_of(exports, "psum_scatter", n), "left_capacity_sem"))
    k = kernel_of(exports, "psum_scatter--no-final-drain", n)
    assert len(sem_uses(k, "left_capacity_sem")) == seed - 1


@needs_jax(PL_KERNEL_KEYWORDS_FROM, PL_KERNEL_KEYWORDS)
def test_tensorcore_mutants(exports):
    k = kernel_of(exports, "tc_exchange--no-barrier", 2)
    assert "signal" not in ops(k) and k["entry"]["skip_device_barrier"]
    assert not k["entry"]["implicit_entry_barrier"]
    k = kernel_of(exports, "producer_consumer--no-signal", 2)
    assert "signal" not in ops(k) and "wait" not in ops(k)
