"""A whole-array SMEM input (not scalar prefetch) holding how far each device sends:
read with the values the script passes, like scalar prefetch."""

import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(shift_ref, x_ref, o_ref, send, recv):
    d = remote(x_ref, o_ref, send, recv, (lax.rem(lax.axis_index("x") + shift_ref[0], N),))  # the copy
    d.start()
    d.wait()


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2,
     in_specs=[pl.BlockSpec(memory_space=pltpu.SMEM), pl.BlockSpec(memory_space=pl.ANY)],
     prefetch=(jnp.ones((1,), jnp.int32),))
