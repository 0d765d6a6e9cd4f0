"""A descriptor built only to wait: each device sends 2 rows of its block to its right
neighbour, starting at row 4 * (me % 2), and waits for the rows its left neighbour sends
with a descriptor mirroring the sender's, whose source starts at 4 * left: from N = 3 it
runs past the 8-row block (row 8 on device 0 at N = 3). A wait counts bytes on its
semaphore and touches no cell, so (as Mosaic) only its shape matters: proved.
``OFFSET=data``: the mirrored start is run-time data (loaded from VMEM): still only the
bytes matter, proved, with a note. ``SIZE=data``: the wait's size is run-time data, which
the byte count depends on: refused. ``SIZE=short``: it waits for 1 row: the other row's
bytes are never waited for. ``SEM=data``: the wait's semaphore is picked by run-time data:
refused (the semaphore is what a wait waits on)."""

import os

import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote

OFFSET = os.environ.get("OFFSET", "left")
SIZE = os.environ.get("SIZE", "2")
SEM = os.environ.get("SEM", "")


def kernel(x_ref, o_ref, data_ref, send, recvs):
    me = lax.axis_index("x")
    right, left = lax.rem(me + 1, N), lax.rem(me + N - 1, N)
    recv = recvs.at[0]
    out = remote(x_ref.at[pl.ds(4 * lax.rem(me, 2), 2)], o_ref.at[pl.ds(0, 2)], send, recv, (right,))
    out.start()
    start = jnp.max(data_ref[...]) if OFFSET == "data" else 4 * left
    rows = {"2": 2, "short": 1}.get(SIZE) or jnp.max(data_ref[...])
    waited = recvs.at[jnp.max(data_ref[...])] if SEM == "data" else recv
    incoming = remote(x_ref.at[pl.ds(start, rows)], o_ref.at[pl.ds(0, rows)], send, waited, (left,))
    incoming.wait_recv()  # the mirrored descriptor
    out.wait_send()


call(kernel, scratch=[pltpu.VMEM((8, 128), jnp.int32), pltpu.SemaphoreType.DMA, pltpu.SemaphoreType.DMA((2,))])
