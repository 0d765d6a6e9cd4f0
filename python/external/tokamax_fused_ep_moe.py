"""tokamax 0.0.17 `_src/ops/experimental/fused_moe/`: the fused expert-parallel MoE
layer (`layer.fused_ep_moe_v2`, kernel built by `kernel.build_fused_ep_moe_kernel`).
Each shard gathers the routed token rows it computes from an all-gathered activation
slab, streams its local experts' weights through VMEM slots, and pushes every result
row (and its fp8 row scale) straight to the shard that owns the token by remote
copies, so the layer needs no combine reduce-scatter; an all-pairs double barrier
(`_all_pairs_barrier`: the barrier semaphore, then a scoped REGULAR semaphore)
guards the pushes. A second, local kernel combines the arrivals.

Driver: N shards on the axis `d` (tokamax's own `AXIS`), `fused_ep_moe_v2` called
inside `jax.jit` as its test does (`test_fused_ep_moe_v2.py`,
`_check_against_the_reference`: fp8 e4m3 weights with per-channel scales,
`renormalize=True`, `capacity=128`; the entry point builds its own
`shard_map(..., check_vma=False)`), at a smaller shape than the test's `SMALL`: 32
tokens per shard of width 512, intermediate 256, 2 experts per shard, top 2, router
logits that send token t to experts t and t + 1 (mod 2N), so every shard pushes rows
to every other. The wheel declares Python >= 3.12 and jax >= 0.11.1; the layer's
modules parse under 3.11 and are fetched with `python_version="3.12"`, imported alone
(`fetch.module`). One stand-in: `tokamax._src.config` (absl flags, PEP 695 syntax) is
replaced by its one option the import chain reads, `disable_multi_core_mode` at its
default `False` (`kernel.py` imports two activation functions from `gmm_v2.gmm_v2`,
whose own kernels read it; none of them runs here). `pltpu.get_tpu_info()` answers with
a TPU 7x's sizes (the VMEM accounting of `host.py` reads it; on a CPU it raises). And
the router's top-k kernel (`router_ops.pallas_select`, local, no communication) is
replaced by `lax.top_k`, the XLA op it replaces: the routing tables the MoE kernel
takes as scalar prefetch are computed from its output, and semcheck computes them with
every `pallas_call` answering zeros (which would route every pair to expert 0).
"""

import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch  # noqa: E402

fetch.pretend_tpu("7x")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

fetch.stub("tokamax._src.config", disable_multi_core_mode=types.SimpleNamespace(value=False))
layer = fetch.module("tokamax", "0.0.17", "tokamax._src.ops.experimental.fused_moe.layer",
                     python_version="3.12")
host = sys.modules["tokamax._src.ops.experimental.fused_moe.host"]


def select(scores, topk=10, block_rows=256, weight_scores=None):
    """`router_ops.pallas_select` as `lax.top_k` (what its docstring says it replaces: the
    top `topk` per row, lowest column first among equals)."""
    weights, idx = jax.lax.top_k(scores, topk)
    if weight_scores is not None:
        weights = jnp.take_along_axis(weight_scores, idx, axis=1)
    return weights, idx


layer.pallas_select = select

n = jax.device_count()
mesh = jax.make_mesh((n,), ("d",), axis_types=(jax.sharding.AxisType.Auto,))
tokens, hidden, inter, experts, topk = 32 * n, 512, 256, 2 * n, 2
f8 = jnp.float8_e4m3fn

x = jnp.ones((tokens, hidden), jnp.bfloat16)
t = jnp.arange(tokens)[:, None]
e = jnp.arange(experts)[None, :]
gating = jnp.where((e == t % experts) | (e == (t + 1) % experts), 1.0, -1.0).astype(jnp.float32)
w1 = jnp.ones((experts, hidden, 2 * inter), f8)
w2 = jnp.ones((experts, inter, hidden), f8)
w1_scale = jnp.ones((experts, 2 * inter), jnp.float32)
w2_scale = jnp.ones((experts, hidden), jnp.float32)


# SLAB=1: a ragged stride above `ep * g_local * tile_m` (the default is the least that
# holds the arrivals, here at most that) builds the kernel with its HBM contribution slab
# (`push_from_vmem` false, `kernel.py:759`).
stride = {"ragged_stride": (2 * n + 1) * 128} if os.environ.get("SLAB") == "1" else {}


@jax.jit
def moe(x, w1, w2, w1_scale, w2_scale, gating):
    return layer.fused_ep_moe_v2(x, w1, w2, w1_scale, w2_scale, gating, topk=topk, renormalize=True,
                                 mesh=mesh, capacity=128, weight_format=host.WeightFormat.FP8, **stride)



def logits(routing):
    """Router logits whose top 2 per token are ``routing``'s experts, in order (a
    ``semcheck.routings`` table ``[n, 32, 2]``: shard d's token t is row 32 d + t)."""
    r = jnp.asarray(routing).reshape(tokens, topk)
    rows = jnp.arange(tokens)[:, None]
    g = jnp.full((tokens, experts), -1.0, jnp.float32)
    return g.at[rows, r[:, :1]].set(2.0).at[rows, r[:, 1:]].set(1.0)


if os.environ.get("ROUTINGS") == "generated":
    # The driver's routing, then semcheck's generated ones (all to one expert, local only,
    # remote only, empty experts, random draws): one kernel checked per routing.
    from semcheck.routings import generated, routing

    tables = [("driver", gating)]
    tables += [(name, logits(r)) for name, r in generated(devices=n, tokens=tokens // n, top_k=topk, experts=experts)]
    for name, g in tables:
        with routing(name):
            print(moe(x, w1, w2, w1_scale, w2_scale, g).shape)
else:
    print(moe(x, w1, w2, w1_scale, w2_scale, gating).shape)
