"""A while loop whose condition reads SMEM scalar state the body updates: the body
copies the block locally while `left_ref[0] > 0` and counts it down (three copies),
then the block goes to the right neighbour."""

import jax.numpy as jnp
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, p_ref, left_ref, send, recv, sem):
    left_ref[0] = 3

    def body(c):
        c = pltpu.make_async_copy(x_ref, o_ref, sem)
        c.start()
        c.wait()
        left_ref[0] = left_ref[0] - 1  # count down
        return 0

    lax.while_loop(lambda c: left_ref[0] > 0, body, 0)  # the loop
    d = remote(x_ref, p_ref, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    d.start()
    d.wait()


call(kernel, n_out=2, scratch=[pltpu.SMEM((1,), jnp.int32)] + [pltpu.SemaphoreType.DMA] * 3)
