from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call


def kernel(x_ref, o_ref, sem):
    pl.semaphore_signal(sem, 1, device_id=(lax.rem(lax.axis_index("x") + 1, N),), core_index=0)  # line 8
    pl.semaphore_wait(sem, 1)


call(kernel, scratch=[pltpu.SemaphoreType.REGULAR])
