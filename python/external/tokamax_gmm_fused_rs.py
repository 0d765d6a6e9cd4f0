"""tokamax 0.0.17 `_src/ops/experimental/fused_moe_rs/gmm_fused_rs_nodedup.py`: the
expert-parallel grouped matmul (gather, GMM1, activation, GMM2) fused with the
reduce-scatter of its rows, written straight into the owning device's output by remote
copies (`run_gmm_fused_rs`, its `shard_map` entry point). tokamax's copy of
tpu-inference 0.32.0's kernel (`tpu_inference_gmm_fused_rs.py`): the same statements
but `device_id_type` left at its default (MESH) and `gmm_v2_fused_rs` defaulting to
`fp8_direct_write=True` (rows quantized to fp8 with one scale per row before the remote
copy; `run_gmm_fused_rs` does not pass it), with its own `gmm_v2_gather_scatter.py`.

Driver: the routing of `tpu_inference_gmm_fused_rs.py` (`_moe_routing.py`: N devices on
an `expert` axis, one expert per device, 128 tokens per device, 256-wide, top 1, token
t routed to expert t % N, rows sorted by expert), bfloat16. The wheel declares Python
>= 3.12 and jax >= 0.11.1; the two kernel modules import only jax and parse under
3.11, so it is fetched with `python_version="3.12"` and the module imported alone
(`fetch.module`). `pltpu.get_tpu_info()`, which the launcher sizes its tiles from,
answers with a v6e's sizes (`fetch.pretend_tpu`).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch  # noqa: E402

fetch.pretend_tpu("v6e")

from _moe_routing import run_gmm_fused_rs  # noqa: E402

rs = fetch.module("tokamax", "0.0.17", "tokamax._src.ops.experimental.fused_moe_rs.gmm_fused_rs_nodedup",
                  python_version="3.12")
out = run_gmm_fused_rs(rs)
print(out.shape)
