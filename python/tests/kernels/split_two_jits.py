"""A split-phase remote copy whose start and done kernels are two jitted functions the
script calls in turn, the semaphores passing through the script (the way libraries that
overlap a collective with the caller's compute write it): one program of two kernels.
`WAIT=send` makes the done kernel wait for the send only: it takes the receive semaphore
but never waits on it, so the copy may land after the program has ended. `HALVES=1` sends
the block as two halves."""

import functools
import os

import jax
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, P

WAIT = os.environ.get("WAIT", "both")
HALVES = os.environ.get("HALVES") == "1"
SEM = pl.BlockSpec(memory_space=pltpu.SEMAPHORE)
ANY = pl.BlockSpec(memory_space=pl.ANY)
mesh = jax.make_mesh((N,), ("x",))
spec = P(None, "x")
shard = functools.partial(jax.shard_map, mesh=mesh, check_vma=False)


def start_kernel(x_ref, o_ref, send_sem, recv_sem):
    right = lax.rem(lax.axis_index("x") + 1, N)
    # HALVES=1: two copies of half a block each, on the same semaphores (the done kernel,
    # which waits for the whole block, then cuts its arrays into the same halves).
    for h in (pl.ds(0, 4), pl.ds(4, 4)) if HALVES else (slice(None),):
        pltpu.make_async_remote_copy(x_ref.at[h], o_ref.at[h], send_sem.at[0], recv_sem.at[0],
                                     device_id=(right,)).start()


@jax.jit
@functools.partial(shard, in_specs=spec, out_specs=(spec, P("x"), P("x")))
def start(x):
    out, send_sem, recv_sem = pl.pallas_call(
        start_kernel,
        out_shape=(jax.ShapeDtypeStruct(x.shape, x.dtype), pltpu.SemaphoreType.DMA((1,)),
                   pltpu.SemaphoreType.DMA((1,))),
        in_specs=[ANY],
        out_specs=(ANY, SEM, SEM),
    )(x)
    return out, send_sem, recv_sem


def done_kernel(x_ref, o_ref, send_sem, recv_sem, aliased_o_ref):
    del aliased_o_ref
    pltpu.make_async_copy(x_ref, x_ref, send_sem.at[0]).wait()
    if WAIT == "both":
        pltpu.make_async_copy(x_ref, o_ref, recv_sem.at[0]).wait()


@jax.jit
@functools.partial(shard, in_specs=(spec, spec, P("x"), P("x")), out_specs=spec)
def done(x, out, send_sem, recv_sem):
    return pl.pallas_call(
        done_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[ANY, ANY, SEM, SEM],
        out_specs=ANY,
        input_output_aliases={1: 0},
    )(x, out, send_sem, recv_sem)


x = jax.device_put(jax.numpy.zeros((8, 128 * N), jax.numpy.float32), jax.sharding.NamedSharding(mesh, spec))
out, send_sem, recv_sem = start(x)
y = done(x, out, send_sem, recv_sem)
