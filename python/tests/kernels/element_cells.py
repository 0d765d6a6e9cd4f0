"""A scalar read of one element makes every element of its buffer a cell (1,024 of
them): under --dma-landing cells each copy lands element by element, and the states
grow fast enough to test that a memory budget holds."""

import jax.numpy as jnp
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, p_ref, t_ref, send, recv):
    t_ref[0] = x_ref[0, 0].astype(jnp.int32)
    d = remote(x_ref, o_ref, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    d.start()
    d.wait()
    p_ref[...] = jnp.full(p_ref.shape, t_ref[0].astype(jnp.float32))


call(kernel, n_out=2, in_space=pltpu.VMEM, out_space=pltpu.VMEM,
     scratch=[pltpu.SMEM((1,), jnp.int32)] + [pltpu.SemaphoreType.DMA] * 2)
