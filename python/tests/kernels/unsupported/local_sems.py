"""jax 0.12's local copies that signal other than one semaphore: `make_async_copy` with a
source semaphore (`SEMS=src`, awaited by `.wait_read()`), or with none (`SEMS=none`)."""

import os

from jax.experimental.pallas import tpu as pltpu
from _harness import call

SEMS = os.environ.get("SEMS", "src")


def kernel(x_ref, o_ref, read_sem, write_sem):
    if SEMS == "src":
        d = pltpu.make_async_copy(x_ref, o_ref, write_sem, src_sem=read_sem)
        d.start()  # with a source semaphore
        d.wait_read()
        d.wait_write()
    else:
        d = pltpu.make_async_copy(x_ref, o_ref)
        d.start()  # without a semaphore
        d.wait()


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2)
