"""tpu-inference 0.32.0 `kernels/experimental/fused_moe/gmm_fused_rs_nodedup.py`: the
expert-parallel grouped matmul (gather, GMM1, activation, GMM2) fused with the
reduce-scatter of its rows, written straight into the owning device's output by remote
copies (`run_gmm_fused_rs`, its `shard_map` entry point).

Driver: N devices on an `expert` axis, one expert per device, 128 tokens per device,
256-wide hidden and intermediate sizes, top 1, token t routed to expert t % N (rows
sorted by expert), bfloat16. Two stand-ins, both for the host, not the kernel: the mesh
has `Auto` axes (JAX 0.10's `make_mesh` default is `Explicit`, under which the entry
point's own unsharded `group_offset = jnp.arange(...)` does not match its
`in_specs=P('expert')`), and `pltpu.get_tpu_info()`, which the launcher sizes its
tiles from, answers with a v6e's sizes (`fetch.pretend_tpu`). The package's `__init__`s
are bypassed.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch  # noqa: E402

fetch.pretend_tpu("v6e")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from _moe_routing import group_sizes, hidden, inter, mesh, n, order, tokens  # noqa: E402

rs = fetch.module("tpu-inference", "0.32.0", "tpu_inference.kernels.experimental.fused_moe.gmm_fused_rs_nodedup")


def put(a, *spec):
    return jax.device_put(a, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*spec)))


out = rs.run_gmm_fused_rs(
    put(jnp.ones((tokens, hidden), jnp.bfloat16)),  # hidden_states, replicated
    put(jnp.ones((n, hidden, 2 * inter), jnp.bfloat16), "expert"),  # w1
    put(jnp.ones((n, inter, hidden), jnp.bfloat16), "expert"),  # w2
    put(group_sizes()),  # group_sizes
    put(jnp.array(order, jnp.int32)),  # lhs_indices
    put(jnp.array(order, jnp.int32)),  # output_indices
    put(jnp.ones((tokens, 1), jnp.float32), "expert", None),  # topk_weights
    put(jnp.zeros((tokens,), jnp.int32)),  # topk_indices
    ep_size=n, mesh=mesh, top_k=1, ep_axis_name="expert")
print(out.shape)
