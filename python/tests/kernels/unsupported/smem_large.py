import jax.numpy as jnp
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, big_ref, send, recv):
    big_ref[0, 0] = 1  # too many elements to follow
    d = remote(x_ref, o_ref, send, recv, (lax.rem(lax.axis_index("x") + big_ref[0, 0], N),))
    d.start()
    d.wait()


call(kernel, scratch=[pltpu.SMEM((4097, 1024), jnp.int32)] + [pltpu.SemaphoreType.DMA] * 2)
