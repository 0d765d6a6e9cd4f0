"""A value loaded before a copy and stored after it, where the load races with the copy
a neighbour sends into the same buffer."""
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, buf, send, recv):
    v = buf[...]  # loaded while the left neighbour's copy may be landing here
    d = remote(x_ref, buf, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    d.start()
    d.wait()
    o_ref[...] = v  # stored after the copy


call(kernel, scratch=[pltpu.VMEM((8, 128), __import__("jax").numpy.float32), pltpu.SemaphoreType.DMA,
                      pltpu.SemaphoreType.DMA], out_space=pltpu.VMEM)
