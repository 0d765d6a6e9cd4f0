"""Reshaped and strided views, as paged attention kernels use them: each device sends
rows 1..5 of its input, read as 4 pages of 2 rows merged back into rows
(`x_ref.reshape(4, 2, 128).reshape(8, 128)`: the slice crosses pages), into rows 2..6
of its right neighbour's page buffer, then stores every other row of what landed
(`pl.ds(3, 2, 2)`: rows 3 and 5) into its output. `READ=early` reads them before waiting
for the copy: a race. `MERGE=gap` merges rows with half of each row, which are not
contiguous."""

import os

import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote

READ = os.environ.get("READ", "late")
MERGE = os.environ.get("MERGE", "rows")


def kernel(x_ref, o_ref, pages, send, recv):
    right = lax.rem(lax.axis_index("x") + 1, N)
    rows = pages.reshape(8, 128)
    if MERGE == "gap":
        halves = pages.at[pl.ds(0, 2), :, pl.ds(0, 64)].reshape(2, 128)
        remote(x_ref.at[pl.ds(0, 2)], halves, send, recv, (right,)).start()
        return
    copy = remote(x_ref.reshape(4, 2, 128).reshape(8, 128).at[pl.ds(1, 4)], rows.at[pl.ds(2, 4)], send, recv,
                  (right,))
    copy.start()
    if READ == "early":
        o_ref[pl.ds(0, 2)] = rows[pl.ds(3, 2, 2)]
    copy.wait_send()
    copy.wait_recv()
    if READ == "late":
        o_ref[pl.ds(0, 2)] = rows[pl.ds(3, 2, 2)]


call(kernel, scratch=[pltpu.VMEM((4, 2, 128), jnp.float32)] + [pltpu.SemaphoreType.DMA] * 2, out_space=pltpu.VMEM)
