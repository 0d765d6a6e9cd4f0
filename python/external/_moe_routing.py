"""The token routing the expert-parallel MoE drivers share: N devices on an `expert` axis,
one expert per device, 128 tokens per device, top 1, token t routed to expert t % N, rows
sorted by expert. 128 rows make every expert's group one whole LHS tile of the library's
tiling (bfloat16: 128 rows): with fewer, the tile is all M rows and the GMM2 kernel's LHS
gather reads past the end of `lhs` from the second group on."""

import jax
import jax.numpy as jnp

n = jax.device_count()
mesh = jax.make_mesh((n,), ("expert",), axis_types=(jax.sharding.AxisType.Auto,))
chunk = 128  # tokens per device
tokens = chunk * n
hidden = inter = 256
order = sorted(range(tokens), key=lambda t: t % n)  # rows grouped by expert; row -> token
# Rows a chip receives from the others: tokens of its chunk routed to another chip's expert.
recv = [sum(1 for t in range(c * chunk, (c + 1) * chunk) if t % n != c) for c in range(n)]


def group_sizes() -> jax.Array:
    """Every expert's row count (traced inside the kernel's shard_map)."""
    return jnp.full((n,), tokens // n, jnp.int32)


def put(a: jax.Array, *spec: object) -> jax.Array:
    """``a`` placed on the mesh with ``PartitionSpec(*spec)`` (replicated without one)."""
    return jax.device_put(a, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*spec)))


def run_gmm_fused_rs(rs: object) -> jax.Array:
    """``rs.run_gmm_fused_rs`` (tpu-inference's, or tokamax's copy) on this routing: bfloat16
    hidden states replicated, one expert's weights per device, unit top-1 weights."""
    return rs.run_gmm_fused_rs(
        put(jnp.ones((tokens, hidden), jnp.bfloat16)),  # hidden_states, replicated
        put(jnp.ones((n, hidden, 2 * inter), jnp.bfloat16), "expert"),  # w1
        put(jnp.ones((n, inter, hidden), jnp.bfloat16), "expert"),  # w2
        put(group_sizes()),  # group_sizes
        put(jnp.array(order, jnp.int32)),  # lhs_indices
        put(jnp.array(order, jnp.int32)),  # output_indices
        put(jnp.ones((tokens, 1), jnp.float32), "expert", None),  # topk_weights
        put(jnp.zeros((tokens,), jnp.int32)),  # topk_indices
        ep_size=n, mesh=mesh, top_k=1, ep_axis_name="expert")
