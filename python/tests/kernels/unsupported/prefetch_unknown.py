"""The scalar-prefetched target comes from a host callback that fails when the
computation runs: the values are unknown, and the kernel's use of them is run-time
data."""

import jax
import jax.numpy as jnp
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def fails(x):
    raise ValueError("no such table")


def kernel(idx_ref, x_ref, o_ref, send, recv):
    d = remote(x_ref, o_ref, send, recv, (idx_ref[0],))  # target
    d.start()
    d.wait()


def table():
    return jax.pure_callback(fails, jax.ShapeDtypeStruct((1,), jnp.int32), jnp.zeros((1,), jnp.int32))


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2, num_scalar_prefetch=1, prefetch=(lambda: (table(),)))
