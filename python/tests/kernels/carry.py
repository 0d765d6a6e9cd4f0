"""A loop that carries data: an accumulator array, summed over three iterations, then
stored beside what the neighbour's copy brought."""
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, buf, send, recv):
    def body(i, acc):
        return acc + x_ref[...]

    acc = lax.fori_loop(0, 3, body, x_ref[...])  # a data carry
    d = remote(x_ref, buf, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    d.start()
    d.wait()
    o_ref[...] = acc + buf[...]


call(kernel, scratch=[pltpu.VMEM((8, 128), __import__("jax").numpy.float32), pltpu.SemaphoreType.DMA,
                      pltpu.SemaphoreType.DMA], in_space=pltpu.VMEM, out_space=pltpu.VMEM)
