import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(idx_ref, x_ref, o_ref, send, recv):
    target = idx_ref[0]
    d = remote(x_ref, o_ref, send, recv, (target,))  # line 10
    d.start()
    d.wait()


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2, num_scalar_prefetch=1,
     prefetch=(jnp.zeros((1,), jnp.int32),))
