"""tpu-inference 0.32.0 `kernels/fused_moe/v1/kernel.py`: the fused expert-parallel
MoE kernel (vLLM's TPU backend). Tokens are routed to the devices holding their
experts by remote copies whose targets and sizes come from the gating output.

Driver: a (1, N) mesh ("data", "model"), 8 tokens per device, 256-wide hidden and
intermediate sizes, N * 2 experts, top-2 routing, bfloat16, one block per dimension
(the library's default block sizes do not meet its own alignment checks at this size);
the gating logits are all ones (every token's top 2: experts 0 and 1). ``ROUTINGS=generated``
calls it with those and with ``semcheck.routings.generated``'s routings as logits. The
kernel computes its routing on the device: check with ``--interpret-values``. `tpu_inference.logger` (which imports vLLM) is replaced by
Python's `logging` (with vLLM's `warning_once`/`info_once`).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fetch  # noqa: E402

# The kernel's tuned-block-size table logs through vLLM's logger; the standard one does.
fetch.stub("tpu_inference.logger", init_logger=fetch.logger)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

moe = fetch.module("tpu-inference", "0.32.0", "tpu_inference.kernels.fused_moe.v1.kernel")

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

def run(g):
    return moe.fused_ep_moe(mesh, t, w1, w2, g, 2, ep_axis_name="model",
                            bt=8, btc=8, bf=256, bfc=256, bd1=256, bd1c=256, bd2=256, bd2c=256)


def logits(routing):
    """Router logits whose top 2 per token are ``routing``'s experts, in order (a
    ``semcheck.routings`` table ``[n, 8, 2]``: shard d's token t is row 8 d + t)."""
    r = jnp.asarray(routing).reshape(tokens, 2)
    rows = jnp.arange(tokens)[:, None]
    g = jnp.full((tokens, experts), -1.0, jnp.bfloat16)
    return jax.device_put(g.at[rows, r[:, :1]].set(2.0).at[rows, r[:, 1:]].set(1.0), ep)


if os.environ.get("ROUTINGS") == "generated":
    # The driver's routing, then semcheck's generated ones (all to one expert, local only,
    # remote only, empty experts, random draws): one kernel checked per routing. The
    # kernel computes its routing from the logits on the device: check with
    # --interpret-values.
    from semcheck.routings import generated, routing

    tables = [("driver", gating)]
    tables += [(name, logits(r)) for name, r in generated(devices=n, tokens=tokens // n, top_k=2, experts=experts)]
    for name, g in tables:
        with routing(name):
            print(run(g).shape)
else:
    print(run(gating).shape)
