"""Stores Mosaic cannot lower: a scalar into VMEM (`SCALAR=vmem`, the default) or a
vector into SMEM (`SCALAR=smem`); JAX refuses to build either kernel."""

import os

import jax.numpy as jnp
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote

SCALAR = os.environ.get("SCALAR", "vmem")


def kernel(x_ref, o_ref, t_ref, send, recv):
    d = remote(x_ref, o_ref, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    d.start()
    d.wait()
    if SCALAR == "vmem":
        o_ref[0, 0] = jnp.float32(1)  # a scalar into VMEM
    else:
        t_ref[...] = jnp.ones(t_ref.shape, jnp.int32)  # a vector into SMEM


call(kernel, in_space=pltpu.VMEM, out_space=pltpu.VMEM,
     scratch=[pltpu.SMEM((4,), jnp.int32)] + [pltpu.SemaphoreType.DMA] * 2)
