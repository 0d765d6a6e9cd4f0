"""A split-phase remote copy whose start kernel is the only one the script calls: it hands
its two DMA semaphores out (pltpu.SEMAPHORE-space outputs) and no later kernel takes them,
so nothing ever waits for the copy. A program of one kernel, whose semaphores are checked
at the program's end: reported as handed out by `start_kernel` and never taken.
`DONE=1` adds the send_done and recv_done kernels (then it is proved)."""

import os

import jax
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, P

DONE = os.environ.get("DONE") == "1"
SEM = pl.BlockSpec(memory_space=pltpu.SEMAPHORE)
ANY = pl.BlockSpec(memory_space=pl.ANY)


def start_kernel(x_ref, o_ref, send_sem, recv_sem):
    right = lax.rem(lax.axis_index("x") + 1, N)
    pltpu.make_async_remote_copy(x_ref, o_ref, send_sem, recv_sem, device_id=(right,)).start()


def done_kernel(x_ref, o_ref, send_sem, recv_sem, aliased_o_ref):
    del aliased_o_ref
    pltpu.make_async_copy(x_ref, x_ref, send_sem).wait()
    pltpu.make_async_copy(x_ref, o_ref, recv_sem).wait()


def step(x):
    out, send_sem, recv_sem = pl.pallas_call(
        start_kernel,
        out_shape=(jax.ShapeDtypeStruct(x.shape, x.dtype), pltpu.SemaphoreType.DMA(()), pltpu.SemaphoreType.DMA(())),
        in_specs=[ANY],
        out_specs=(ANY, SEM, SEM),
    )(x)
    if not DONE:
        return out
    return pl.pallas_call(
        done_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[ANY, ANY, SEM, SEM],
        out_specs=ANY,
        input_output_aliases={1: 0},
    )(x, out, send_sem, recv_sem)


mesh = jax.make_mesh((N,), ("x",))
spec = P(None, "x")
x = jax.device_put(jax.numpy.zeros((8, 128 * N), jax.numpy.float32), jax.sharding.NamedSharding(mesh, spec))
jax.jit(jax.shard_map(step, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False))(x)
