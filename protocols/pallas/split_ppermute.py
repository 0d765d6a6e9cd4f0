"""Split-phase ppermute (JAX's Pallas async remote copy): every device sends its shard to
its right neighbour, as a program of three kernels linked by the semaphores they pass
(`use_block`, which then reads the received block, is checked alone: nothing is in flight).

`ppermute_start` meets its left neighbour at the barrier and starts the copy of its shard
into its right neighbour's `o_ref`, handing out the copy's two DMA semaphores
(`pltpu.SEMAPHORE`-space outputs) while the copy is still in flight. `send_done` waits
until the shard has left (its send semaphore), `recv_done` until the left neighbour's
shard has arrived (its receive semaphore), and `use_block` then copies the received block
into the result. Compute that the collective is written to overlap would go between the
start and the done kernels. Written the way JAX's own tests write it
(tests/pallas/tpu_pallas_async_test.py: start, send_done, recv_done as three pallas_calls
whose futures are semaphore arrays).
"""

import functools

import jax
from jax import lax
from jax import numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

P = jax.sharding.PartitionSpec
num_devices = jax.device_count()
mesh = jax.make_mesh((num_devices,), ("x",))
partition = P(None, "x")
SEM = pl.BlockSpec(memory_space=pltpu.SEMAPHORE)
ANY = pl.BlockSpec(memory_space=pl.ANY)


def start_kernel(x_ref, aliased_x_ref, o_ref, send_sem, recv_sem):
    del aliased_x_ref
    me = lax.axis_index("x")
    left = lax.rem(me + num_devices - 1, num_devices)
    right = lax.rem(me + 1, num_devices)
    barrier = pltpu.get_barrier_semaphore()
    pl.semaphore_signal(barrier, 1, device_id=(left,))
    pl.semaphore_wait(barrier, 1)
    copy = pltpu.make_async_remote_copy(x_ref, o_ref, send_sem, recv_sem, device_id=(right,),
                                        device_id_type=pl.DeviceIdType.MESH)
    copy.start()


def ppermute_start(x):
    """Starts the shift; returns the (aliased) input and the future: the output buffer
    the copy lands in and the copy's two semaphores."""
    x, out, send_sem, recv_sem = pl.pallas_call(
        start_kernel,
        out_shape=(
            jax.ShapeDtypeStruct(x.shape, x.dtype),
            jax.ShapeDtypeStruct(x.shape, x.dtype),
            pltpu.SemaphoreType.DMA(()),
            pltpu.SemaphoreType.DMA(()),
        ),
        in_specs=[ANY],
        out_specs=(ANY, ANY, SEM, SEM),
        input_output_aliases={0: 0},
        compiler_params=pltpu.CompilerParams(collective_id=0, has_side_effects=True),
    )(x)
    return x, (out, send_sem, recv_sem)


def send_done_kernel(x_ref, send_sem, aliased_x_ref):
    del aliased_x_ref
    pltpu.make_async_copy(x_ref, x_ref, send_sem).wait()


def send_done(x, future):
    _, send_sem, _ = future
    return pl.pallas_call(
        send_done_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[ANY, SEM],
        out_specs=ANY,
        input_output_aliases={0: 0},
    )(x, send_sem)


def recv_done_kernel(x_ref, o_ref, recv_sem, aliased_o_ref):
    del aliased_o_ref
    pltpu.make_async_copy(x_ref, o_ref, recv_sem).wait()


def recv_done(x, future):
    out, _, recv_sem = future
    return pl.pallas_call(
        recv_done_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[ANY, ANY, SEM],
        out_specs=ANY,
        input_output_aliases={1: 0},
    )(x, out, recv_sem)


def use_kernel(o_ref, y_ref, sem):
    copy = pltpu.make_async_copy(o_ref, y_ref, sem)
    copy.start()
    copy.wait()


def use_block(out):
    return pl.pallas_call(
        use_kernel,
        out_shape=jax.ShapeDtypeStruct(out.shape, out.dtype),
        in_specs=[ANY],
        out_specs=ANY,
        scratch_shapes=[pltpu.SemaphoreType.DMA],
    )(out)


@jax.jit
@functools.partial(jax.shard_map, mesh=mesh, in_specs=partition, out_specs=partition, check_vma=False)
def permute(x):
    x, future = ppermute_start(x)
    x = send_done(x, future)
    out = recv_done(x, future)
    return use_block(out)


x = jax.device_put(jax.random.uniform(jax.random.key(0), (8, 128 * num_devices)),
                   jax.sharding.NamedSharding(mesh, partition))
y = permute(x)
