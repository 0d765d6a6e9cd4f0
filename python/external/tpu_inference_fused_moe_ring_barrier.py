"""tpu-inference 0.12.0 (or `VERSION=0.13.3`) `kernels/fused_moe/v1/kernel.py`: the first
published versions of the fused expert-parallel MoE kernel (`tpu_inference_fused_moe.py`
drives 0.32.0's). Their synchronisation differs from 0.32.0's (the same since 0.18.0):
the barrier (`sync_barrier`) signals only the right neighbour on the ring and waits for
one signal, where 0.32.0's signals every device and waits for all of them. 0.12.0 calls
it inside the metadata all-reduce and before every expert's all-to-all; 0.13.3 also
once per token block between the metadata all-reduce and the first all-to-all
(0.32.0 adds one at entry and two after each token block).

Driver: as `tpu_inference_fused_moe.py`, at 0.12.0 or 0.13.3: a (1, N) mesh ("data", "model"),
8 tokens per device, 256-wide hidden and intermediate sizes, N * 2 experts, top-2
routing, bfloat16, one block per dimension. Neither module imports anything of vLLM;
0.12.0's calls `jax._src.dtypes.bit_width`, which jax 0.10.2 calls `itemsize_bits` (the
driver adds the old name).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax._src import dtypes  # noqa: E402

if not hasattr(dtypes, "bit_width"):  # renamed `itemsize_bits` after the jax 0.12.0 was built for
    dtypes.bit_width = dtypes.itemsize_bits

version = os.environ.get("VERSION", "0.12.0")
if version not in ("0.12.0", "0.13.3"):
    raise SystemExit(f"VERSION={version}: this driver pins tpu-inference 0.12.0 or 0.13.3")
moe = fetch.module("tpu-inference", version, "tpu_inference.kernels.fused_moe.v1.kernel")

n = jax.device_count()
mesh = jax.make_mesh((1, n), ("data", "model"))
tokens = 8 * n
experts = 2 * n
hidden = inter = 256
ep = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("model"))
t = jax.device_put(jnp.ones((tokens, hidden), jnp.bfloat16), ep)
w1 = jax.device_put(jnp.ones((experts, 2, hidden, inter), jnp.bfloat16), ep)
w2 = jax.device_put(jnp.ones((experts, inter, hidden), jnp.bfloat16), ep)
gating = jax.device_put(jnp.ones((tokens, experts), jnp.bfloat16), ep)
out = moe.fused_ep_moe(mesh, t, w1, w2, gating, 2, ep_axis_name="model",
                       bt=8, btc=8, bf=256, bfc=256, bd1=256, bd1c=256, bd2=256, bd2c=256)
print(out.shape)
