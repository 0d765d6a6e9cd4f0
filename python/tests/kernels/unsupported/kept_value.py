from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, buf, send, recv):
    v = buf[...]  # line 7
    d = remote(x_ref, buf, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    d.start()
    d.wait()
    o_ref[...] = v  # line 11


call(kernel, scratch=[pltpu.VMEM((8, 128), __import__("jax").numpy.float32), pltpu.SemaphoreType.DMA,
                      pltpu.SemaphoreType.DMA], out_space=pltpu.VMEM)
