"""An output in HBM aliased to an input whose blocks Pallas pipelines: the kernel's writes
to the output change the array Pallas copies the input's blocks from."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, P


def kernel(x_ref, o_ref, sem):
    pl.semaphore_signal(sem, 1, device_id=(lax.rem(lax.axis_index("x") + 1, N),))
    pl.semaphore_wait(sem, 1)


f = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((16, 128), jnp.float32), grid=(2,),
                   in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))], out_specs=pl.BlockSpec(memory_space=pl.ANY),
                   scratch_shapes=[pltpu.SemaphoreType.REGULAR], input_output_aliases={0: 0})
mesh = jax.make_mesh((N,), ("x",))
x = jax.device_put(jnp.zeros((16 * N, 128), jnp.float32), jax.sharding.NamedSharding(mesh, P("x")))
jax.jit(jax.shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False))(x)
