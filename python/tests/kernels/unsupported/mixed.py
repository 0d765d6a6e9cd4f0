"""Two kernels in one file: a ring shift semcheck reads, and one it cannot read."""
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def shift(x_ref, o_ref, send, recv):
    d = remote(x_ref, o_ref, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    d.start()
    d.wait()


def accumulate(x_ref, o_ref, send, recv):
    d = remote(x_ref, o_ref, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    d.start(add=True)  # line 15
    d.wait()


call(shift, scratch=[pltpu.SemaphoreType.DMA] * 2)
call(accumulate, scratch=[pltpu.SemaphoreType.DMA] * 2)
