"""An all-pairs double barrier (every device signals every device, itself included, as
tokamax's fused EP MoE does), then a shift to the right neighbour. The barrier loops are
unrolled once per device, so the kernel has more statements at every N; the second
barrier (a scoped REGULAR semaphore) orders nothing within one invocation."""

from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def all_pairs(sem):
    for i in range(N):
        pl.semaphore_signal(sem, 1, device_id=(i,))
    pl.semaphore_wait(sem, N)


def kernel(x_ref, o_ref, send, recv):
    all_pairs(pltpu.get_barrier_semaphore())
    pl.run_scoped(all_pairs, pltpu.SemaphoreType.REGULAR)
    c = remote(x_ref, o_ref, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    c.start()
    c.wait()


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2, compiler_params=pltpu.CompilerParams(collective_id=0))
