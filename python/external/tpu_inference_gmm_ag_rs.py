"""tpu-inference 0.32.0 `kernels/experimental/fused_moe/gmm_fused/gmm_v2_ag_rs.py`: the
expert-parallel MoE split into an all-gather fused with the first grouped matmul
(`gmm_v2_ag_gmm1`: each chip pushes the tokens its peers' experts need into their HBM
caches by remote copies, following a send schedule computed in JAX, then gathers rows
and runs GMM1 + SiLU) and the second grouped matmul fused with the reduce-scatter
(`gmm_v2_scatter_ici_nodedup`: every output row is written straight into its owner's
output by a remote copy). The package exports them (`gmm_fused/__init__.py`, with a
`_dedup` variant of the second); nothing in tpu-inference 0.32.0 calls them, so the
driver chains them as the module's docstring pairs them, inside `jax.shard_map` over the
expert axis as their docstrings require. The library's own trace of `gmm_v2_ag_gmm1`
fails (`dma_gather_gm_start` called with 6 arguments, it takes 4); the second kernel
alone: `tpu_inference_gmm_scatter_ici.py`.

Driver: N devices on an `expert` axis, one expert per device, 128 tokens per device,
256-wide hidden and intermediate sizes, top 1, token t routed to expert t % N (rows
sorted by expert, the same routing as `tpu_inference_gmm_fused_rs.py`), bfloat16. Each
chip gets the global group sizes and row order and its own `group_offset` (its first
expert), as `run_gmm_fused_rs` passes them. One stand-in, for the host, not the kernel:
`pltpu.get_tpu_info()`, which the launchers and kernels size their tiles from, answers
with a v6e's sizes (`fetch.pretend_tpu`). The package's `__init__`s are bypassed.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch  # noqa: E402

fetch.pretend_tpu("v6e")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402
from _moe_routing import chunk, group_sizes, hidden, inter, mesh, n, order, recv, tokens  # noqa: E402

agrs = fetch.module("tpu-inference", "0.32.0", "tpu_inference.kernels.experimental.fused_moe.gmm_fused.gmm_v2_ag_rs")


def moe(x, w1, w2, group_offset, total_recv):
    rows = jnp.array(order, jnp.int32)
    h = agrs.gmm_v2_ag_gmm1(x, w1, group_sizes(), rows, group_offset=group_offset, fuse_act="silu", ep_size=n,
                            ep_axis_name="expert")
    out = agrs.gmm_v2_scatter_ici_nodedup(h, w2, group_sizes(), rows, total_recv, group_offset=group_offset,
                                          ep_size=n, ep_axis_name="expert", chunk_size=chunk)
    return out


out = jax.jit(jax.shard_map(
    moe, mesh=mesh, in_specs=(P("expert"), P("expert"), P("expert"), P("expert"), P("expert")),
    out_specs=P("expert"), check_vma=False))(
    jnp.ones((tokens, hidden), jnp.bfloat16),  # hidden states, chunk per device
    jnp.ones((n, hidden, 2 * inter), jnp.bfloat16),  # w1 (gate and up)
    jnp.ones((n, inter, hidden), jnp.bfloat16),  # w2
    jnp.arange(n, dtype=jnp.int32),  # group_offset: each chip's first expert
    jnp.array(recv, jnp.int32))  # total_recv_count
print(out.shape)
