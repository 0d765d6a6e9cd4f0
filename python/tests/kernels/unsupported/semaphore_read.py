from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, send, recv, sem):
    me = lax.axis_index("x")
    pl.semaphore_signal(sem, 1, device_id=(lax.rem(me + 1, N),))
    n = pl.semaphore_read(sem)  # line 10
    pl.semaphore_wait(sem, n)


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2 + [pltpu.SemaphoreType.REGULAR])
