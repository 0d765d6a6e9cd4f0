"""An index window fetched into SMEM by a DMA: each device copies windows of its routing
table (an integer input the script passes) into a double-buffered SMEM scratch, prefetching
the next window while it reads the current one, and sends the rows each entry names to its
right neighbour. The values copied into SMEM are known (they come from the script), so the
rows are read from them; the next window goes into the other slot, so no load of a window
races with the copy that fills it. ``NEXT=same`` fetches the next window into the slot
being read: the copy races with the loads still to come."""

import os

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, P, remote

W = 2  # entries per window
WINDOWS = 2
ROWS = W * WINDOWS
NEXT = os.environ.get("NEXT", "other")


def kernel(route_hbm, x_hbm, o_hbm, win, fetch_sems, send, recv):
    right = lax.rem(lax.axis_index("x") + 1, N)

    def fetch(k, slot):
        return pltpu.make_async_copy(route_hbm.at[pl.ds(k * W, W)], win.at[slot], fetch_sems.at[slot])

    fetch(0, 0).start()
    slot = 0
    for k in range(WINDOWS):
        fetch(k, slot).wait()
        following = slot if NEXT == "same" else 1 - slot
        if k + 1 < WINDOWS:
            fetch(k + 1, following).start()
        for i in range(W):
            row = win[slot, i]
            c = remote(x_hbm.at[pl.ds(row, 1)], o_hbm.at[pl.ds(row, 1)], send, recv, (right,))
            c.start()
            c.wait()
        slot = following


def main():
    mesh = jax.make_mesh((N,), ("x",))
    put = lambda a, spec: jax.device_put(a, jax.sharding.NamedSharding(mesh, spec))  # noqa: E731
    route = put(jnp.tile(jnp.array([2, 0, 3, 1], jnp.int32), N), P("x"))  # every device: rows 2, 0, 3, 1
    x = put(jnp.zeros((ROWS, 128 * N), jnp.float32), P(None, "x"))
    f = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((ROWS, 128), jnp.float32),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)] * 2,
        out_specs=pl.BlockSpec(memory_space=pl.ANY),
        scratch_shapes=[pltpu.SMEM((2, W), jnp.int32), pltpu.SemaphoreType.DMA((2,)),
                        pltpu.SemaphoreType.DMA, pltpu.SemaphoreType.DMA],
    )
    g = jax.shard_map(f, mesh=mesh, in_specs=(P("x"), P(None, "x")), out_specs=P(None, "x"), check_vma=False)
    return jax.jit(g)(route, x)


main()
