"""The staggered collective-permute loop of JAX's async remote-copy tests: a copy started
before a `fori_loop`; each iteration waits for it (send_done, recv_done) and starts the
next; the last one is waited for after the loop. Nothing is in flight from the end of one
recv_done to the next start, so the script runs one program of three kernels N - 1 times
(`invocations`), each proved once."""
import functools
import jax
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, P

SEM = pl.BlockSpec(memory_space=pltpu.SEMAPHORE)
ANY = pl.BlockSpec(memory_space=pl.ANY)


def start_kernel(x_ref, aliased_x_ref, o_ref, send_sem, recv_sem):
    del aliased_x_ref
    me = lax.axis_index("x")
    barrier = pltpu.get_barrier_semaphore()
    pl.semaphore_signal(barrier, device_id=(lax.rem(me + N - 1, N),))
    pl.semaphore_wait(barrier, 1)
    pltpu.make_async_remote_copy(x_ref, o_ref, send_sem, recv_sem, device_id=(lax.rem(me + 1, N),)).start()


def start(x):
    x, out, s, r = pl.pallas_call(
        start_kernel,
        out_shape=(jax.ShapeDtypeStruct(x.shape, x.dtype),) * 2 + (pltpu.SemaphoreType.DMA(()),) * 2,
        in_specs=[ANY], out_specs=(ANY, ANY, SEM, SEM), input_output_aliases={0: 0},
        compiler_params=pltpu.CompilerParams(collective_id=0, has_side_effects=True))(x)
    return x, (out, s, r)


def send_done_kernel(x_ref, send_sem, aliased):
    del aliased
    pltpu.make_async_copy(x_ref, x_ref, send_sem).wait()


def recv_done_kernel(x_ref, o_ref, recv_sem, aliased):
    del aliased
    pltpu.make_async_copy(x_ref, o_ref, recv_sem).wait()


def send_done(x, fut):
    return pl.pallas_call(send_done_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          in_specs=[ANY, SEM], out_specs=ANY, input_output_aliases={0: 0})(x, fut[1])


def recv_done(x, fut):
    return pl.pallas_call(recv_done_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          in_specs=[ANY, ANY, SEM], out_specs=ANY, input_output_aliases={1: 0})(x, fut[0], fut[2])


mesh = jax.make_mesh((N,), ("x",))
spec = P(None, "x")


@jax.jit
@functools.partial(jax.shard_map, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False)
def f(x):
    x, fut = start(x)

    def body(_, carry):
        x, fut = carry
        x = send_done(x, fut)
        y = recv_done(x, fut)
        return start(y)

    x, fut = lax.fori_loop(0, N - 2, body, (x, fut), unroll=2)
    x = send_done(x, fut)
    return recv_done(x, fut)


x = jax.device_put(jax.numpy.zeros((8, 128 * N), jax.numpy.float32), jax.sharding.NamedSharding(mesh, spec))
f(x)
