"""The shape of tpu-inference's GMM2 scatter kernel in miniature: every device zero-fills
its output with a local copy and sends its block into its right neighbour's output.
`ORDER=after` (what the library does) starts the zero-fill after the entry barrier and
waits for it later, so the neighbour's block can land before the zeros do (a race);
`ORDER=before` waits for the zero-fill before the barrier (proved)."""

import os

import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote

ORDER = os.environ.get("ORDER", "before")


def kernel(x_ref, o_ref, zeros_ref, send, recv, zero_sem):
    zeros_ref[...] = jnp.zeros_like(zeros_ref)
    fill = pltpu.make_async_copy(zeros_ref, o_ref, zero_sem)
    if ORDER == "before":
        fill.start()
        fill.wait()
    barrier = pltpu.get_barrier_semaphore()
    for d in range(N):
        pl.semaphore_signal(barrier, device_id=(d,))
    pl.semaphore_wait(barrier, N)
    if ORDER == "after":
        fill.start()  # the zero-fill
    d = remote(x_ref, o_ref, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    d.start()  # the scatter
    if ORDER == "after":
        fill.wait()
    d.wait()


call(kernel, scratch=[pltpu.VMEM((8, 128), jnp.float32)] + [pltpu.SemaphoreType.DMA] * 3,
     compiler_params=pltpu.CompilerParams(collective_id=0))
