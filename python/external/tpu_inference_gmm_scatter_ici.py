"""tpu-inference 0.32.0 `kernels/experimental/fused_moe/gmm_fused/gmm_v2_ag_rs.py`,
`gmm_v2_scatter_ici_nodedup`: the second grouped matmul of the expert-parallel MoE fused
with the reduce-scatter, every output row written straight into its owning chip's output
by a remote copy. The one of the module's three exports whose trace reaches its kernel
(`tpu_inference_gmm_ag_rs.py` chains it after `gmm_v2_ag_gmm1`, whose trace fails in the
library).

Driver: the routing of `tpu_inference_gmm_ag_rs.py` (N devices on an `expert` axis, one
expert per device, 128 tokens per device, top 1, token t to expert t % N, rows sorted by
expert, bfloat16); the LHS is what `gmm_v2_ag_gmm1` returns on each chip, the (128N, 256)
activations of every row (replicated: each chip computes its own group's rows), w2 is
(N, 256, 256) sharded on experts; `total_recv_count` is the rows of a chip's chunk routed
to another chip. Inside `jax.shard_map` over the expert axis, as its docstring requires;
`pltpu.get_tpu_info()` answers with a v6e's sizes (`fetch.pretend_tpu`). The package's
`__init__`s are bypassed.
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
    return agrs.gmm_v2_scatter_ici_nodedup(h, w2, group_sizes(), jnp.array(order, jnp.int32), total_recv,
                                           group_offset=group_offset, ep_size=n, ep_axis_name="expert",
                                           chunk_size=chunk)


out = jax.jit(jax.shard_map(
    gmm2, mesh=mesh, in_specs=(P(), P("expert"), P("expert"), P("expert")), out_specs=P("expert"),
    check_vma=False))(
    jnp.ones((tokens, inter), jnp.bfloat16),  # GMM1's output rows
    jnp.ones((n, inter, hidden), jnp.bfloat16),  # w2
    jnp.arange(n, dtype=jnp.int32),  # group_offset: each chip's first expert
    jnp.array(recv, jnp.int32))  # total_recv_count
print(out.shape)
