"""Public kernels nobody here wrote (python/external/*.py). The packages are fetched at
pinned versions into a cache at test time (never into the repo); without network the
tests are skipped, saying so."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import JAX_RELEASE, PLTPU_SEMAPHORE_API, PLTPU_SEMAPHORE_API_REMOVED, jax_before, needs_jax
from helpers import line_of, ops, sem_uses, statements

HERE = os.path.dirname(os.path.abspath(__file__))
EXTERNAL = os.path.join(os.path.dirname(HERE), "external")
sys.path.insert(0, EXTERNAL)
import fetch  # noqa: E402


def _fetched(name: str, version: str) -> str:
    return _fetched_for(name, version, None)


def _fetched_for(name: str, version: str, python_version: str | None) -> str:
    try:
        return fetch.package(name, version, python_version)
    except (subprocess.CalledProcessError, RuntimeError, OSError) as e:
        pytest.skip(f"{name} {version} could not be fetched: {e}")


@pytest.fixture(scope="module")
def tpu_inference() -> str:
    return _fetched("tpu-inference", "0.32.0")


@pytest.fixture(scope="module")
def tokamax() -> str:
    return _fetched_for("tokamax", "0.0.17", "3.12")


@pytest.fixture(scope="module")
def ejkernel() -> str:
    return _fetched("ejkernel", "0.0.80.3")


def _unsupported(exports, driver: str, devices: int) -> list[tuple[dict, dict]]:
    """Exports ``driver``: its script runs, and every kernel is refused for unsupported
    constructs, each named once per line and message: ``(kernel, its first error)`` for each."""
    doc = exports.get(os.path.join(EXTERNAL, driver), devices)
    assert doc["errors"] == [] and doc["script"]["status"] == "ok"
    out = []
    for k in doc["kernels"]:
        assert k["status"] == "unsupported" and k["errors"], k["name"]
        where = [(e["construct"], e["message"], e["loc"]["file"], e["loc"]["line"]) for e in k["errors"]]
        assert len(set(where)) == len(where), where
        out.append((k, k["errors"][0]))
    return out


def _checked(exports, driver: str, devices: int, env: dict[str, str] | None = None) -> list:
    """The verdicts of ``driver``'s document at N = ``devices``, the script run with ``env``
    (the document the other tests of the driver read, exported once per run), checked by
    the binary as ``semcheck.check_file`` checks the document it exports (``semcheck check
    DOC.json``): a second export of the same script would give the same document."""
    import shutil

    from semcheck._options import Options
    from semcheck.api import _verdicts_of

    if not (os.environ.get("SEMCHECK_BIN") or shutil.which("semcheck")):
        pytest.skip("the semcheck binary is not available (SEMCHECK_BIN)")
    return _verdicts_of(exports.get(os.path.join(EXTERNAL, driver), devices, env), Options())


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


def test_tpu_inference_fused_moe_is_read_with_the_values_of_the_interpreted_run(exports, tpu_inference):
    """The routing tables are computed on the device and copied into SMEM by DMAs: run-time
    data, unless read with the values they carried in JAX's TPU interpret mode; then the
    kernel is read whole (its bfloat16 buffers' 32-bit word views too) and proved."""
    kernels = _unsupported(exports, "tpu_inference_fused_moe.py", 2)
    ((k, err),) = kernels
    assert err["loc"]["file"].endswith("tpu_inference/kernels/fused_moe/v1/kernel.py")
    assert {e["construct"] for e in k["errors"]} == {"run-time data"}
    if JAX_RELEASE < (0, 10, 2):
        # The interpreters before jax 0.10.2, one device failing at the kernel's bitcast
        # views, leave the other waiting: the run would end only at its time limit
        # (measured: the tables are recorded whole, and the kernel proved, as under 0.10.2).
        pytest.skip("before jax 0.10.2 the interpreted run of this kernel ends only at its time limit")
    doc = exports.get(os.path.join(EXTERNAL, "tpu_inference_fused_moe.py"), 2, {"SEMCHECK_INTERPRET_VALUES": "1"})
    (k,) = doc["kernels"]
    assert k["status"] == "ok", k.get("errors")
    assert [r["name"].split("@")[0] for r in k["prefetch"]["recorded"]] == [
        "offsets_vmem", "t2e_routing_vmem", "starts_vmem", "sizes_vmem", "d2e_count_vmem"]
    # JAX's interpreter stops at the kernel's bitcast views, after the tables were copied.
    assert "BitcastTransform" in k["prefetch"]["interpret_error"], k["prefetch"]["interpret_error"]
    # Its pipeline's prologue loads SMEM at index -2 (a select discards the value).
    assert [n["construct"] for n in k["ignored"]].count("SMEM load out of range") == 2
    (v,) = _checked(exports, "tpu_inference_fused_moe.py", 2, {"SEMCHECK_INTERPRET_VALUES": "1"})
    assert v.verdict == "proved", v


@jax_before(PLTPU_SEMAPHORE_API_REMOVED, PLTPU_SEMAPHORE_API)
def test_ejkernel_reduce_scatter_matmul(exports, ejkernel):
    doc = exports.get(os.path.join(EXTERNAL, "ejkernel_reduce_scatter_matmul.py"), 3)
    assert doc["errors"] == [] and doc["script"]["status"] == "ok"
    (k,) = doc["kernels"]
    assert k["status"] == "ok" and k["grid"] == [3]
    assert k["entry"]["uses_barrier_semaphore"] and k["entry"]["collective_id"] == 0
    starts = [s for s in statements(k["body"]) if s["op"] == "dma_start"]
    # One step's two remote sends (left and right); every other copy is HBM <-> VMEM.
    assert sum(s["dma"]["kind"] == "remote" for s in starts) == 2
    # The capacity handshake: each step signals both neighbours and waits for both.
    for name in ("left_capacity_sem", "right_capacity_sem"):
        assert sorted(u["op"] for u in sem_uses(k, name)) == ["signal", "wait"]
    # `acc[...] = acc[...] + jnp.dot(x, y.T)`: one value of every cell it reads, not cellwise.
    dot = line_of(k["body"][0]["loc"]["file"], "jnp.dot(x_f32, y_f32.T)")
    (acc,) = {json.dumps(s["value"]) for s in statements(k["body"]) if s["op"] == "store" and s["loc"]["line"] == dot
              and not s["cellwise"]}
    assert '"dot_general' in acc and json.loads(acc)["kind"] == "add"
    assert k["body"][0]["loc"]["file"].startswith(ejkernel)


@jax_before(PLTPU_SEMAPHORE_API_REMOVED, PLTPU_SEMAPHORE_API)
def test_ejkernel_all_gather_matmul_is_tpu_inference_s_kernel(exports, ejkernel, tpu_inference):
    doc = exports.get(os.path.join(EXTERNAL, "ejkernel_all_gather_matmul.py"), 3)
    assert doc["errors"] == [] and doc["script"]["status"] == "ok"
    (k,) = doc["kernels"]
    assert k["status"] == "ok" and k["grid"] == [5, 1, 1]
    assert k["body"][0]["loc"]["file"].startswith(ejkernel)
    # The same kernel body as tpu-inference's, statement for statement.
    (t,) = exports.get(os.path.join(EXTERNAL, "tpu_inference_all_gather_matmul.py"), 3)["kernels"]
    assert ops(k) == ops(t)


def test_tpu_inference_gmm_fused_rs_is_read_whole(exports, tpu_inference):
    doc = exports.get(os.path.join(EXTERNAL, "tpu_inference_gmm_fused_rs.py"), 2)
    (k,) = doc["kernels"]
    assert k["name"].startswith("gmm_v2_fused_rs-") and k["status"] == "ok", k["errors"]
    # Read with the scalar-prefetched group sizes: the tile-count loop and the metadata
    # tables it fills in SMEM are read, and so are the per-row flags it builds as index
    # arrays (`jnp.arange(tile_m) < num_rows`, `jnp.stack`, `jnp.sum`): they size the
    # reduce-scatter's copies and, accumulated in the SMEM table `gm_id_ref`, its waits.
    assert k["prefetch"]["operands"]
    waits = [s for s in statements(k["body"]) if s["op"] == "dma_wait"
             and any(isinstance(ix.get("slice", {}).get("size"), dict) for ix in s["dma"]["src"].get("indices", []))]
    assert waits


@pytest.mark.parametrize("driver,zero_fill,push", [
    ("tpu_inference_gmm_fused_rs.py", "gmm_v2_gather_scatter.py:877", "gmm_fused_rs_nodedup.py:1090"),
    ("tokamax_gmm_fused_rs.py", "gmm_v2_gather_scatter.py:674", "gmm_fused_rs_nodedup.py:1044"),
])
def test_the_fused_reduce_scatter_gmms_race_on_their_zero_initialised_output(exports, driver, zero_fill, push,
                                                                               request):
    """As in the scatter GMM below: each device zero-fills its output after the entry
    barrier, so a peer past the barrier can write its rows into it before the zeros land
    (proved at N = 2..4 once the zero-fill is waited before the barrier, checked by hand)."""
    request.getfixturevalue("tokamax" if driver.startswith("tokamax") else "tpu_inference")
    (v,) = _checked(exports, driver, 2)
    assert v.verdict == "violation" and v.message.startswith("race on d0 out_buf_ref"), v
    assert zero_fill in v.message and push in v.message, v.message
    assert v.requires == [], v


@needs_jax((0, 10, 1), "tpu-inference 0.32.0's hierarchical reduce-scatter uses the SparseCore API of jax 0.10.1 "
                      "and later (jax 0.9 and 0.10.0 have no `MemoryRef @ VectorSubcoreMesh`, jax 0.8 no "
                      "`ChipVersion.num_physical_tensor_cores_per_chip`)")
def test_tpu_inference_hierrs_sc_is_unsupported_with_its_reason(exports, tpu_inference):
    ((k, err),) = _unsupported(exports, "tpu_inference_hierrs_sc.py", 8)
    assert k["name"] == "scs_kernel"
    # One pl.kernel over the scalar-subcore and the vector-subcore meshes.
    assert err["construct"] == "several meshes"
    assert err["loc"]["file"].endswith("collectives/hierrs_sc/kernel.py")


RPA_NEEDS = ("tpu-inference 0.32.0's ragged paged attention passes pltpu.CompilerParams(disable_semaphore_checks=...), "
             "which jax 0.8 and 0.9.0 do not have")


@needs_jax((0, 9, 1), RPA_NEEDS)
def test_tpu_inference_rpa_cp_ring_is_read_whole(exports, tpu_inference):
    doc = exports.get(os.path.join(EXTERNAL, "tpu_inference_rpa_cp_ring.py"), 2)
    assert doc["errors"] == [] and doc["script"]["status"] == "ok"
    # The decode-case and the mixed-case launch; the ring runs in both.
    assert [k["name"].split("-")[0] for k in doc["kernels"]] == ["RPAd", "RPAm"]
    for k in doc["kernels"]:
        assert k["status"] == "ok", k["errors"]
        # Read with the scalar-prefetched distribution and lengths the driver passes, the
        # double-buffer indices the kernel keeps in two of them as scalar state.
        assert {"sem_ids_ref", "bo_ids_ref"} <= {o["name"] for o in k["prefetch"]["operands"]}
    mixed = doc["kernels"][1]
    starts = [s for s in statements(mixed["body"]) if s["op"] == "dma_start"]
    # The KV cache reshaped from pages into rows as the source of the page copies; the
    # ring's remote copy of the current KV block to the next rank.
    assert any(s["dma"]["src"].get("stages", [{}])[0].get("reshape") for s in starts)
    assert sum(s["dma"]["kind"] == "remote" for s in starts) == 1
    # The strided loads of K and V, interleaved by head in one buffer.
    steps = [ix["slice"].get("step") for s in statements(mixed["body"]) if s["op"] == "store"
             for leaf in _loads(s["value"]) for st in leaf["view"].get("stages", []) for ix in st.get("indices", [])
             if "slice" in ix]
    assert 3 in steps


def _loads(value: dict) -> list[dict]:
    if value["kind"] == "load":
        return [value]
    return [leaf for a in value.get("args", []) for leaf in _loads(a)]


@needs_jax((0, 9, 1), RPA_NEEDS)
def test_tpu_inference_rpa_cp_ring_is_proved(exports, tpu_inference):
    """The ring of the cache phase (each rank sends its KV block to the next and waits for
    the next rank's release of the slot before overwriting it) is proved at N = 2."""
    verdicts = _checked(exports, "tpu_inference_rpa_cp_ring.py", 2)
    assert [v.verdict for v in verdicts] == ["proved", "proved"], verdicts


@jax_before(PLTPU_SEMAPHORE_API_REMOVED, PLTPU_SEMAPHORE_API)
def test_tpu_inference_gmm_ag_rs_fails_in_the_library(exports, tpu_inference):
    doc = exports.get(os.path.join(EXTERNAL, "tpu_inference_gmm_ag_rs.py"), 2)
    # gmm_v2_ag_gmm1's kernel calls dma_gather_gm_start with its old six arguments.
    assert doc["script"]["status"] == "raised" and doc["kernels"] == []
    (err,) = doc["errors"]
    assert err["construct"] == "script error"
    assert err["message"].startswith("TypeError: dma_gather_gm_start() takes 4 positional arguments but 6")
    assert err["loc"]["file"].endswith("fused_moe/gmm_fused/gmm_v2_ag_rs.py")
    assert err["loc"]["code"] == "dma_gather_gm_start("


@jax_before(PLTPU_SEMAPHORE_API_REMOVED, PLTPU_SEMAPHORE_API)
def test_tpu_inference_gmm_scatter_ici_is_read_whole(exports, tpu_inference):
    doc = exports.get(os.path.join(EXTERNAL, "tpu_inference_gmm_scatter_ici.py"), 2)
    (k,) = doc["kernels"]
    assert k["name"].endswith("-scatter_ici_nodedup") and k["status"] == "ok", k["errors"]
    # Read with the group sizes and row order the driver passes: the tile metadata lives in
    # SMEM scalar state, and the copies' sizes are computed from it.
    assert {o["name"] for o in k["prefetch"]["operands"]} >= {"lhs_group_sizes_ref", "group_offset_ref"}
    assert k["scalars"]
    dynamic = [s for s in statements(k["body"]) if s["op"] == "dma_start"
               and any(isinstance(ix.get("slice", {}).get("size"), dict) for ix in s["dma"]["src"].get("indices", []))]
    assert dynamic


@jax_before(PLTPU_SEMAPHORE_API_REMOVED, PLTPU_SEMAPHORE_API)
def test_tpu_inference_gmm_scatter_ici_races_on_its_zero_initialised_output(exports, tpu_inference):
    """Each device zero-fills its output (zero_out_start_3d) after the entry barrier, so a
    peer that passed the barrier can scatter its rows into that output before the zeros
    land over them (found at every N; proved once the zero-fill is waited before the
    barrier, checked by hand)."""
    (v,) = _checked(exports, "tpu_inference_gmm_scatter_ici.py", 2)
    assert v.verdict == "violation" and v.message.startswith("race on d0 out_buf_ref"), v
    assert "gmm_v2_gather_scatter.py:877" in v.message and "gmm_v2_ag_rs.py:1877" in v.message, v.message
    # A box of 128 cells is named by its ranges, not cell by cell.
    assert "local_copy scatter_staging_3x_ref[0,0:128] -> out_buf_ref[0:128]" in v.message, v.message


def test_tokamax_fused_moe_decode_is_read_whole_and_proved(exports, tokamax):
    """The decode MoE block's all-reduce (entry barrier to every rank, an all-to-all and an
    all-gather of remote copies) and its weight ring of local copies: proved at N = 2."""
    doc = exports.get(os.path.join(EXTERNAL, "tokamax_fused_moe_decode.py"), 2)
    assert doc["errors"] == [] and doc["script"]["status"] == "ok"
    (k,) = doc["kernels"]
    assert k["status"] == "ok", k["errors"]
    starts = [s for s in statements(k["body"]) if s["op"] == "dma_start"]
    assert any(s["dma"]["kind"] == "remote" for s in starts) and any(s["dma"]["kind"] == "local" for s in starts)
    (v,) = _checked(exports, "tokamax_fused_moe_decode.py", 2)
    assert v.verdict == "proved", v


def test_tokamax_fused_ep_moe_reads_its_index_windows_and_is_proved(exports, tokamax):
    """The fused EP MoE's token-index windows, copied from its `token_gather` input into
    double-buffered SMEM, are scalar state with the driver's values (each load also a
    read of the window's cell): the kernel is read whole and proved at N = 2."""
    doc = exports.get(os.path.join(EXTERNAL, "tokamax_fused_ep_moe.py"), 2)
    (k,) = [k for k in doc["kernels"] if k["communicates"]]
    assert k["status"] == "ok", k["errors"]
    windows = {b["name"] for b in k["buffers"] if b["name"].endswith("@loads")}
    assert len(windows) == 2, windows
    verdicts = _checked(exports, "tokamax_fused_ep_moe.py", 2)
    assert [v.verdict for v in verdicts if v.kernel == k["name"]] == ["proved"], verdicts


def test_tokamax_fused_ep_moe_is_proved_over_generated_routings(tokamax):
    """The driver's routing and semcheck.routings' generated ones (all to one expert, local
    only, remote only, empty experts, 3 random draws) as router logits, one command: every
    routing's tables are read with its values, and the kernel is proved for the 8."""
    import shutil

    binary = os.environ.get("SEMCHECK_BIN") or shutil.which("semcheck")
    if not binary:
        pytest.skip("the semcheck binary is not available (SEMCHECK_BIN)")
    out = subprocess.run([binary, "check", os.path.join(EXTERNAL, "tokamax_fused_ep_moe.py"), "--devices", "2",
                          "--json"], env={**os.environ, "ROUTINGS": "generated"}, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-4000:]
    doc = json.loads(out.stdout)
    (sets,) = doc["summary"]["value_sets"]
    assert sets["routings"] == 8 and len(sets["proved"]) == 8, sets
    # Each routing gives its own tables: the all-to-one routing sends device 1 no rows.
    tables = [c["prefetch"] for c in doc["cases"]]
    assert [t["set"]["index"] for t in tables] == list(range(1, 9))
    rows = {o["name"]: o["values"] for o in tables[1]["operands"]}["expert_rows_sm"]
    assert [r["values"] for r in rows] == [[64, 64], [0, 0]], rows


@pytest.fixture(scope="module")
def tpu_inference_0_25() -> str:
    return _fetched("tpu-inference", "0.25.0")


@jax_before(PLTPU_SEMAPHORE_API_REMOVED, PLTPU_SEMAPHORE_API)
def test_tpu_inference_hier_rs_races_between_its_phases(exports, tpu_inference_0_25):
    """tpu-inference 0.25.0's TensorCore hierarchical reduce-scatter (removed after it) uses
    the same rows of a device's `recv_buf` for its twin core's phase-1 copy and for the
    neighbour chip's phase-2 copy, with no barrier between: at N = 4 the neighbour, done with
    its own phase 1, writes them while the twin's copy is still landing (proved at N = 2,
    where there is no phase 2)."""
    (v,) = _checked(exports, "tpu_inference_hier_rs.py", 4)
    assert v.verdict == "violation" and v.message.startswith("race on d3 recv_buf_ref"), v
    assert "hierarchical_reduce_scatter.py:153" in v.message and "hierarchical_reduce_scatter.py:294" in v.message
    assert v.requires == [], v


@jax_before(PLTPU_SEMAPHORE_API_REMOVED, PLTPU_SEMAPHORE_API)
def test_tpu_inference_gmm_scatter_ici_dedup_fails_in_the_library(exports, tpu_inference):
    doc = exports.get(os.path.join(EXTERNAL, "tpu_inference_gmm_scatter_ici_dedup.py"), 2)
    # Like gmm_v2_ag_gmm1, it calls dma_gather_gm_start with its old six arguments.
    assert doc["script"]["status"] == "raised" and doc["kernels"] == []
    (err,) = doc["errors"]
    assert err["construct"] == "script error"
    assert err["message"].startswith("TypeError: dma_gather_gm_start() takes 4 positional arguments but 6")
    assert err["loc"]["file"].endswith("fused_moe/gmm_fused/gmm_v2_ag_rs.py") and err["loc"]["line"] == 1069


@pytest.mark.parametrize("version,first", [("0.12.0", 433), ("0.13.3", 459)])
@jax_before(PLTPU_SEMAPHORE_API_REMOVED, PLTPU_SEMAPHORE_API)
def test_tpu_inference_fused_moe_ring_barrier_versions_are_unsupported_like_0_32(exports, version, first):
    """tpu-inference 0.12.0's and 0.13.3's fused MoE (a ring barrier: one signal to the right
    neighbour, one wait) are refused for 0.32.0's reason: the routing is computed on the
    device (without --interpret-values)."""
    root = _fetched("tpu-inference", version)
    env = {"VERSION": version}
    doc = exports.get(os.path.join(EXTERNAL, "tpu_inference_fused_moe_ring_barrier.py"), 2, env=env)
    assert doc["errors"] == [] and doc["script"]["status"] == "ok"
    (k,) = doc["kernels"]
    assert k["status"] == "unsupported"
    assert k["errors"][0]["loc"]["file"].startswith(root) and k["errors"][0]["loc"]["line"] == first
    assert {e["construct"] for e in k["errors"]} == {"run-time data"}
    assert len(k["errors"]) == 12


def test_tokamax_fused_ep_moe_slab_build_pushes_from_hbm(exports, tokamax):
    """With a ragged stride above `ep * g_local * tile_m` the kernel is built with its HBM
    contribution slab: tiles committed by local copies, drained, then pushed per expert
    and destination from `contrib_hbm` (not from the VMEM staging tiles): proved at N = 2."""
    doc = exports.get(os.path.join(EXTERNAL, "tokamax_fused_ep_moe.py"), 2, env={"SLAB": "1"})
    (k,) = [k for k in doc["kernels"] if k["communicates"]]
    assert k["status"] == "ok", k["errors"]
    names = [b["name"] for b in k["buffers"]]
    remote = {names[s["dma"]["src"]["buffer"]] for s in statements(k["body"])
              if s["op"] == "dma_start" and s["dma"]["kind"] == "remote"}
    assert remote == {"contrib_hbm", "cscl_hbm"}, remote
    verdicts = _checked(exports, "tokamax_fused_ep_moe.py", 2, {"SLAB": "1"})
    assert [v.verdict for v in verdicts if v.kernel == k["name"]] == ["proved"], verdicts


@needs_jax((0, 9, 1), RPA_NEEDS)
def test_tpu_inference_rpa_cp_ring_prefill_launch_is_read_whole(exports, tpu_inference):
    """With a prefill-only sequence and `chunk_prefill_size`, the entry point launches the
    prefill case too (`RPAp`), the same ring compiled for a static query length."""
    doc = exports.get(os.path.join(EXTERNAL, "tpu_inference_rpa_cp_ring.py"), 2, env={"PREFILL": "1"})
    assert doc["errors"] == [] and doc["script"]["status"] == "ok"
    assert [k["name"].split("-")[0] for k in doc["kernels"]] == ["RPAd", "RPAp", "RPAm"]
    for k in doc["kernels"]:
        assert k["status"] == "ok", k["errors"]
    prefill = doc["kernels"][1]
    starts = [s for s in statements(prefill["body"]) if s["op"] == "dma_start"]
    assert sum(s["dma"]["kind"] == "remote" for s in starts) == 1
