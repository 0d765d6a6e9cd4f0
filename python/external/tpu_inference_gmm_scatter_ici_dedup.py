"""tpu-inference 0.32.0 `kernels/experimental/fused_moe/gmm_fused/gmm_v2_ag_rs.py`,
`gmm_v2_scatter_ici_dedup`: the deduplicating variant of `gmm_v2_scatter_ici_nodedup`
(`tpu_inference_gmm_scatter_ici.py`). It accumulates every row of a token weighted by
its top-k weight in a VMEM accumulator and sends a token's row to its owner by a remote
copy only at the token's last occurrence on the chip (`is_last_for_token`), into one of
`ep_size` slots per token that the caller sums after the kernel; the same entry barrier
and receive count as the nodedup kernel.

Driver: the routing of `_moe_routing.py` (N devices on an `expert` axis, one expert per
device, 128 tokens per device, top 1, token t to expert t % N, rows sorted by expert,
bfloat16), GMM1's (128N, 256) output rows as the LHS, unit top-k weights, every row the
last (top 1), `num_tokens` 128N; inside `jax.shard_map` over the expert axis, as its
docstring requires; `pltpu.get_tpu_info()` answers with a v6e's sizes
(`fetch.pretend_tpu`).
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


def gmm2(h, w2, group_offset, total_recv):
    return agrs.gmm_v2_scatter_ici_dedup(
        h, w2, group_sizes(), jnp.array(order, jnp.int32), total_recv,
        jnp.ones((tokens,), jnp.float32),  # topk_weights
        jnp.ones((tokens,), jnp.int32),  # is_last_for_token: top 1, every row its token's last
        group_offset=group_offset, ep_size=n, ep_axis_name="expert", chunk_size=chunk, num_tokens=tokens)


out = jax.jit(jax.shard_map(
    gmm2, mesh=mesh, in_specs=(P(), P("expert"), P("expert"), P("expert")), out_specs=P("expert"),
    check_vma=False))(
    jnp.ones((tokens, inter), jnp.bfloat16),  # GMM1's output rows
    jnp.ones((n, inter, hidden), jnp.bfloat16),  # w2
    jnp.arange(n, dtype=jnp.int32),  # group_offset: each chip's first expert
    jnp.array(recv, jnp.int32))  # total_recv_count
print(out.shape)
