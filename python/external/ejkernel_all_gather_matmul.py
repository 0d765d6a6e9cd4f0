"""ejkernel 0.0.80.3 (EasyDeL's kernel library)
`kernels/_pallas/tpu/all_gather_matmul/_pallas_impl.py`: all-gather of the LHS over
the ring overlapped with the matmul `all_gather(x) @ y`. Its kernel body is
tpu-inference's `all_gather_matmul` (`tpu_inference_all_gather_matmul.py`) with the
debug prints removed; the launcher is ejkernel's own (block sizes default to the whole
shard, no tuned-size table).

Driver: bfloat16 x (16 * N, 128) sharded on rows and y (128, 128 * N) sharded on
columns, so each device holds x (16, 128) and y (128, 128); the library's defaults
`bn = n_per_device`, `bk = k` give the grid `(N + 2, 1, 1)`. The library's public
`all_gather_matmul` (`_interface.py`) is a `custom_vjp` whose forward calls this
`_pallas_impl.all_gather_matmul` with the same arguments; the driver calls the latter,
inside `shard_map` (`check_vma=False`: the kernel's `ShapeDtypeStruct` outputs carry no
varying-axes type) under `jit`, because the interface's type-checking decorators
(beartype, jaxtyping) and the package's kernel registry are not installed with the
front end. The package's `__init__` is bypassed.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch  # noqa: E402
import jax  # noqa: E402
from _all_gather_matmul_inputs import P, mesh, x, y  # noqa: E402

agmm = fetch.module("ejkernel", "0.0.80.3", "ejkernel.kernels._pallas.tpu.all_gather_matmul._pallas_impl")

ag = jax.shard_map(lambda a, b: agmm.all_gather_matmul(a, b, axis_name="x", tp_size=None, collective_id=0),
                   mesh=mesh, in_specs=(P("x", None), P(None, "x")), out_specs=P(None, "x"), check_vma=False)
out = jax.jit(ag)(x, y)
print(out.shape)
