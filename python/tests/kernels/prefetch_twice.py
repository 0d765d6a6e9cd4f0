"""One kernel called twice with different scalar-prefetched targets: two kernels to
check, `kernel` (the ring shift) and `kernel#2` (every device sends to itself)."""

import jax.numpy as jnp
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(shift_ref, x_ref, o_ref, send, recv):
    d = remote(x_ref, o_ref, send, recv, (lax.rem(lax.axis_index("x") + shift_ref[0], N),))
    d.start()
    d.wait()


for shift in (1, 0):
    call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2, num_scalar_prefetch=1,
         prefetch=(jnp.array([shift], jnp.int32),))
