"""A load that a reduction reads (`jnp.sum` of rows 1..4 or 5..8) is read as the cells
around it, cells the copies cut (rows 0..4 and 4..8): the copy into the first half is
still in flight, so reading inside it races, reading the other half does not. The load
itself does not cut the buffer into rows. `READ=inside` races."""

import os

import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote

READ = os.environ.get("READ", "outside")


def kernel(x_ref, o_ref, buf, send, recv):
    right = lax.rem(lax.axis_index("x") + 1, N)
    buf[pl.ds(4, 4)] = x_ref[pl.ds(4, 4)]
    copy = remote(x_ref.at[pl.ds(0, 4)], buf.at[pl.ds(0, 4)], send, recv, (right,))
    copy.start()
    rows = pl.ds(1, 3) if READ == "inside" else pl.ds(5, 3)
    o_ref[...] = jnp.broadcast_to(jnp.sum(buf[rows]), o_ref.shape)
    copy.wait()


call(kernel, scratch=[pltpu.VMEM((8, 128), jnp.float32)] + [pltpu.SemaphoreType.DMA] * 2, in_space=pltpu.VMEM,
     out_space=pltpu.VMEM)
