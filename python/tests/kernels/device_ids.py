"""Device ids as a tuple, a dict and a LOGICAL scalar."""
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, send, recv, sem):
    me = lax.axis_index("x")
    right = lax.rem(me + 1, N)
    pl.semaphore_signal(sem, 1, device_id={"x": right})
    pl.semaphore_signal(sem, 1, device_id=right, device_id_type=pl.DeviceIdType.LOGICAL)
    pl.semaphore_wait(sem, 2)
    d = remote(x_ref, o_ref, send, recv, (right,))
    d.start()
    d.wait()


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2 + [pltpu.SemaphoreType.REGULAR])
