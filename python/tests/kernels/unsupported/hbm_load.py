"""A load of an input left in HBM (`pl.ANY`): Mosaic lowers loads and stores of VMEM and
SMEM refs only, so JAX refuses to build the kernel (the input must be copied in)."""

import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, send, recv):
    d = remote(o_ref, o_ref, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    o_ref[...] = x_ref[...] * 2  # a load of HBM
    d.start()
    d.wait()


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2, out_space=pltpu.VMEM)
