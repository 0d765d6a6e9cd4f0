"""A double-buffered ring shift over the grid whose slot is kept in SMEM scratch, the
way ragged paged attention keeps its semaphore indices: each step copies into slot
`slot_ref[0]` of the right neighbour, then flips it. `FLIP=0` drops the flip, so two
steps use one slot and the neighbour's capacity signal no longer protects it (a race
from N = 2 with a 3-step grid)."""

import os

import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote

FLIP = os.environ.get("FLIP", "1") == "1"


def kernel(x_ref, o_ref, buf, slot_ref, send, recv, cap):
    step = pl.program_id(0)
    me = lax.axis_index("x")
    right = lax.rem(me + 1, N)
    left = lax.rem(me + N - 1, N)

    @pl.when(step == 0)
    def _():
        slot_ref[0] = 0  # first slot

    slot = slot_ref[0]

    @pl.when(step > 1)
    def _():
        pl.semaphore_wait(cap, 1)  # the right neighbour read the slot two steps ago

    d = remote(x_ref, buf.at[slot], send.at[slot], recv.at[slot], (right,))
    d.start()
    d.wait()
    o_ref[...] = buf[slot]
    pl.semaphore_signal(cap, 1, device_id=(left,))  # slot read: the left neighbour may reuse it
    if FLIP:
        slot_ref[0] = 1 - slot  # flip

    @pl.when(step == pl.num_programs(0) - 1)
    def _():
        @pl.when(pl.num_programs(0) > 1)
        def _():
            pl.semaphore_wait(cap, 1)

        @pl.when(pl.num_programs(0) > 2)
        def _():
            pl.semaphore_wait(cap, 1)


call(kernel, grid=(3,), out_space=pltpu.VMEM,
     scratch=[pltpu.VMEM((2, 8, 128), jnp.float32), pltpu.SMEM((1,), jnp.int32),
              pltpu.SemaphoreType.DMA((2,)), pltpu.SemaphoreType.DMA((2,)), pltpu.SemaphoreType.REGULAR])
