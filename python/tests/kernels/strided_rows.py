"""A strided copy: every other row of `x_ref` (`pl.ds(0, 4, stride=2)`) to the same rows
of the right neighbour's output; the rows between are never written. `ROWS=overlap`
also sends rows 1..4 with a second copy into the rows the first fills: a race."""

import os

from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote

ROWS = os.environ.get("ROWS", "even")


def kernel(x_ref, o_ref, send, recv):
    right = lax.rem(lax.axis_index("x") + 1, N)
    rows = pl.ds(0, 4, stride=2)
    d = remote(x_ref.at[rows], o_ref.at[rows], send, recv, (right,))
    d.start()
    if ROWS == "overlap":
        e = remote(x_ref.at[pl.ds(1, 4)], o_ref.at[pl.ds(1, 4)], send, recv, (right,))
        e.start()
        e.wait()
    d.wait()


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2)
