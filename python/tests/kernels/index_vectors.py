"""Per-row metadata built as small arrays of indices, as MoE kernels build theirs: which of
4 rows are valid (`jnp.arange(4) < n`, n from a scalar-prefetched table: 3), one copy per
row sized by its flag into the row its running count gives (`jnp.cumsum`: the valid rows
packed), and one wait for all of them sized by the flags' sum (`jnp.sum(jnp.stack(...))`). Every size is an index value read element by element.
``WAIT=short`` waits for one row fewer: the last row's bytes are never waited for."""

import os

import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote

SHORT = os.environ.get("WAIT") == "short"


def kernel(count_ref, x_ref, o_ref, send, recv):
    right = lax.rem(lax.axis_index("x") + 1, N)
    valid = (jnp.arange(4) < count_ref[0]).astype(jnp.int32)
    flags = [valid[i] for i in range(4)]
    total = jnp.sum(jnp.stack(flags)) - (1 if SHORT else 0)
    packed = jnp.cumsum(valid) - valid
    for i in range(4):
        remote(x_ref.at[pl.ds(i, flags[i])], o_ref.at[pl.ds(packed[i], flags[i])], send, recv, (right,)).start()
    remote(x_ref.at[pl.ds(0, total)], o_ref.at[pl.ds(0, total)], send, recv, (right,)).wait()


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2, num_scalar_prefetch=1, prefetch=(jnp.array([3], jnp.int32),),
     shape=(4, 128))
