"""A routing the kernel computes on the device (``semcheck check --interpret-values``): each
device takes the argmax of its float scores (one row per entry), stores the row ids into a
VMEM scratch, copies them into SMEM by a local DMA, and sends the rows they name to its
right neighbour. The row ids come from float data, so without ``--interpret-values`` they
are run-time data; with it they are read with the values the copy carried when the script
ran in JAX's TPU interpret mode (rows 2, 0, 3, 1 on every device). ``WAIT=late`` waits for
the copy into SMEM only after the sends: the first row id is loaded while it is in flight,
a race."""

import os

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, P, remote

ROWS = 4
WAIT = os.environ.get("WAIT", "first")


def kernel(scores_ref, x_hbm, o_hbm, route_vmem, route_smem, copy_sem, send, recv):
    right = lax.rem(lax.axis_index("x") + 1, N)
    route_vmem[...] = jnp.argmax(scores_ref[...], axis=1).astype(jnp.int32)
    copy = pltpu.make_async_copy(route_vmem, route_smem, copy_sem)
    copy.start()
    if WAIT == "first":
        copy.wait()
    for i in range(ROWS):
        row = route_smem[i]
        c = remote(x_hbm.at[pl.ds(row, 1)], o_hbm.at[pl.ds(row, 1)], send, recv, (right,))
        c.start()
        c.wait()
    if WAIT == "late":
        copy.wait()


def main():
    mesh = jax.make_mesh((N,), ("x",))
    put = lambda a, spec: jax.device_put(a, jax.sharding.NamedSharding(mesh, spec))  # noqa: E731
    # Row i of every device's scores peaks at column [2, 0, 3, 1][i].
    peaks = jnp.array([2, 0, 3, 1])
    scores = put(jnp.tile(jax.nn.one_hot(peaks, 128, dtype=jnp.float32), (1, N)), P(None, "x"))
    x = put(jnp.ones((ROWS, 128 * N), jnp.float32), P(None, "x"))
    f = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((ROWS, 128), jnp.float32),
        in_specs=[pl.BlockSpec(memory_space=pltpu.VMEM), pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec(memory_space=pl.ANY),
        scratch_shapes=[pltpu.VMEM((ROWS,), jnp.int32), pltpu.SMEM((ROWS,), jnp.int32), pltpu.SemaphoreType.DMA,
                        pltpu.SemaphoreType.DMA, pltpu.SemaphoreType.DMA],
    )
    g = jax.shard_map(f, mesh=mesh, in_specs=(P(None, "x"), P(None, "x")), out_specs=P(None, "x"),
                      check_vma=False)
    return jax.jit(g)(scores, x)


main()
