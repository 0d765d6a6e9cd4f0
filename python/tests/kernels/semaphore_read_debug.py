"""A ring shift whose only `pl.semaphore_read`s feed `pl.debug_print` (or nothing: a
helper that discards the value unless its debug flag is set), as kernels do while they
are being debugged. The values never steer the kernel, so semcheck reads it and notes
the reads; `STEER=1` adds a read that decides the amount of a wait, which stays refused."""

import os

from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote

DEBUG = False
STEER = os.environ.get("STEER") == "1"


def trace_sem(sem, what):
    """Reads a semaphore for the log: printed only when DEBUG is set (the value is dropped otherwise)."""
    value = pl.semaphore_read(sem)  # read, discarded unless DEBUG
    if DEBUG:
        pl.debug_print(what + " {}", value)


def kernel(x_ref, o_ref, send, recv, ready):
    me = lax.axis_index("x")
    copy = remote(x_ref, o_ref, send, recv, (lax.rem(me + 1, N),))
    copy.start()
    trace_sem(send, "send")
    pending = pl.semaphore_read(recv)  # printed
    pl.debug_print("recv sem {} on {}", pending + 0, me)
    copy.wait_send()
    copy.wait_recv()
    if STEER:
        pl.semaphore_signal(ready, 1)
        pl.semaphore_wait(ready, pl.semaphore_read(ready))  # steers


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2 + [pltpu.SemaphoreType.REGULAR])
