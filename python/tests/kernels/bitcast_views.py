"""Bitcast views to a wider type, as MoE kernels pack bfloat16 rows into 32-bit words: each
device fetches its bfloat16 rows (4 rows of 2 packed halves of 128 lanes) into VMEM,
reads them, two rows at a time, through a uint32 view (each word packs the 2 halves of a row:
``jax._src.state.utils.bitcast``), writes the words back through a uint32 view of another
bfloat16 buffer, and sends that buffer to its right neighbour. A word covers both halves
of its row, so the packed dimension is one cell (and the rows, read two at a time, cells of
two). ``WAIT=late`` reads the words before the
fetch is waited for: a race on the fetched buffer."""

import os

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, P, remote

WAIT = os.environ.get("WAIT", "first")


def kernel(x_hbm, o_hbm, buf, res, sem, send, recv):
    right = lax.rem(lax.axis_index("x") + 1, N)
    fetch = pltpu.make_async_copy(x_hbm, buf, sem)
    fetch.start()
    if WAIT == "first":
        fetch.wait()
    for half in range(2):
        rows = pl.ds(2 * half, 2)
        words = buf.bitcast(jnp.uint32).reshape(4, 128)[rows]
        res.bitcast(jnp.uint32).reshape(4, 128)[rows] = (words >> 16) | (words << 16)
    if WAIT == "late":
        fetch.wait()
    c = remote(res, o_hbm, send, recv, (right,))
    c.start()
    c.wait()


def main():
    mesh = jax.make_mesh((N,), ("x",))
    x = jax.device_put(jnp.ones((4 * N, 2, 128), jnp.bfloat16), jax.sharding.NamedSharding(mesh, P("x")))
    f = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((4, 2, 128), jnp.bfloat16),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec(memory_space=pl.ANY),
        scratch_shapes=[pltpu.VMEM((4, 2, 128), jnp.bfloat16), pltpu.VMEM((4, 2, 128), jnp.bfloat16),
                        pltpu.SemaphoreType.DMA, pltpu.SemaphoreType.DMA, pltpu.SemaphoreType.DMA],
    )
    g = jax.shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False)
    return jax.jit(g)(x)


main()
