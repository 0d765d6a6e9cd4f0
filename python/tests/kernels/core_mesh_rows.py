"""A `pl.kernel` over a one-core TensorCore mesh inside a `shard_map` over chips (as
tokamax's routing GMM launches it): each device sends the rows its routing table names to
its right neighbour, one remote copy per row, branchless. How many rows it sends is an
SMEM operand the script passes (`count`); the table's first `count` entries are fetched
into SMEM by one copy of that computed length; every one of the `MAX` row copies is
started, a dead one (`r >= count`) with size 0, so its index, read from scratch the fetch
never wrote, goes nowhere. ``DEAD=used`` gives a dead row size 1: the stale index is then
used. ``NEXT=early`` reads the window before its fetch is waited for: a race.
``NEXT=ahead`` fetches the table's next entries into the dead rows' cells while the rows
are sent: the dead rows load cells a copy is writing, and their values go nowhere, so it
is still proved.
``CORES=2``: a mesh of two cores per chip, whose cores share the chip's HBM (not supported
inside a `shard_map`).

Read under JAX 0.10.1 and later: 0.10.0 and earlier fail to trace it themselves
(arithmetic on a value loaded from the SMEM-constrained operand), and 0.8 and 0.9 stage
`pl.kernel` as refs a `core_map` closes over, whose operand values semcheck does not
read."""

import inspect
import os

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

# The mesh of a chip's TensorCores: `pltpu.TensorCoreMesh` from jax 0.11 (0.12.1 removed the
# factory `pltpu.create_tensorcore_mesh`, the only way before 0.11).
_tensorcore_mesh = getattr(pltpu, "TensorCoreMesh", None) or pltpu.create_tensorcore_mesh

P = jax.sharding.PartitionSpec
N = jax.device_count()
MAX = 4
COUNT = 2
DEAD = os.environ.get("DEAD", "empty")
NEXT = os.environ.get("NEXT", "waited")
CORES = int(os.environ.get("CORES", "1"))


def kernel(count_smem, route_hbm, x_hbm, o_hbm, win, fetch_sem, send, recv):
    right = lax.rem(lax.axis_index("x") + 1, N)
    core = lax.axis_index("core")  # 0 with one core
    count = count_smem[0]
    fetch = pltpu.make_async_copy(route_hbm.at[pl.ds(0, count)], win.at[pl.ds(core, count)], fetch_sem)
    fetch.start()
    if NEXT != "early":
        fetch.wait()
    ahead = pltpu.make_async_copy(route_hbm.at[pl.ds(count, MAX - count)], win.at[pl.ds(count, MAX - count)],
                                  fetch_sem)
    if NEXT == "ahead":
        ahead.start()
    sends = []
    for r in range(MAX):
        live = r < count
        size = jnp.where(live, 1, 0) if DEAD == "empty" else 1
        row = win[r]
        c = pltpu.make_async_remote_copy(x_hbm.at[pl.ds(row, size)], o_hbm.at[pl.ds(row, size)], send, recv,
                                         device_id=(jnp.where(live, right, 0),), device_id_type=pl.DeviceIdType.MESH)
        c.start()
        sends.append(c)
    if NEXT == "early":
        fetch.wait()
    if NEXT == "ahead":
        ahead.wait()
    for r in range(MAX):
        @pl.when(r < count)
        def _():
            sends[r].wait_send()
            sends[r].wait_recv()


def main():
    mesh = jax.make_mesh((N,), ("x",))
    put = lambda a, spec: jax.device_put(a, jax.sharding.NamedSharding(mesh, spec))  # noqa: E731
    count = put(jnp.full((N,), COUNT, jnp.int32), P("x"))
    route = put(jnp.tile(jnp.array([3, 1, 0, 2], jnp.int32), N), P("x"))  # every device: rows 3, 1, ...
    x = put(jnp.zeros((MAX, 128 * N), jnp.float32), P(None, "x"))
    scratch = (pltpu.SMEM((MAX,), jnp.int32), pltpu.SemaphoreType.DMA, pltpu.SemaphoreType.DMA,
               pltpu.SemaphoreType.DMA)
    key = "scratch_types" if "scratch_types" in inspect.signature(pl.kernel).parameters else "scratch_shapes"
    f = pl.kernel(kernel, jax.ShapeDtypeStruct((MAX, 128), jnp.float32),
                  mesh=_tensorcore_mesh(axis_name="core", num_cores=CORES), **{key: scratch})

    def body(count, route, x):
        return f(pltpu.with_memory_space_constraint(count, pltpu.SMEM), route, x)

    g = jax.shard_map(body, mesh=mesh, in_specs=(P("x"), P("x"), P(None, "x")), out_specs=P(None, "x"),
                      check_vma=False)
    return jax.jit(g)(count, route, x)


main()
