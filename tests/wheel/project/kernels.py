"""Two ring shifts written as a kernel author writes them: each device sends its block to
its right neighbour. `shift` waits for the copy before using what arrived; `shift_early`
copies what arrived into its output before waiting for it."""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

P = jax.sharding.PartitionSpec


def shift_kernel(x_ref, o_ref, buf, send_sem, recv_sem, *, n, early):
    right = lax.rem(lax.axis_index("x") + 1, n)
    copy = pltpu.make_async_remote_copy(src_ref=x_ref, dst_ref=buf, send_sem=send_sem, recv_sem=recv_sem,
                                        device_id=(right,), device_id_type=pl.DeviceIdType.MESH)
    copy.start()
    if early:
        o_ref[...] = buf[...]
        copy.wait()
    else:
        copy.wait()
        o_ref[...] = buf[...]


def run(early: bool = False):
    """Runs the shift on every device JAX sees."""
    n = jax.device_count()
    mesh = jax.make_mesh((n,), ("x",))
    kernel = functools.partial(shift_kernel, n=n, early=early)
    call = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
        in_specs=[pl.BlockSpec(memory_space=pltpu.VMEM)],
        out_specs=pl.BlockSpec(memory_space=pltpu.VMEM),
        scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA, pltpu.SemaphoreType.DMA],
    )
    f = jax.jit(jax.shard_map(call, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False))
    x = jnp.arange(8 * 128 * n, dtype=jnp.float32).reshape(8 * n, 128)
    return f(jax.device_put(x, jax.sharding.NamedSharding(mesh, P("x"))))
