import jax.numpy as jnp
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(count_ref, x_ref, o_ref, send, recv):
    def body(i, carry):
        d = remote(x_ref, o_ref, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
        d.start()
        d.wait()
        return carry

    lax.fori_loop(0, count_ref[0], body, 0)  # the trip count is loaded


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2, num_scalar_prefetch=1,
     prefetch=(jnp.ones((1,), jnp.int32),))
