"""A kernel that waits for half of a copy and reads that half (not a seed kernel).

Every device copies its two (8, 128) tiles to its right neighbour in one remote copy. The
receiver waits with a descriptor of one tile (half the copy's bytes), reads the first tile,
then waits for the second tile's bytes and reads it. The receive semaphore counts bytes as
they land (seed 001: `wait_recv` is `vwait.ge [sflag], bytes`), so the first wait passes as
soon as half the bytes have arrived: the kernel is correct only if the tile that arrived is
the tile it reads. `semcheck check half_wait.py --devices 2` proves it under the default
`--dma-landing whole` (a copy lands at once); `--dma-landing cells` (the tiles land one by
one, in any order) finds the race.
"""

import jax
from jax import lax
from jax import numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

P = jax.sharding.PartitionSpec
num_devices = jax.local_device_count()

partition = P("x", None, None)
mesh = jax.make_mesh((num_devices,), ("x",))
sharding = jax.sharding.NamedSharding(mesh, partition)

input_arr = jax.random.uniform(
    jax.random.key(0),
    shape=(2 * num_devices, 8, 128),
)
input_arr = jax.device_put(input_arr, sharding)


def half_wait_kernel(x_ref, o_ref, buf_ref, send_sem, recv_sem):
    my_id = lax.axis_index("x")
    right = lax.rem(my_id + 1, num_devices)

    def copy(src, dst):
        return pltpu.make_async_remote_copy(
            src_ref=src,
            dst_ref=dst,
            send_sem=send_sem,
            recv_sem=recv_sem,
            device_id=(right,),
            device_id_type=pl.DeviceIdType.MESH,
        )

    whole = copy(x_ref, buf_ref)
    whole.start()
    # Half the bytes: a descriptor of the first tile only.
    copy(x_ref.at[0], buf_ref.at[0]).wait_recv()
    o_ref[0] = buf_ref[0]
    copy(x_ref.at[1], buf_ref.at[1]).wait_recv()
    o_ref[1] = buf_ref[1]
    whole.wait_send()


out_shape = jax.ShapeDtypeStruct((2, 8, 128), jnp.float32)

grid_spec = pltpu.PrefetchScalarGridSpec(
    num_scalar_prefetch=0,
    in_specs=[pl.BlockSpec(memory_space=pltpu.VMEM)],
    out_specs=pl.BlockSpec(memory_space=pltpu.VMEM),
    scratch_shapes=(
        pltpu.VMEM((2, 8, 128), jnp.float32),
        pltpu.SemaphoreType.DMA,
        pltpu.SemaphoreType.DMA,
    ),
)

half_wait = pl.pallas_call(
    half_wait_kernel,
    out_shape=out_shape,
    grid_spec=grid_spec,
)

result = jax.jit(
    jax.shard_map(
        half_wait,
        mesh=mesh,
        in_specs=partition,
        out_specs=partition,
        check_vma=False,
    )
)(input_arr)
