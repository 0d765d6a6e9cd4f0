"""A swap whose old value is used after a copy: the old value is read just before the store."""
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, buf, send, recv):
    buf[...] = x_ref[...]
    old = buf.swap(x_ref[...] * 2.0)  # the old value: x
    d = remote(buf, o_ref, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    d.start()
    d.wait()
    buf[...] = old + buf[...]


call(kernel, scratch=[pltpu.VMEM((8, 128), __import__("jax").numpy.float32), pltpu.SemaphoreType.DMA,
                      pltpu.SemaphoreType.DMA], in_space=pltpu.VMEM, out_space=pltpu.VMEM)
