"""The inputs the two all-gather matmul drivers share: N devices on an `x` axis, bf16
x (16N, 128) sharded on its rows and y (128, 128N) on its columns."""

import jax
import jax.numpy as jnp

n = jax.device_count()
mesh = jax.make_mesh((n,), ("x",))
P = jax.sharding.PartitionSpec
x = jax.device_put(jnp.ones((16 * n, 128), jnp.bfloat16), jax.sharding.NamedSharding(mesh, P("x", None)))
y = jax.device_put(jnp.ones((128, 128 * n), jnp.bfloat16), jax.sharding.NamedSharding(mesh, P(None, "x")))
