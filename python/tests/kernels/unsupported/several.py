import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, send, recv, sem):
    def body(i, acc):
        o_ref[...] = acc  # uses the loop's carry: not reported again
        return acc + 1.0

    n = x_ref[0, 0].astype(jnp.int32)
    acc = lax.fori_loop(0, n, body, x_ref[...])  # trip count
    o_ref[...] = acc * 2.0  # uses the loop's result: not reported again
    d = remote(x_ref, o_ref, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    d.start(add=True)  # dma_start(add=True)
    d.wait()

    @pl.when(x_ref[0, 0] > 0)  # run-time data
    def _():
        d.start()
        d.wait()
        pl.semaphore_wait(sem, pl.semaphore_read(sem))  # inside the data-dependent branch


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2 + [pltpu.SemaphoreType.REGULAR], in_space=pltpu.VMEM, out_space=pltpu.VMEM)
