"""ejkernel 0.0.80.3 (EasyDeL's kernel library)
`kernels/_pallas/tpu/reduce_scatter_matmul/_pallas_impl.py`: a bidirectional
reduce-scatter fused with the matmul `x @ y.T` (K sharded). M is split into N blocks,
each into a TOP and a BOT half; the TOP halves are reduced round the ring to the left,
the BOT halves to the right. Grid `(N,)`, one ring step per grid step: an entry
double barrier with both neighbours, then per step a capacity handshake
(`left_capacity_sem`/`right_capacity_sem`), two remote copies between the double
slots of an HBM scratch, tiled matmuls through VMEM and a tiled add.

Driver: float32 x (256 * N, 128 * N) and y (128, 128 * N), both sharded on K, so each
device holds x (256 * N, 128) and y (128, 128): one 128-row tile per half block and
one tile in n and k with the library's default `bm = bn = bk = 128`. float32 because
the library sends bfloat16 and float16 to `lax.psum_scatter` instead of the kernel.
The library's public `reduce_scatter_matmul` (`_interface.py`) is a `custom_vjp`
whose forward calls this `_pallas_impl.reduce_scatter_matmul` with the same arguments;
the driver calls the latter, inside `shard_map` as a caller must (with `check_vma=False`:
the kernel's `ShapeDtypeStruct` outputs carry no varying-axes type), because the
interface's type-checking decorators (beartype, jaxtyping) and the package's kernel
registry are not installed with the front end. The package's `__init__` is bypassed.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch  # noqa: E402


import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

rsmm = fetch.module("ejkernel", "0.0.80.3", "ejkernel.kernels._pallas.tpu.reduce_scatter_matmul._pallas_impl")

n = jax.device_count()
mesh = jax.make_mesh((n,), ("x",))
P = jax.sharding.PartitionSpec
k_sharded = jax.sharding.NamedSharding(mesh, P(None, "x"))
x = jax.device_put(jnp.ones((256 * n, 128 * n), jnp.float32), k_sharded)
y = jax.device_put(jnp.ones((128, 128 * n), jnp.float32), k_sharded)
rs = jax.shard_map(lambda a, b: rsmm.reduce_scatter_matmul(a, b, axis_name="x", tp_size=None, collective_id=0),
                   mesh=mesh, in_specs=(P(None, "x"), P(None, "x")), out_specs=P("x", None), check_vma=False)
out = jax.jit(rs)(x, y)
print(out.shape)
