"""Python's floor % and // on traced ints, and jnp.where."""
import jax.numpy as jnp
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, send, recv):
    me = lax.axis_index("x")
    left = (me - 1) % N          # floor: -1 % N == N - 1
    half = (me - 3) // 2         # floor division
    target = jnp.where(half < 0, left, 0)
    d = remote(x_ref, o_ref, send, recv, (target,))
    d.start()
    d.wait()


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2)
