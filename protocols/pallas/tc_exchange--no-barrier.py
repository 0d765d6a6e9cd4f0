"""tc_exchange mutant `no-barrier`: drop the rendezvous on the barrier semaphore before the remote DMA.
JAX refuses collective_id without the barrier semaphore, and the entry barrier it would
otherwise insert is skipped with skip_device_barrier=True, so nothing orders the DMA
after the other core's entry.

The seed file `tc_exchange.py` with this one change (semcheck's catalogue mutant
`tc_exchange --mutant no-barrier`, protocols/src/tc_exchange.rs).
"""

import jax
import numpy as np
from jax import numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

# The mesh of a chip's TensorCores: `pltpu.TensorCoreMesh` from jax 0.11 (0.12.1 removed the
# factory `pltpu.create_tensorcore_mesh`, the only way before 0.11).
_tensorcore_mesh = getattr(pltpu, "TensorCoreMesh", None) or pltpu.create_tensorcore_mesh


def exchange_kernel(x_hbm, o_hbm, send_vmem, recv_vmem, sems):
    core = jax.lax.axis_index('tc')
    pltpu.async_copy(x_hbm.at[core], send_vmem, sems.at[0]).wait()

    transfer = pltpu.make_async_remote_copy(send_vmem, recv_vmem, sems.at[1], sems.at[2], device_id={'tc': 1 - core}, device_id_type=pl.DeviceIdType.MESH)
    transfer.start()
    transfer.wait_send()
    transfer.wait_recv()
    pltpu.async_copy(recv_vmem, o_hbm.at[core], sems.at[3]).wait()


x = jnp.arange(2 * 8 * 128, dtype=jnp.float32).reshape(2, 8, 128)

exchange = pl.kernel(
    exchange_kernel,
    out_type=jax.ShapeDtypeStruct(x.shape, x.dtype),
    mesh=_tensorcore_mesh(axis_name="tc", num_cores=2),
    scratch_types=(
        pltpu.VMEM((8, 128), x.dtype),
        pltpu.VMEM((8, 128), x.dtype),
        pltpu.SemaphoreType.DMA((4,)),
    ),
    compiler_params=pltpu.CompilerParams(skip_device_barrier=True),
)

out = np.asarray(jax.jit(exchange)(x))
# "Output block 0 comes from TensorCore 1, block 1 from TensorCore 0."
print("exchange correct:", bool((out[0] == np.asarray(x[1])).all() and (out[1] == np.asarray(x[0])).all()))
