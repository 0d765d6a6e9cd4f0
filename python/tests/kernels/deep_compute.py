"""Compute that reuses its values (`v = exp(v) + sin(v) * v`, twelve times): written out,
the expression has 3^12 leaves. The walker keeps it one function of the value it was
loaded from, so the export and the check stay small."""

import jax.numpy as jnp
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, buf, send, recv):
    copy = remote(x_ref, buf, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    copy.start()
    copy.wait()
    v = buf[...]
    for _ in range(12):
        v = jnp.exp(v) + jnp.sin(v) * v
    o_ref[...] = v


call(kernel, scratch=[pltpu.VMEM((8, 128), jnp.float32)] + [pltpu.SemaphoreType.DMA] * 2, out_space=pltpu.VMEM)
