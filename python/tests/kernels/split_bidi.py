"""A bidirectional split-phase permute (the pattern of JAX's async remote-copy tests): the
start kernel sends the top half of its block to its right neighbour and the bottom half to
its left one, handing out two pairs of DMA semaphores as nested tuples of
pltpu.SEMAPHORE-space outputs; send_done waits for both sends, recv_done for both
arrivals. `LOOP=k` runs the three kernels k times in a `fori_loop` (unrolled into one
program of 3k kernels); `SWAP=1` hands recv_done the two receive semaphores crossed,
which is harmless here (both halves have the same size, and the kernel waits for both)."""

import functools
import os

import jax
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, P

LOOP = int(os.environ.get("LOOP", "0"))
SWAP = os.environ.get("SWAP") == "1"
SEM = pl.BlockSpec(memory_space=pltpu.SEMAPHORE)
ANY = pl.BlockSpec(memory_space=pl.ANY)
DMA = pltpu.SemaphoreType.DMA(())


def start_kernel(x_ref, aliased_x_ref, o_ref, left_sems, right_sems):
    del aliased_x_ref
    me = lax.axis_index("x")
    left = lax.rem(me + N - 1, N)
    right = lax.rem(me + 1, N)
    barrier = pltpu.get_barrier_semaphore()
    pl.semaphore_signal(barrier, device_id=(left,))
    pl.semaphore_signal(barrier, device_id=(right,))
    pl.semaphore_wait(barrier, 2)
    half = x_ref.shape[0] // 2
    top, bottom = pl.ds(0, half), pl.ds(half, half)
    pltpu.make_async_remote_copy(x_ref.at[top], o_ref.at[top], right_sems[0], right_sems[1],
                                 device_id=(right,)).start()
    pltpu.make_async_remote_copy(x_ref.at[bottom], o_ref.at[bottom], left_sems[0], left_sems[1],
                                 device_id=(left,)).start()


def start(x):
    x, out, left_sems, right_sems = pl.pallas_call(
        start_kernel,
        out_shape=(jax.ShapeDtypeStruct(x.shape, x.dtype), jax.ShapeDtypeStruct(x.shape, x.dtype),
                   (DMA,) * 2, (DMA,) * 2),
        in_specs=[ANY],
        out_specs=(ANY, ANY, (SEM,) * 2, (SEM,) * 2),
        input_output_aliases={0: 0},
        compiler_params=pltpu.CompilerParams(collective_id=0),
    )(x)
    return x, (out, left_sems, right_sems)


def send_done_kernel(x_ref, send_left, send_right, aliased_x_ref):
    del aliased_x_ref
    half = x_ref.at[pl.ds(0, x_ref.shape[0] // 2)]
    pltpu.make_async_copy(half, half, send_left).wait()
    pltpu.make_async_copy(half, half, send_right).wait()


def send_done(x, future):
    _, (send_left, _), (send_right, _) = future
    return pl.pallas_call(
        send_done_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[ANY, SEM, SEM],
        out_specs=ANY,
        input_output_aliases={0: 0},
    )(x, send_left, send_right)


def recv_done_kernel(o_ref, x_ref, recv_left, recv_right, aliased_o_ref):
    del aliased_o_ref
    half = pl.ds(0, o_ref.shape[0] // 2)
    pltpu.make_async_copy(x_ref.at[half], o_ref.at[half], recv_left).wait()
    pltpu.make_async_copy(x_ref.at[half], o_ref.at[half], recv_right).wait()


def recv_done(x, future):
    out, (_, recv_left), (_, recv_right) = future
    if SWAP:
        recv_left, recv_right = recv_right, recv_left
    return pl.pallas_call(
        recv_done_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[ANY, ANY, SEM, SEM],
        out_specs=ANY,
        input_output_aliases={0: 0},
    )(out, x, recv_left, recv_right)


def once(x):
    x, future = start(x)
    x = send_done(x, future)
    return recv_done(x, future)


mesh = jax.make_mesh((N,), ("x",))
spec = P(None, "x")


@jax.jit
@functools.partial(jax.shard_map, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False)
def permute(x):
    if LOOP:
        return lax.fori_loop(0, LOOP, lambda _, x: once(x), x)
    return once(x)


x = jax.device_put(jax.numpy.zeros((16, 128 * N), jax.numpy.float32), jax.sharding.NamedSharding(mesh, spec))
permute(x)
