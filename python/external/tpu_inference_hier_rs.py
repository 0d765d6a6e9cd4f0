"""tpu-inference 0.25.0 `kernels/collectives/hierarchical_reduce_scatter.py`: the
TensorCore hierarchical reduce-scatter that `hierrs_sc` (SparseCores) replaced; the
file was removed after 0.25.0. Phase 1 exchanges every chunk of the other core's half
with the twin core on the same chip by remote copies (`device_id` the twin, one DMA
semaphore per chip pair and micro-batch serving as both the send and the receive
semaphore), waits for each and accumulates it through VMEM into `running_sum`; phase 2
is recursive halving over the chips' hypercube, one remote copy per dimension and
micro-batch into the neighbour chip's `recv_buf`, each waited and accumulated; a local
copy of the device's chunk ends it. There is no barrier semaphore and no
`collective_id`: nothing but the remote copies' own semaphores orders the devices.

Driver: N devices (N / 2 chips of 2 cores; N = 2, 4, 8: the chip count must be a power
of two and the library does not check it) on axis `x`, (8N, 256) float32 per device,
through the library's `hierarchical_reduce_scatter_local` in
`jit(shard_map(..., check_vma=False))` (what its `hierarchical_reduce_scatter` wrapper
does with the old `jax.experimental.shard_map`, which jax 0.10.2 no longer has: the
module's import of it is answered with `jax.shard_map`'s module, the wrapper not called),
with the default 2 micro-batches.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

try:
    from jax.experimental import shard_map as _  # noqa: F401
except ImportError:  # jax >= 0.8: the module's `from jax.experimental import shard_map`
    import jax.experimental

    fetch.stub("jax.experimental.shard_map", shard_map=jax.shard_map)
    jax.experimental.shard_map = sys.modules["jax.experimental.shard_map"]

hrs = fetch.module("tpu-inference", "0.25.0", "tpu_inference.kernels.collectives.hierarchical_reduce_scatter")

n = jax.device_count()
mesh = jax.make_mesh((n,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
P = jax.sharding.PartitionSpec
x = jax.device_put(jnp.arange(n * 8 * n * 256, dtype=jnp.float32).reshape(n, 8 * n, 256),
                   jax.sharding.NamedSharding(mesh, P("x")))
rs = jax.shard_map(lambda a: hrs.hierarchical_reduce_scatter_local(a[0], n, axis_name="x")[None],
                   mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False)
out = jax.jit(rs)(x)
print(out.shape)
