"""tpu-inference 0.32.0 `kernels/collectives/hierrs_sc/`: a hierarchical (recursive
halving) reduce-scatter on the SparseCores, one `pl.kernel` over two meshes: the scalar
subcores (`scs_kernel`) drive die-to-die and chip-to-chip remote copies, the vector
subcores (`tec_kernel`) accumulate, and the two hand buffers over by semaphores.

Driver: 8 devices (4 chips of 2 cores, two hypercube dimensions) on axis `x`, 64 * 8
bfloat16 tokens of width 1024 per device, through the library's
`hierarchical_reduce_scatter_local` inside `jit(shard_map(..., check_vma=False))`
(the function works on one device's shard). `pltpu.get_tpu_info()`, which sizes the
cores, subcores and hypercube, answers with a TPU 7x's (`fetch.pretend_tpu`; the
kernel asserts two cores per chip). The mesh has `Auto` axes.

The library itself cannot build the kernel for 2 chips (4 devices, one hypercube
dimension): `start_phase2_c2c_copies(step_idx=1)` is called unconditionally
(`kernel.py:183`, `kernel.py:204`) and computes `1 << (num_hcube_dims - 1 - step_idx)`
(`dma_pipeline.py:117`), a negative shift; so the driver is run at N = 8.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch  # noqa: E402

fetch.pretend_tpu("7x")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

wrapper = fetch.module("tpu-inference", "0.32.0", "tpu_inference.kernels.collectives.hierrs_sc.wrapper")

n = jax.device_count()
mesh = jax.make_mesh((n,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
P = jax.sharding.PartitionSpec
x = jax.device_put(jnp.ones((n, 64 * n, 1024), jnp.bfloat16), jax.sharding.NamedSharding(mesh, P("x")))
rs = jax.shard_map(lambda a: wrapper.hierarchical_reduce_scatter_local(a[0], n, axis_name="x")[None],
                   mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False)
out = jax.jit(rs)(x)
print(out.shape)
