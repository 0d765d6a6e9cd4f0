"""tpu-inference 0.32.0 `kernels/experimental/rpa_v3_cp/kernel.py`: ragged paged
attention with prefill context parallelism, cache phase on the ring
(`pcp_ring_axis_name`): each rank holds a stripe of the KV cache (tokens r, r + N, ...)
and streams its blocks round the ring by remote copies into the next rank's VMEM
double buffer, a REGULAR semaphore handing each slot back to its sender, while every
rank attends with its local queries (`ragged_paged_attention`, its jitted entry point).

Driver: N devices on a `pcp` axis (the ring needs N even: the library rejects odd N),
called inside `jax.shard_map` with the arguments tpu-inference's cache phase passes
(`layers/common/cp_attention.py`, `pcp_forward`: `skip_current_attn=True`,
`use_causal_mask=False`, `update_kv_cache=False`, `return_lse=True`, `cp_rank` from
`lax.axis_index`) and block sizes given as its ring test does
(`tests/kernels/rpa_v3_cp/ragged_paged_attention_kernel_cp_test.py`,
`m_block_sizes`): one sequence (one mixed-case request), 16 query rows per rank, 16N
cached tokens (one page of 16 per rank), 2 query heads, 1 KV head, head size 128,
float32, blocks `(16, 16, 16, 16)`. Two stand-ins, both for the host, not the kernel:
`get_tpu_version()`, which the entry point and the default block sizes branch on, says
6 (on a CPU it says -1 and the decode case's default block sizes raise
`NotImplementedError`), and `pltpu.get_tpu_info()`, which gives the VMEM limit, answers
with a v6e's sizes (`fetch.pretend_tpu`). `pcp_forward` itself is not called: its module
imports vLLM's logger and tpu-inference's attention metadata (the serving framework); the
package's `__init__`s are bypassed.

With `PREFILL=1` the sequence is a prefill-only one (`distribution` `[0, 1, 1]`) and
`chunk_prefill_size` is its 16 query rows, so the entry point launches a third kernel,
`RPAp-...` (the prefill case: the same ring, compiled for a static query length), which
processes it, with `p_block_sizes=(16, 16, 16, 16)`; the mixed launch then has no
sequence.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch  # noqa: E402

fetch.pretend_tpu("v6e")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

rpa = fetch.module("tpu-inference", "0.32.0", "tpu_inference.kernels.experimental.rpa_v3_cp.kernel")

rpa.get_tpu_version = lambda: 6  # a v6e, as fetch.pretend_tpu says

n = jax.device_count()
mesh = jax.make_mesh((n,), ("pcp",), axis_types=(jax.sharding.AxisType.Auto,))
page = 16
rows = 16  # query rows per rank
cached = page * n  # cached tokens of the one sequence, striped over the ranks
nq, nkv, hd = 2, 1, 128
pages_per_seq = -(-(cached + rows * n) // page)
kv_cache_shape = rpa.get_kv_cache_shape(pages_per_seq, page, nkv, hd, jnp.float32)


prefill = os.environ.get("PREFILL") == "1"
phases = {"chunk_prefill_size": rows, "p_block_sizes": (16, 16, 16, 16)} if prefill else {}


def cache_phase(q, kv_cache):
    cp_rank = jnp.reshape(lax.axis_index("pcp"), (1,)).astype(jnp.int32)
    new_kv = jnp.zeros((rows, nkv, hd), jnp.float32)  # the cache phase never reads it
    out, _, lse = rpa.ragged_paged_attention(
        q[0], new_kv, new_kv, kv_cache[0],
        jnp.array([cached + rows * n], jnp.int32),  # kv_lens
        jnp.arange(pages_per_seq, dtype=jnp.int32),  # page_indices
        jnp.array([0, rows], jnp.int32),  # cu_q_lens
        # distribution: one mixed sequence, or with PREFILL=1 one prefill-only sequence
        jnp.array([0, 1, 1] if prefill else [0, 0, 1], jnp.int32),
        kv_cache_lens=jnp.array([cached], jnp.int32),
        cp_rank=cp_rank, cp_group_size=n,
        pcp_ring_axis_name="pcp", pcp_ring_mesh_axis_names=("pcp",),
        skip_current_attn=True, use_causal_mask=False, update_kv_cache=False, return_lse=True,
        sm_scale=hd ** -0.5, m_block_sizes=(16, 16, 16, 16), **phases)
    return out[None], lse[None]


q = jnp.ones((n, rows, nq, hd), jnp.float32)
kv_cache = jnp.ones((n, *kv_cache_shape), jnp.float32)
out, lse = jax.jit(jax.shard_map(cache_phase, mesh=mesh, in_specs=(P("pcp"), P("pcp")),
                                 out_specs=(P("pcp"), P("pcp")), check_vma=False))(q, kv_cache)
print(out.shape, lse.shape)
