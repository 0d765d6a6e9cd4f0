"""An SMEM integer that holds data: a value loaded from the input is stored into SMEM
scratch and later stored into the output, as data (not scalar state)."""

import jax.numpy as jnp
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, p_ref, t_ref, send, recv):
    t_ref[0] = jnp.sum(x_ref[...]).astype(jnp.int32)  # data into SMEM
    d = remote(x_ref, o_ref, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    d.start()
    d.wait()
    p_ref[...] = jnp.full(p_ref.shape, t_ref[0].astype(jnp.float32))


call(kernel, n_out=2, in_space=pltpu.VMEM, out_space=pltpu.VMEM,
     scratch=[pltpu.SMEM((1,), jnp.int32)] + [pltpu.SemaphoreType.DMA] * 2)
