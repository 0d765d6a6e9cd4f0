"""Blocks Pallas pipelines around a grid (G, 2): `x` read in (8, 128) blocks indexed by
the first grid dimension (copied in when it changes), `o` written in blocks of the same
index (copied out when it is about to change). Each step sends the device's block to
the right neighbour's `buf`; at k = 0 the output block takes what arrived, at k = 1 it
adds it. The neighbour sends again only once the device has read `buf` and handed it
back (`cap`). ``HANDSHAKE=none`` drops the hand-back: the next step's copy lands in
`buf` while it is read."""

import os

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, P, remote

G = 2
HANDSHAKE = os.environ.get("HANDSHAKE", "cap")


def kernel(x_ref, o_ref, buf, cap, send, recv):
    i, k = pl.program_id(0), pl.program_id(1)
    step = i * 2 + k
    me = lax.axis_index("x")
    right, left = lax.rem(me + 1, N), lax.rem(me + N - 1, N)

    @pl.when(jnp.logical_and(step > 0, HANDSHAKE == "cap"))
    def _():
        pl.semaphore_wait(cap, 1)

    d = remote(x_ref, buf, send, recv, (right,))
    d.start()
    d.wait()

    @pl.when(k == 0)
    def _():
        o_ref[...] = buf[...]

    @pl.when(k == 1)
    def _():
        o_ref[...] += buf[...]

    @pl.when(jnp.logical_and(step < 2 * G - 1, HANDSHAKE == "cap"))
    def _():
        pl.semaphore_signal(cap, 1, device_id=(left,))


spec = pl.BlockSpec((8, 128), lambda i, k: (i, 0))
f = pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((8 * G, 128), jnp.float32),
    grid=(G, 2),
    in_specs=[spec],
    out_specs=spec,
    scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.REGULAR,
                    pltpu.SemaphoreType.DMA, pltpu.SemaphoreType.DMA],
)
mesh = jax.make_mesh((N,), ("x",))
x = jax.device_put(jnp.zeros((8 * G * N, 128), jnp.float32), jax.sharding.NamedSharding(mesh, P("x")))
jax.jit(jax.shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False))(x)
