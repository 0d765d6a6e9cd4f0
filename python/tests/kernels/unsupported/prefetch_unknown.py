"""The scalar-prefetched target comes from a host callback that fails when the
computation runs: the values are unknown, and the kernel's use of them is run-time
data."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, P, remote


def fails(x):
    raise ValueError("no such table")


def kernel(idx_ref, x_ref, o_ref, send, recv):
    d = remote(x_ref, o_ref, send, recv, (idx_ref[0],))  # target
    d.start()
    d.wait()


def table():
    return jax.pure_callback(fails, jax.ShapeDtypeStruct((1,), jnp.int32), jnp.zeros((1,), jnp.int32))


mesh = jax.make_mesh((N,), ("x",))
spec = P(None, "x")
x = jax.device_put(jnp.zeros((8, 128 * N), jnp.float32), jax.sharding.NamedSharding(mesh, spec))
f = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                   grid_spec=pltpu.PrefetchScalarGridSpec(
                       num_scalar_prefetch=1, in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                       out_specs=pl.BlockSpec(memory_space=pl.ANY),
                       scratch_shapes=[pltpu.SemaphoreType.DMA] * 2))
jax.jit(jax.shard_map(lambda x: f(table(), x), mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False))(x)
