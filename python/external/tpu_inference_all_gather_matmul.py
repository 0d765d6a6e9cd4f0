"""tpu-inference 0.32.0 `kernels/collectives/all_gather_matmul.py`: all-gather of the
LHS over the ring overlapped with the matmul (vLLM's TPU backend). Bidirectional
remote copies into an HBM scratch, a double-buffered VMEM pipeline, `jnp.dot` on
loaded values, a 3-D grid `(N + 2, grid_n, grid_k)`.

Driver: x (16 * N, 128) bfloat16 sharded on rows, y (128, 128 * N) sharded on columns,
one block in n and k (`bn = 128`, `bk = 128`), so the grid is `(N + 2, 1, 1)`.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch  # noqa: E402
from _all_gather_matmul_inputs import mesh, x, y  # noqa: E402

agmm = fetch.module("tpu-inference", "0.32.0", "tpu_inference.kernels.collectives.all_gather_matmul")

out = agmm.all_gather_matmul(x, y, mesh, "x", bn=128, bk=128)
print(out.shape)
