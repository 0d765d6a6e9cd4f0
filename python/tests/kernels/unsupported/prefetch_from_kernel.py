"""The scalar-prefetched target is computed by another kernel: semcheck runs no kernel
(the values it learns by running the computation would come from zeros), so they are
unknown, and the kernel's use of them is run-time data."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def make_table(t_ref):
    t_ref[0] = lax.rem(lax.axis_index("x") + 1, N)


def kernel(idx_ref, x_ref, o_ref, send, recv):
    d = remote(x_ref, o_ref, send, recv, (idx_ref[0],))  # target
    d.start()
    d.wait()


def table():
    return pl.pallas_call(make_table, out_shape=jax.ShapeDtypeStruct((1,), jnp.int32),
                          out_specs=pl.BlockSpec(memory_space=pltpu.SMEM))()


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2, num_scalar_prefetch=1, prefetch=(lambda: (table(),)))
