"""A while loop that walks a scalar-prefetched table until its sentinel: row `rows_ref[i]`
of the block goes to the right neighbour while `rows_ref[i] >= 0` (the script passes
[2, 0, 3, -1]: three copies). The condition loads the table at the loop's own index,
before the loop and with the next index at the end of every iteration. ``ROWS=clash``
passes [2, 2, 3, -1]: two copies into the same row, one still in flight."""

import os

import jax.numpy as jnp
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote

ROWS = [2, 2, 3, -1] if os.environ.get("ROWS") == "clash" else [2, 0, 3, -1]


def kernel(rows_ref, x_ref, o_ref, send, recv):
    right = lax.rem(lax.axis_index("x") + 1, N)

    def body(i):
        r = rows_ref[i]
        d = remote(x_ref.at[pl_row(r)], o_ref.at[pl_row(r)], send, recv, (right,))
        d.start()
        return i + 1

    n = lax.while_loop(lambda i: rows_ref[i] >= 0, body, 0)  # until the sentinel

    def drain(i, c):
        remote(x_ref.at[pl_row(0)], o_ref.at[pl_row(0)], send, recv, (right,)).wait()
        return c

    lax.fori_loop(0, n, drain, 0)


def pl_row(r):
    from jax.experimental import pallas as pl

    return pl.ds(r, 1)


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2, num_scalar_prefetch=1, prefetch=(jnp.array(ROWS, jnp.int32),),
     shape=(4, 128))
