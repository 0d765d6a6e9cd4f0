"""A remote copy into the neighbour's output block, which Pallas pipelines: which of the
block's two buffers the copy lands in depends on the neighbour's pipeline."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, P, remote


def kernel(x_ref, o_ref, send, recv):
    d = remote(x_ref, o_ref, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    d.start()
    d.wait()


spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
f = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((16, 128), jnp.float32), grid=(2,), in_specs=[spec],
                   out_specs=spec, scratch_shapes=[pltpu.SemaphoreType.DMA] * 2)
mesh = jax.make_mesh((N,), ("x",))
x = jax.device_put(jnp.zeros((16 * N, 128), jnp.float32), jax.sharding.NamedSharding(mesh, P("x")))
jax.jit(jax.shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False))(x)
