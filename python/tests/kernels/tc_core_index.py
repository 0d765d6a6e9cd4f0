"""Seed 001's exchange between a chip's two TensorCores with the rendezvous signalled by
`core_index=` instead of `device_id={'tc': ...}`: the same kernel. ``CORE=own`` signals
the core itself: the rendezvous no longer holds the other core back, and its copy can
land before this core entered.

Written to run under every JAX semcheck reads (the seed uses jax 0.10's keywords): the
output type is passed positionally, and the scratch under the keyword this JAX's
`pl.kernel` takes (`scratch_types` from 0.10, `scratch_shapes` before)."""

import inspect
import os

import jax
from jax import numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

# The mesh of a chip's TensorCores: `pltpu.TensorCoreMesh` from jax 0.11 (0.12.1 removed the
# factory `pltpu.create_tensorcore_mesh`, the only way before 0.11).
_tensorcore_mesh = getattr(pltpu, "TensorCoreMesh", None) or pltpu.create_tensorcore_mesh

CORE = os.environ.get("CORE", "other")


def exchange_kernel(x_hbm, o_hbm, send_vmem, recv_vmem, sems):
    core = jax.lax.axis_index("tc")
    pltpu.async_copy(x_hbm.at[core], send_vmem, sems.at[0]).wait()
    ready = pltpu.get_barrier_semaphore()
    pl.semaphore_signal(ready, 1, core_index=1 - core if CORE == "other" else core)
    pl.semaphore_wait(ready, 1)
    transfer = pltpu.make_async_remote_copy(send_vmem, recv_vmem, sems.at[1], sems.at[2], device_id={"tc": 1 - core})
    transfer.start()
    transfer.wait_send()
    transfer.wait_recv()
    pltpu.async_copy(recv_vmem, o_hbm.at[core], sems.at[3]).wait()


x = jnp.zeros((2, 8, 128), jnp.float32)
SCRATCH = "scratch_types" if "scratch_types" in inspect.signature(pl.kernel).parameters else "scratch_shapes"
exchange = pl.kernel(
    exchange_kernel,
    jax.ShapeDtypeStruct(x.shape, x.dtype),
    mesh=_tensorcore_mesh(axis_name="tc", num_cores=2),
    **{SCRATCH: (pltpu.VMEM((8, 128), x.dtype), pltpu.VMEM((8, 128), x.dtype), pltpu.SemaphoreType.DMA((4,)))},
    compiler_params=pltpu.CompilerParams(collective_id=1),
)
jax.jit(exchange)(x)
