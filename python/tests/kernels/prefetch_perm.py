"""ppermute by a table: every device's scalar-prefetched table, computed per device by
the jitted function, holds where its block goes and how many blocks it receives.
`PERM` picks the permutation: the ring shift (proved), or one where the last device
sends to device 1 instead of device 0, so device 1 receives two blocks into one
output (a race)."""

import os

import jax.numpy as jnp
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote

PERM = os.environ.get("PERM", "ring")


def kernel(table_ref, x_ref, o_ref, send, recv):
    d = remote(x_ref, o_ref, send, recv, (table_ref[0],))  # the copy
    d.start()
    d.wait_send()

    def receive(i, carry):
        d.wait_recv()
        return carry

    lax.fori_loop(0, table_ref[1], receive, 0)  # one wait per block received


def table():
    me = lax.axis_index("x")
    target = (me + 1) % N
    senders = jnp.int32(1)
    if PERM == "bad":
        target = jnp.where(me == N - 1, 1, target)
        senders = jnp.where(me == 0, 0, jnp.where(me == 1, 2, 1))
    return jnp.stack([target, senders]).astype(jnp.int32)


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2, num_scalar_prefetch=1, prefetch=(lambda: (table(),)))
