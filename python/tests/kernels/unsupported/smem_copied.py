import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(t_ref, x_ref, o_ref, idx_ref, send, recv, sem):
    c = pltpu.make_async_copy(t_ref, idx_ref, sem)
    c.start()  # a copy into SMEM
    c.wait()
    d = remote(x_ref, o_ref, send, recv, (lax.rem(idx_ref[0], N),))
    d.start()
    d.wait()


call(kernel, in_specs=[pl.BlockSpec(memory_space=pl.ANY)] * 2, prefetch=(jnp.ones((1,), jnp.int32),),
     scratch=[pltpu.SMEM((1,), jnp.int32)] + [pltpu.SemaphoreType.DMA] * 3)
