"""A copy past the end of its source on one device: device 1 sends rows 4..12 of its
8-row block (the start comes from its scalar-prefetched table)."""

import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(start_ref, x_ref, o_ref, send, recv):
    start = start_ref[0]
    d = remote(x_ref.at[pl.ds(start, 8)], o_ref, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    d.start()  # the copy
    d.wait()


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2, num_scalar_prefetch=1,
     prefetch=lambda: (jnp.where(lax.axis_index("x") == 1, 4, 0).astype(jnp.int32)[None],))
