"""A value loaded before a copy and used after it, by a store of the loaded value and of
what the copy brought: read at its load (the input no copy writes), stored later."""
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, buf, send, recv):
    v = x_ref[...] * 2.0  # loaded before the copy
    d = remote(x_ref, buf, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    d.start()
    d.wait()
    o_ref[...] = v + buf[...]  # stored after it


call(kernel, scratch=[pltpu.VMEM((8, 128), __import__("jax").numpy.float32), pltpu.SemaphoreType.DMA,
                      pltpu.SemaphoreType.DMA], in_space=pltpu.VMEM, out_space=pltpu.VMEM)
