from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, send, recv):
    def body(bar, sem):
        pl.semaphore_wait(sem, pl.semaphore_read(sem))  # inside the scope

    pl.run_scoped(body, pltpu.SemaphoreType.BARRIER, pltpu.SemaphoreType.REGULAR)  # barrier allocation
    d = remote(x_ref, o_ref, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    d.start()
    d.wait()


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2)
