"""Public kernels nobody here wrote (python/external/*.py). The packages are fetched at
pinned versions into a cache at test time (never into the repo); without network the
tests are skipped, saying so."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from helpers import ops, statements

HERE = os.path.dirname(os.path.abspath(__file__))
EXTERNAL = os.path.join(os.path.dirname(HERE), "external")
sys.path.insert(0, EXTERNAL)
import fetch  # noqa: E402


@pytest.fixture(scope="module")
def tpu_inference() -> str:
    try:
        return fetch.package("tpu-inference", "0.32.0")
    except (subprocess.CalledProcessError, RuntimeError, OSError) as e:
        pytest.skip(f"tpu-inference 0.32.0 could not be fetched: {e}")


def test_jax_all_gather(exports):
    doc = exports.get(os.path.join(EXTERNAL, "jax_all_gather.py"), 3)
    assert doc["errors"] == []
    (k,) = doc["kernels"]
    assert k["name"] == "ag_kernel" and k["status"] == "ok"
    assert [b["shape"] for b in k["buffers"]] == [[2], [3, 2]]
    assert k["entry"]["uses_barrier_semaphore"] and k["entry"]["collective_id"] == 0
    # The Python loop over the ring is unrolled: N - 1 rounds of two remote copies.
    assert ops(k).count("dma_start") == 1 + 2 * 2
    assert k["body"][0]["loc"]["file"].endswith("jax/experimental/pallas/ops/tpu/all_gather.py")


def test_tpu_inference_all_gather_matmul(exports, tpu_inference):
    doc = exports.get(os.path.join(EXTERNAL, "tpu_inference_all_gather_matmul.py"), 3)
    assert doc["errors"] == []
    (k,) = doc["kernels"]
    assert k["status"] == "ok" and k["grid"] == [5, 1, 1]
    stores = [s for s in statements(k["body"]) if s["op"] == "store"]
    assert any(s["value"]["kind"] == "fn" and not s["cellwise"] for s in stores)  # the jnp.dot
    assert k["body"][0]["loc"]["file"].startswith(tpu_inference)


def test_tpu_inference_fused_moe_is_unsupported_with_its_reason(exports, tpu_inference):
    doc = exports.get(os.path.join(EXTERNAL, "tpu_inference_fused_moe.py"), 2)
    assert doc["errors"] == []
    (k,) = doc["kernels"]
    assert k["status"] == "unsupported"
    (err,) = k["errors"]
    assert err["construct"] == "dynamic slice size"
    assert err["loc"]["file"].endswith("tpu_inference/kernels/fused_moe/v1/kernel.py")
