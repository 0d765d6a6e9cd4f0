"""A kernel written `def kernel(*refs)` that unpacks its refs itself: they get the names
it unpacks them into."""

from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(*refs):
    x_ref, o_ref = refs[:2]
    send_sem = refs[2]
    copy = remote(x_ref, o_ref, send_sem, refs[3], (lax.rem(lax.axis_index("x") + 1, N),))
    copy.start()
    copy.wait()


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2)
