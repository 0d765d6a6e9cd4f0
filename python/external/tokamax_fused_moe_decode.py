"""tokamax 0.0.17 `_src/ops/experimental/fused_moe_decode/fused_moe_decode_kernel.py`:
the fused MoE decode block (routed experts, shared expert and the tensor-parallel
all-reduce in one call per rank). Each rank streams its active experts' weight slices
through a ring of VMEM slots by local DMAs, then all-reduces its partial sum: a
barrier signalled at entry to every rank and waited (`n` signals) only before the
all-to-all, one remote copy per peer into the peer's receive slot `recv[me]` (one DMA
semaphore `a2a_recv` counting all of them, waited for the whole receive buffer), a
local sum, and an all-gather of the reduced column chunk by one remote copy per peer
into each peer's output (one semaphore `ag_recv`, waited for the whole output).
With `SCATTER_ROWS=1` (DP attention, `scatter_rows=True`) the all-to-all sends token
rows, 16 per rank of 16N tokens of width 512, and there is no all-gather.

Driver: N ranks on the axis `d` (tokamax's own), `fused_moe_decode` called inside
`jit(shard_map(..., check_vma=False))` as tokamax's multichip test does
(`test_fused_moe_decode_kernel.py`): 16 tokens of width 512N (so the column chunk
`h // n_ranks` is 512 and the default `q_block = n_chunk = 512` divide it), 8 local
experts of intermediate slice 128 (the test has 64), a shared expert slice of 128,
top 2 with all 8 experts active, so that the weight ring (6 slots, its default depth)
wraps and refills twice, float8_e4m3fn weights, bfloat16 hidden states, `rank` from
`lax.axis_index` (the test passes the same index as a sharded array). The wheel
declares Python >= 3.12 and jax >= 0.11.1; its kernel module needs neither (it imports
only jax and parses under 3.11), so it is fetched with `python_version="3.12"` and
imported alone (`fetch.module`: tokamax's `__init__`s, pydantic configs and jaxtyping
wrappers are bypassed). `pltpu.get_tpu_info()`, which sizes the weight ring, answers
with a TPU 7x's sizes (the test requires a v7x; on a CPU it raises).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch  # noqa: E402

fetch.pretend_tpu("7x")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

kernel = fetch.module("tokamax", "0.0.17",
                      "tokamax._src.ops.experimental.fused_moe_decode.fused_moe_decode_kernel",
                      python_version="3.12")

scatter_rows = os.environ.get("SCATTER_ROWS", "0") == "1"
n = jax.device_count()
mesh = jax.make_mesh((n,), ("d",), axis_types=(jax.sharding.AxisType.Auto,))
tokens = 16 * n if scatter_rows else 16  # scatter_rows: 16 rows per rank
h = 512 if scatter_rows else 512 * n  # the TP all-gather sends h // n columns per rank
inter, inter_s, experts, topk = 128, 128, 8, 2
f8 = jnp.float8_e4m3fn


def moe_block(hidden, w1, w2, w1_scale, w2_scale, sw1, sw1_scale, sw2, sw2_scale, tw, ti):
    rank = jnp.reshape(lax.axis_index("d"), (1,)).astype(jnp.int32)
    out = kernel.fused_moe_decode(
        rank, hidden[0], w1[0], w2[0], w1_scale[0], w2_scale[0], sw1[0], sw1_scale[0],
        sw2[0], sw2_scale[0], None, tw[0], ti[0], n_ranks=n, scatter_rows=scatter_rows)
    return out[None]


def per_rank(shape, dtype):
    return jnp.ones((n, *shape), dtype)


hidden = per_rank((tokens, h), jnp.bfloat16)
weights = (per_rank((experts, h, 2 * inter), f8), per_rank((experts, inter, h), f8),
           per_rank((experts, 1, 1, 2 * inter), jnp.float32), per_rank((experts, 1, 1, h), jnp.float32),
           per_rank((h, 2 * inter_s), f8), per_rank((1, 2 * inter_s), jnp.float32),
           per_rank((inter_s, h), f8), per_rank((1, h), jnp.float32))
tw = jnp.full((n, tokens, topk), 0.5, jnp.bfloat16)
# token t routes to experts 2t and 2t + 1 (mod 8): all 8 active, more than the 6 ring slots
ti = jnp.broadcast_to(jnp.arange(tokens * topk, dtype=jnp.int32).reshape(tokens, topk) % experts,
                      (n, tokens, topk))
out = jax.jit(jax.shard_map(moe_block, mesh=mesh, in_specs=P("d"), out_specs=P("d"),
                            check_vma=False))(hidden, *weights, tw, ti)
print(out.shape)
