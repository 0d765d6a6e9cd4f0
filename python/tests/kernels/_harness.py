"""Shared set-up of the small test kernels: a shard_map over a mesh of all devices."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

P = jax.sharding.PartitionSpec
N = jax.device_count()


def call(kernel, *, scratch=(), grid=(), shape=(8, 128), n_out=1, compiler_params=None,
         axes=("x",), mesh_shape=None, in_space=pl.ANY, out_space=pl.ANY, in_specs=None, name=None,
         input_output_aliases=None, num_scalar_prefetch=0, prefetch=()):
    """Runs `kernel` under jit(shard_map) on a mesh of every device; every device has
    one input block of `shape` and `n_out` outputs of the same shape. `prefetch`: the
    scalar-prefetch operands, or a function computing them inside the shard_map (per
    device)."""
    mesh = jax.make_mesh(mesh_shape or (N,), axes)
    spec = P(None, axes if len(axes) > 1 else axes[0])
    x = jax.device_put(jnp.zeros((shape[0], shape[1] * N), jnp.float32), jax.sharding.NamedSharding(mesh, spec))
    outs = [jax.ShapeDtypeStruct(shape, jnp.float32)] * n_out
    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=num_scalar_prefetch,
        in_specs=in_specs or [pl.BlockSpec(memory_space=in_space)],
        out_specs=[pl.BlockSpec(memory_space=out_space)] * n_out,
        scratch_shapes=list(scratch),
        grid=grid,
    )
    f = pl.pallas_call(kernel, out_shape=outs, grid_spec=grid_spec, compiler_params=compiler_params,
                       name=name, input_output_aliases=input_output_aliases or {})
    if callable(prefetch):
        body = lambda x: f(*prefetch(), x)  # noqa: E731
    elif prefetch:
        body = lambda x: f(*prefetch, x)  # noqa: E731
    else:
        body = f
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False))(x)


def remote(src, dst, send, recv, device_id, **kw):
    return pltpu.make_async_remote_copy(src_ref=src, dst_ref=dst, send_sem=send, recv_sem=recv,
                                        device_id=device_id, **kw)
