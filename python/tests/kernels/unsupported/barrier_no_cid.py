from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call


def kernel(x_ref, o_ref):
    b = pltpu.get_barrier_semaphore()
    pl.semaphore_signal(b, 1, device_id=(lax.rem(lax.axis_index("x") + 1, N),))
    pl.semaphore_wait(b, 1)


call(kernel)
