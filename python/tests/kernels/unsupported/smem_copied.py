"""SMEM filled by another device's copy: what lands there is data, not a value the script
passes, so an index read from it is run-time data. (A local copy of an input whose values
the script passes is read: ``../smem_window.py``.)"""

import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(t_ref, x_ref, o_ref, idx_ref, send, recv, send2, recv2):
    right = lax.rem(lax.axis_index("x") + 1, N)
    c = remote(t_ref, idx_ref, send, recv, (right,))
    c.start()  # a copy into the neighbour's SMEM
    c.wait()
    d = remote(x_ref, o_ref, send2, recv2, (lax.rem(idx_ref[0], N),))
    d.start()
    d.wait()


call(kernel, in_specs=[pl.BlockSpec(memory_space=pl.ANY)] * 2, prefetch=(jnp.ones((1,), jnp.int32),),
     scratch=[pltpu.SMEM((1,), jnp.int32)] + [pltpu.SemaphoreType.DMA] * 4)
