"""A 2-D mesh (2 x N/2): a remote copy along y, a signal along x by name."""
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, send, recv, sem):
    x = lax.axis_index("x")
    y = lax.axis_index("y")
    pl.semaphore_signal(sem, 1, device_id={"x": 1 - x})
    pl.semaphore_wait(sem, 1)
    d = remote(x_ref, o_ref, send, recv, (x, lax.rem(y + 1, N // 2)))
    d.start()
    d.wait()


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2 + [pltpu.SemaphoreType.REGULAR], axes=("x", "y"),
     mesh_shape=(2, N // 2))
