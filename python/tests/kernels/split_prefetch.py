"""A split-phase remote copy of one slice chosen by a scalar-prefetch operand (the pattern
of JAX's async dynamic-slice test, sent to the right neighbour): the start kernel takes
`idx` in SMEM and hands out its DMA semaphores; the done kernel waits for both halves of
the copy. The values of `idx` are recovered by running the program on the CPU, whose
start kernel returns semaphore-typed outputs."""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, P

SEM = pl.BlockSpec(memory_space=pltpu.SEMAPHORE)
ANY = pl.BlockSpec(memory_space=pl.ANY)
mesh = jax.make_mesh((N,), ("x",))
spec = P("x")


def start_kernel(idx_ref, x_ref, o_ref, send_sem, recv_sem):
    right = lax.rem(lax.axis_index("x") + 1, N)
    pltpu.make_async_remote_copy(x_ref.at[idx_ref[0]], o_ref, send_sem, recv_sem, device_id=(right,)).start()


def done_kernel(x_ref, o_ref, send_sem, recv_sem, aliased_o_ref):
    del aliased_o_ref
    pltpu.make_async_copy(x_ref.at[0], o_ref, send_sem).wait()
    pltpu.make_async_copy(x_ref.at[0], o_ref, recv_sem).wait()


@jax.jit
@functools.partial(jax.shard_map, mesh=mesh, in_specs=(spec, spec), out_specs=spec, check_vma=False)
def permute_slice(idx, x):
    x = x[0]
    out, send_sem, recv_sem = pl.pallas_call(
        start_kernel,
        out_shape=(jax.ShapeDtypeStruct(x.shape[1:], x.dtype), pltpu.SemaphoreType.DMA(()),
                   pltpu.SemaphoreType.DMA(())),
        grid_spec=pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, in_specs=[ANY], out_specs=(ANY, SEM, SEM)),
    )(idx, x)
    out = pl.pallas_call(
        done_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape[1:], x.dtype),
        in_specs=[ANY, ANY, SEM, SEM],
        out_specs=ANY,
        input_output_aliases={1: 0},
    )(x, out, send_sem, recv_sem)
    return out[None]


x = jax.device_put(jnp.zeros((N, 4, 8, 128), jnp.float32), jax.sharding.NamedSharding(mesh, spec))
idx = jax.device_put((jnp.arange(N, dtype=jnp.int32) + 1) % 4, jax.sharding.NamedSharding(mesh, spec))
permute_slice(idx, x)
