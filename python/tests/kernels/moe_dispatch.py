"""A miniature expert-parallel MoE dispatch: the routing comes from an input array and
decides every copy's device, slot, kind and the count each device waits for.

Every device holds T tokens (rows of ``x``) and the whole routing table ``route[N, T, K]``
(each token's top-k expert ids: an integer input the script passes, in VMEM). Expert
``e`` lives on device ``e // EPD``. Each device sends every (token, choice) pair to its
expert's device, into slot ``(me, t, j)`` of its receive buffer: a local copy when the
expert is its own, a remote copy otherwise. Then it waits for what it receives, counted
from the table: the pairs of other devices whose expert lives here.

``COUNT=tokens`` counts the *tokens* routed here instead, as if a token reached a device
once (a token whose two experts share a device is counted once): whether that is wrong
depends on the routing. ``ROUTING=spread`` (each token's experts on two different
devices) is proved either way; ``ROUTING=clash`` (token 0 of device 1 picks experts 0
and 1, both on device 0) leaves the second row's bytes unwaited with ``COUNT=tokens``.
``ROUTING=generated`` calls the kernel with ``spread`` and every routing of
:func:`semcheck.routings.generated` (all to one expert, local only, remote only, empty
experts, random draws): one command checks them all. ``ROUTING=every`` passes every
routing (each token's K distinct experts in every order; for ``TOKENS=1 TOPK=1`` at
N = 2, 16 of them). ``FETCH=waited``: the table is in HBM and copied into VMEM scratch
before it is read (read with the copied values); ``FETCH=late``: it is read before the
copy is waited for, a race on the scratch.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, P, remote

# Tokens per device, experts per token, experts per device.
T, K, EPD = int(os.environ.get("TOKENS", 2)), int(os.environ.get("TOPK", 2)), 2
E = EPD * N
COUNT = os.environ.get("COUNT", "pairs")
ROUTING = os.environ.get("ROUTING", "spread")
FETCH = os.environ.get("FETCH", "")


def kernel(route_ref, x_ref, o_ref, route_vmem, send, recv, local):
    me = lax.axis_index("x")
    table = route_ref
    if FETCH:  # the table is in HBM: copied into VMEM scratch first
        fetch = pltpu.make_async_copy(route_ref, route_vmem, local)
        fetch.start()
        if FETCH == "waited":
            fetch.wait()
        table = route_vmem
    dev = lax.div(table[...], EPD)  # the device of each (device, token, choice)
    mine = lax.div(table[me], EPD)  # this device's choices
    if FETCH == "late":
        fetch.wait()
    for t in range(T):
        for j in range(K):
            d = mine[t, j]
            slot = (me * T + t) * K + j

            @pl.when(d == me)
            def _():
                c = pltpu.make_async_copy(x_ref.at[pl.ds(t, 1)], o_ref.at[pl.ds(slot, 1)], local)
                c.start()
                c.wait()

            @pl.when(d != me)
            def _():
                c = remote(x_ref.at[pl.ds(t, 1)], o_ref.at[pl.ds(slot, 1)], send, recv, (d,))
                c.start()
                c.wait_send()

    src = lax.broadcasted_iota(jnp.int32, (N, T, K), 0)
    arriving = (dev == me) & (src != me)  # pairs of other devices routed here
    if COUNT == "pairs":
        count = jnp.sum(arriving.astype(jnp.int32))
    else:
        count = jnp.sum(jnp.any(arriving, axis=2).astype(jnp.int32))
    incoming = remote(o_ref.at[pl.ds(0, count)], o_ref.at[pl.ds(0, count)], send, recv, (me,))
    incoming.wait_recv()  # what lands here


def spread():
    """Token t of device d: expert t % EPD of its own device and of the next one."""
    r = np.zeros((N, T, K), np.int32)
    for d in range(N):
        for t in range(T):
            r[d, t] = [d * EPD + t % EPD, ((d + 1) % N) * EPD + t % EPD][:K]
    return r


def clash():
    """spread, except that token 0 of device 1 picks experts 0 and 1, both on device 0."""
    r = spread()
    r[1, 0] = [0, 1][:K]
    return r


def main():
    mesh = jax.make_mesh((N,), ("x",))
    f = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((N * T * K, 128), jnp.float32),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY if FETCH else pltpu.VMEM), pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec(memory_space=pl.ANY),
        scratch_shapes=[pltpu.VMEM((N, T, K), jnp.int32)] + [pltpu.SemaphoreType.DMA] * 3,
    )
    run = jax.jit(jax.shard_map(f, mesh=mesh, in_specs=(P(), P("x")), out_specs=P("x"), check_vma=False))
    x = jax.device_put(jnp.zeros((N * T, 128), jnp.float32), jax.sharding.NamedSharding(mesh, P("x")))
    if ROUTING == "generated":
        from semcheck.routings import generated

        routings = [("spread", spread())] + list(generated(devices=N, tokens=T, top_k=K, experts=E))
    elif ROUTING == "every":
        from semcheck.routings import every

        routings = list(every(devices=N, tokens=T, top_k=K, experts=E))
    else:
        routings = [(ROUTING, {"spread": spread, "clash": clash}[ROUTING]())]
    try:
        from semcheck.routings import routing
    except ImportError:  # run without semcheck: the routings are not named
        import contextlib

        routing = lambda _: contextlib.nullcontext()  # noqa: E731
    for name, r in routings:
        with routing(name):
            run(jnp.asarray(r), x)


main()
