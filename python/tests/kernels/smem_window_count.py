"""A table fetched into SMEM by a DMA (from an input the script passes, [4, 1, 1, 1, 0]):
a trip count and a flag per row. A while loop runs while `i < table[0]` and
`table[1 + i] != 0`, each iteration sending row i to the right neighbour (three rows: the
flags end the loop before the count does). Every load of the table in the condition is a
read of its cell, before the loop and after every iteration: the count's at a fixed
index, the flags' at the loop's own (i = 0 before the loop, the next i after each
iteration). ``WAIT=late`` waits for the table's copy only after the loop: the condition's
first read races with it."""

import os

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, P, remote

ROWS = 4
TABLE = [4, 1, 1, 1, 0]
WAIT = os.environ.get("WAIT", "early")


def kernel(table_hbm, x_hbm, o_hbm, table, sem, send, recv):
    c = pltpu.make_async_copy(table_hbm, table, sem)
    c.start()
    if WAIT == "early":
        c.wait()
    right = lax.rem(lax.axis_index("x") + 1, N)

    def body(i):
        d = remote(x_hbm.at[pl.ds(i, 1)], o_hbm.at[pl.ds(i, 1)], send, recv, (right,))
        d.start()
        d.wait()
        return i + 1

    lax.while_loop(lambda i: jnp.logical_and(i < table[0], table[1 + i] != 0), body, 0)  # the loop
    if WAIT == "late":
        c.wait()


mesh = jax.make_mesh((N,), ("x",))
put = lambda a, spec: jax.device_put(a, jax.sharding.NamedSharding(mesh, spec))  # noqa: E731
f = pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((ROWS, 128), jnp.float32),
    in_specs=[pl.BlockSpec(memory_space=pl.ANY)] * 2,
    out_specs=pl.BlockSpec(memory_space=pl.ANY),
    scratch_shapes=[pltpu.SMEM((len(TABLE),), jnp.int32)] + [pltpu.SemaphoreType.DMA] * 3,
)
g = jax.shard_map(f, mesh=mesh, in_specs=(P("x"), P(None, "x")), out_specs=P(None, "x"), check_vma=False)
table = jnp.tile(jnp.array(TABLE, jnp.int32), N)
jax.jit(g)(put(table, P("x")), put(jnp.zeros((ROWS, 128 * N), jnp.float32), P(None, "x")))
