"""Compute on loaded values: a matmul of two buffers, a + b, a cast, a scale."""
import jax.numpy as jnp
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, buf, a, b, send, recv):
    me = lax.axis_index("x")
    d = remote(x_ref, buf, send, recv, (lax.rem(me + 1, N),))
    d.start()
    d.wait()
    a[...] = buf[...] + x_ref[...]
    b[...] = jnp.dot(a[...], buf[...], preferred_element_type=jnp.float32)
    a[...] = (b[...].astype(jnp.bfloat16) * 2).astype(jnp.float32)
    o_ref[...] = a[...]


call(kernel, scratch=[pltpu.VMEM((128, 128), jnp.float32)] * 3
     + [pltpu.SemaphoreType.DMA] * 2, shape=(128, 128), in_space=pltpu.VMEM, out_space=pltpu.VMEM)
