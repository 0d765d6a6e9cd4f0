"""Producer/consumer through shared HBM (seed 001, "explicit producer-consumer
synchronisation"): TensorCore 0 computes 2x into o[0] and signals a REGULAR semaphore on
TensorCore 1, which waits, reads o[0], adds 1 and writes o[1].

The kernel body is the seed's, as written. The seed shows only the body and the scratch
types; the rest (the kernel's signature, the `pl.kernel` call over the chip's two
TensorCores, the input and a host-side check of the result) is what a runnable script
needs.
"""

import jax
import numpy as np
from jax import numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

# The mesh of a chip's TensorCores: `pltpu.TensorCoreMesh` from jax 0.11 (0.12.1 removed the
# factory `pltpu.create_tensorcore_mesh`, the only way before 0.11).
_tensorcore_mesh = getattr(pltpu, "TensorCoreMesh", None) or pltpu.create_tensorcore_mesh


def producer_consumer_kernel(x_hbm, o_hbm, vmem, sem, ready):
    core = jax.lax.axis_index('tc')

    @pl.when(core == 0)
    def _() -> None:
        pltpu.async_copy(x_hbm, vmem, sem).wait()
        vmem[...] = vmem[...] * 2.0
        pltpu.async_copy(vmem, o_hbm.at[0], sem).wait()
        pl.semaphore_signal(ready, 1, device_id={'tc': 1})

    @pl.when(core == 1)
    def _() -> None:
        pl.semaphore_wait(ready, 1)
        pltpu.async_copy(o_hbm.at[0], vmem, sem).wait()
        vmem[...] = vmem[...] + 1.0
        pltpu.async_copy(vmem, o_hbm.at[1], sem).wait()


x = jnp.arange(8 * 128, dtype=jnp.float32).reshape(8, 128)

producer_consumer = pl.kernel(
    producer_consumer_kernel,
    out_type=jax.ShapeDtypeStruct((2, 8, 128), x.dtype),
    mesh=_tensorcore_mesh(axis_name="tc", num_cores=2),
    scratch_types=(pltpu.VMEM((8, 128), x.dtype), pltpu.SemaphoreType.DMA, pltpu.SemaphoreType.REGULAR),
)

out = np.asarray(jax.jit(producer_consumer)(x))
print("consumer saw the producer's value:", bool((out[1] == 2.0 * np.asarray(x) + 1.0).all()))
