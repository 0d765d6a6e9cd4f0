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
