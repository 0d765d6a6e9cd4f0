"""tpu-inference 0.32.0 `kernels/experimental/fused_moe/gmm_fused_rs_nodedup.py`: the
expert-parallel grouped matmul (gather, GMM1, activation, GMM2) fused with the
reduce-scatter of its rows, written straight into the owning device's output by remote
copies (`run_gmm_fused_rs`, its `shard_map` entry point).

Driver: N devices on an `expert` axis, one expert per device, 128 tokens per device,
256-wide hidden and intermediate sizes, top 1, token t routed to expert t % N (rows
sorted by expert), bfloat16. Two stand-ins, both for the host, not the kernel: the mesh
has `Auto` axes (JAX 0.10's `make_mesh` default is `Explicit`, under which the entry
point's own unsharded `group_offset = jnp.arange(...)` does not match its
`in_specs=P('expert')`), and `pltpu.get_tpu_info()`, which the launcher sizes its
tiles from, answers with a v6e's sizes (`fetch.pretend_tpu`). The package's `__init__`s
are bypassed.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch  # noqa: E402

fetch.pretend_tpu("v6e")

from _moe_routing import run_gmm_fused_rs  # noqa: E402

rs = fetch.module("tpu-inference", "0.32.0", "tpu_inference.kernels.experimental.fused_moe.gmm_fused_rs_nodedup")
out = run_gmm_fused_rs(rs)
print(out.shape)
