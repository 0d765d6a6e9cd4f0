import jax.numpy as jnp
from jax.experimental.pallas import tpu as pltpu
from _harness import call, remote


def kernel(idx_ref, x_ref, o_ref, send, recv):
    d = remote(x_ref, o_ref, send, recv, (idx_ref[0],))
    d.start()
    d.wait()
    idx_ref[0] = 1  # a scalar-prefetch operand written


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2, num_scalar_prefetch=1,
     prefetch=(jnp.zeros((1,), jnp.int32),))
