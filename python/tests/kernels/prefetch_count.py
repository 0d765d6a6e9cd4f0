"""A loop whose trip count and a condition come from a scalar-prefetched table: the
ring shift runs `count_ref[0]` times (once, as the script passes it), and a second
shift into the other output runs only if `count_ref[1]` is non-zero (it is 0)."""

import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(count_ref, x_ref, o_ref, p_ref, send, recv):
    right = lax.rem(lax.axis_index("x") + 1, N)

    def body(i, carry):
        d = remote(x_ref, o_ref, send, recv, (right,))
        d.start()
        d.wait()
        return carry

    lax.fori_loop(0, count_ref[0], body, 0)  # trip count

    @pl.when(count_ref[1] != 0)
    def _():
        d = remote(x_ref, p_ref, send, recv, (right,))  # never runs
        d.start()
        d.wait()


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2, num_scalar_prefetch=1, n_out=2,
     prefetch=(jnp.array([1, 0], jnp.int32),))
