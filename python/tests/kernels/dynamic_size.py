"""Copies of dynamic size: each device sends the first `sizes_ref[0]` rows of its block
to its right neighbour (device 0 sends none), and waits for the rows its left
neighbour sends, `sizes_ref[1]`, with a descriptor of that size. `WAIT=own` waits with
its own size instead: the byte counts no longer match."""

import os

import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote

WAIT = os.environ.get("WAIT", "left")


def kernel(sizes_ref, x_ref, o_ref, send, recv):
    right = lax.rem(lax.axis_index("x") + 1, N)
    mine, left = sizes_ref[0], sizes_ref[1]
    d = remote(x_ref.at[pl.ds(0, mine)], o_ref.at[pl.ds(0, mine)], send, recv, (right,))  # the copy
    d.start()
    d.wait_send()
    n = left if WAIT == "left" else mine
    incoming = remote(x_ref.at[pl.ds(0, n)], o_ref.at[pl.ds(0, n)], send, recv, (right,))
    incoming.wait_recv()  # the rows that land here


def sizes():
    me = lax.axis_index("x")
    rows = lambda d: jnp.where(d == 0, 0, 4 * (1 + d % 2))  # noqa: E731 - 0, 8, 4, 8, ...
    return jnp.stack([rows(me), rows((me + N - 1) % N)]).astype(jnp.int32)


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2, num_scalar_prefetch=1, prefetch=(lambda: (sizes(),)))
