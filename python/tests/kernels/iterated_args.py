"""A kernel written `def kernel(*refs)` that takes its refs from an iterator, some only
under a flag (as tokamax's fused EP MoE does): they get the names its body binds them
to, whatever the Python did."""

from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote

HAS_SCALE = False


def kernel(*refs):
    it = iter(refs)
    x_ref = next(it)
    scale_ref = next(it) if HAS_SCALE else None  # noqa: F841 - absent here
    o_ref = next(it)
    send_sem, recv_sem = (next(it) for _ in range(2))
    copy = remote(x_ref, o_ref, send_sem, recv_sem, (lax.rem(lax.axis_index("x") + 1, N),))
    copy.start()
    copy.wait()


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2)
