"""pltpu.emit_pipeline (JAX asks for the TPU's sizes: traced with SEMCHECK_TPU=v6e), then a
copy into the right neighbour's scratch buffer: the pipeline's copies and the remote copy
touch different buffers."""
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from _harness import N, call, remote


def kernel(x_ref, o_ref, buf, send, recv):
    def double(x_blk, o_blk):
        o_blk[...] = x_blk[...] * 2.0

    spec = pl.BlockSpec((8, 128), lambda i: (0, i))
    pltpu.emit_pipeline(double, grid=(2,), in_specs=[spec], out_specs=[spec])(x_ref, o_ref)
    d = remote(x_ref, buf, send, recv, (lax.rem(lax.axis_index("x") + 1, N),))
    d.start()
    d.wait()


call(kernel, scratch=[pltpu.VMEM((8, 256), __import__("jax").numpy.float32), pltpu.SemaphoreType.DMA,
                      pltpu.SemaphoreType.DMA], shape=(8, 256))
