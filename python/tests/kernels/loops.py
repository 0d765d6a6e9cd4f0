"""fori_loop with static bounds and a while loop whose trip count depends on the device."""
import jax
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, send, recv):
    me = lax.axis_index("x")
    right = lax.rem(me + 1, N)

    def body(i, carry):
        d = remote(x_ref, o_ref, send, recv, (right,))
        d.start()
        d.wait()
        return carry + 1

    lax.fori_loop(0, 3, body, 0)

    def cond(c):
        return c[0] < me

    def step(c):
        d = remote(x_ref, o_ref, send, recv, (right,))
        d.start()
        d.wait_send()
        return (c[0] + 1, c[1])

    lax.while_loop(cond, step, (0, 7))


call(kernel, scratch=[pltpu.SemaphoreType.DMA] * 2)
