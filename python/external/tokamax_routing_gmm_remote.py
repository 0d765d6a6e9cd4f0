"""tokamax 0.0.17 `_src/ops/experimental/routing_moe/gmm/`: `routing_gmm`, a grouped
matmul that pipelines routing with compute (`pl.kernel` over a `TensorCoreMesh`,
`emit_pipeline` with hijax refs). With a remote scatter
(`make_routing_wrapper(..., remote_axis=...)`) every output row is written by a remote
copy straight into the device that owns it (`memory_ref.RemoteBranchlessBufferedRef`):
an all-pairs double barrier in the prologue (the barrier semaphore, then a scoped
REGULAR semaphore), one remote copy per row on a `recv_sem` shared by every sender,
and an epilogue that waits for the device's whole output on that semaphore.

Driver: tokamax's own test of it (`routing_moe/test/gmm_test.py`,
`remote_gmm_unpermute` / `_routing_gmm_shard`: `routing_gmm` inside
`jit(shard_map(..., check_vma=False))` over the mesh axis `model`, the weights sharded
on the experts, `group_offset` each shard's first expert) at a smaller shape than its
`(256 tokens, top 2, 16 experts, K 1024, N 512)`: 32N tokens, top 2, 2N experts, K 256,
N 256, bfloat16, token t routed to experts t and t + 1 (mod 2N), so every device sends
rows to every other. ``TOKENS_PER_DEVICE`` (32) sets the tokens per device: from 256,
each expert gets 256 rows, so a device's two groups start in different 256-row blocks of
the scatter indices the kernel fetches. The inputs are built as the test builds them (argsort of the
flattened top-k ids, `input_pack` of the gathered rows).

The package needs Python >= 3.12: its `common/arg.py` and `gmm/memory_ref.py` use PEP
695 generic classes (`class ActivationWrapper[T]`) and `typing.override`, so this
driver runs only under a 3.12 interpreter with the front end's pinned packages
(`SEMCHECK_PYTHON=/path/to/python3.12`, e.g. a venv with
`pip install -r python/requirements.txt`); under semcheck's own 3.11 environment it
stops at the import (a script error, exit 2). It also declares jax >= 0.11.1: the one
name it uses that the front end's jax 0.10.2 lacks, `pltpu.TensorCoreMesh(axis_name,
num_cores=...)` (`gmm/kernel.py:142`), is given as jax 0.10.2's
`pltpu.create_tensorcore_mesh`, which builds that mesh; and `pltpu.annotate(ref,
no_hazard_no_deps=True)` (`pipeline.py:64`, `65`, `memory_ref.py:411`, `433`: a hint
that lets Mosaic drop its dependency tracking on those refs) is the ref itself, so
semcheck reads their accesses in program order. `pltpu.get_tpu_info()` answers with a TPU
7x's sizes (the plan sizes tiles and VMEM from it; on a CPU it raises).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch  # noqa: E402

fetch.pretend_tpu("7x")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.experimental.pallas import tpu as pltpu  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

base = "tokamax._src.ops.experimental.routing_moe"
gmm = fetch.module("tokamax", "0.0.17", f"{base}.gmm.kernel", python_version="3.12")
arg = sys.modules[f"{base}.common.arg"]
if not hasattr(pltpu, "TensorCoreMesh"):  # jax 0.10.2: only the factory is public
    pltpu.TensorCoreMesh = lambda axis_name, num_cores: pltpu.create_tensorcore_mesh(axis_name, num_cores=num_cores)
if not hasattr(pltpu, "annotate"):  # jax >= 0.11: a compiler hint on a ref; here the ref itself
    pltpu.annotate = lambda ref, **hints: ref
input_pack = fetch.module("tokamax", "0.0.17", f"{base}.io_relayout.input_pack", python_version="3.12")

n = jax.device_count()
TOKENS_PER_DEVICE = int(os.environ.get("TOKENS_PER_DEVICE", "32"))
axis = "model"
mesh = jax.make_mesh((n,), (axis,), axis_types=(jax.sharding.AxisType.Auto,))
tokens, topk, experts, size_k, size_n = TOKENS_PER_DEVICE * n, 2, 2 * n, 256, 256
local_experts = experts // n

t = jnp.arange(tokens)[:, None]
topk_indices = (t + jnp.arange(topk)[None, :]) % experts
flat = topk_indices.flatten()
topk_argsort_indices = jnp.argsort(flat)
gather_indices = topk_argsort_indices // topk
group_sizes = jnp.bincount(flat, length=experts)
lhs = jnp.ones((tokens, size_k), jnp.bfloat16)
lhs_gathered_compact = input_pack.input_pack(lhs[gather_indices])
rhs = jnp.ones((experts, size_k, size_n), jnp.bfloat16)


def shard(lhs, rhs, group_sizes, group_offset, scatter_indices):
    out = gmm.routing_gmm(lhs, arg.make_weight_wrapper(rhs), group_sizes, group_offset=group_offset,
                          scatter=arg.make_routing_wrapper(scatter_indices, remote_axis=axis))
    return out.data


@jax.jit
def remote_gmm_unpermute(lhs, rhs, group_sizes, topk_argsort_indices):
    group_offset = jnp.arange(0, experts, local_experts)
    return jax.shard_map(shard, mesh=mesh, in_specs=(P(), P(axis), P(), P(axis), P()), out_specs=P(axis),
                         check_vma=False)(lhs, rhs, group_sizes, group_offset, topk_argsort_indices)


print(remote_gmm_unpermute(lhs_gathered_compact, rhs, group_sizes, topk_argsort_indices).shape)
