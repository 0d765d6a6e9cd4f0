"""JAX's own all-gather kernel (`jax.experimental.pallas.ops.tpu.all_gather`, shipped
in the pinned jax 0.10.2 wheel): a bidirectional ring all-gather, each half of the shard
travelling one way, with one barrier-semaphore rendezvous at entry.

Driver: an (8 * N, 128) float32 array sharded over the ring axis `x`, gathered with the
library's own `all_gather` (VMEM blocks, its default).
"""

import jax
import jax.numpy as jnp
from jax.experimental.pallas.ops.tpu import all_gather

n = jax.device_count()
mesh = jax.make_mesh((n,), ("x",))
x = jax.device_put(jnp.arange(8 * n * 128, dtype=jnp.float32).reshape(8 * n, 128),
                   jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("x")))
out = all_gather.all_gather(x, mesh=mesh, axis_name="x")
print(out.shape)
