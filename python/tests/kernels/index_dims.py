"""Indices checked per dimension, as a public ragged all-to-all indexes its semaphores: a
copy whose receive semaphore is `sems.at[0, j, 1]` of a (2, 2, 2) semaphore array, with
`j = (2 * me) % N`: in range at N = 2 (j = 0), out of range from N = 3 on device 1 (j = 2;
flattened row-major, it would be `sems.at[1, 0, 1]`, another semaphore of the array).
`INDEX=buffer` keeps the semaphore index in range and writes `bufs.at[j]` of a (2, 8, 128)
buffer instead."""

import os

import jax.numpy as jnp
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote

BUFFER = os.environ.get("INDEX") == "buffer"


def kernel(x_ref, o_ref, bufs, sems, send):
    me = lax.axis_index("x")
    j = lax.rem(2 * me, N)
    buf_j, sem_j = (j, 0) if BUFFER else (0, j)
    d = remote(x_ref, bufs.at[buf_j], send, sems.at[0, sem_j, 1], (lax.rem(me + 1, N),))
    d.start()
    d.wait()
    o_ref[...] = bufs[0]


call(kernel, scratch=[pltpu.VMEM((2, 8, 128), jnp.float32), pltpu.SemaphoreType.DMA((2, 2, 2)),
                      pltpu.SemaphoreType.DMA], in_space=pltpu.VMEM, out_space=pltpu.VMEM)
