from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call


def kernel(x_ref, o_ref, sem):
    pl.semaphore_signal(sem, 1, device_id=(lax.rem(lax.axis_index("x") + 1, N),))
    pl.semaphore_wait(sem, pl.semaphore_read(sem))
    o_ref[pl.ds(0, 6), :] = x_ref[...]


call(kernel, scratch=[pltpu.SemaphoreType.REGULAR], grid=(2,), shape=(16, 128),
     in_specs=[pl.BlockSpec((6, 128), lambda i: (i, 0))], out_space=pltpu.VMEM)  # 6 rows do not divide 16
