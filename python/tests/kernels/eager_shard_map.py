"""A kernel called from an eager shard_map (no jit: the script goes on with placeholders
sharded like the real results), and again under a lax.cond branch no device takes (its
scalar-prefetch values are unknown: the call never ran)."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, P, remote


def kernel(shift_ref, x_ref, o_ref, send, recv):
    d = remote(x_ref, o_ref, send, recv, (lax.rem(lax.axis_index("x") + shift_ref[0], N),))
    d.start()
    d.wait()


mesh = jax.make_mesh((N,), ("x",))
spec = P(None, "x")
x = jax.device_put(jnp.zeros((8, 128 * N), jnp.float32), jax.sharding.NamedSharding(mesh, spec))
f = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                   grid_spec=pltpu.PrefetchScalarGridSpec(
                       num_scalar_prefetch=1, in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                       out_specs=pl.BlockSpec(memory_space=pl.ANY),
                       scratch_shapes=[pltpu.SemaphoreType.DMA] * 2))
y = jax.shard_map(lambda x: f(jnp.array([1], jnp.int32), x), mesh=mesh, in_specs=spec, out_specs=spec,
                  check_vma=False)(x)
assert y.shape == x.shape


def never(x):
    return lax.cond(lax.axis_index("x") < 0, lambda x: f(jnp.array([2], jnp.int32), x), lambda x: x, x)


jax.jit(jax.shard_map(never, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False))(x)
