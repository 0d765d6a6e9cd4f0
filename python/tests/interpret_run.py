"""Runs one kernel script under JAX's own TPU interpret mode with its dynamic race
detector (vector clocks), on N CPU devices: ``python interpret_run.py N MODE FILE``.
Prints ``SEMCHECK-RESULT {"races": bool, "error": str | null}`` last (the detector
prints what it finds before)."""

import json
import os
import runpy
import sys

devices, mode, path = int(sys.argv[1]), sys.argv[2], os.path.abspath(sys.argv[3])
os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
os.environ["JAX_PLATFORMS"] = "cpu"

from jax.experimental.pallas import tpu as pltpu  # noqa: E402
from jax._src.pallas.mosaic.interpret import interpret_pallas_call as interpreter  # noqa: E402

from semcheck.frontend import jaxcompat  # noqa: E402

sys.path.insert(0, os.path.dirname(path))
sys.argv = [path]
error = None
try:
    with pltpu.force_tpu_interpret_mode(jaxcompat.interpret_params(detect_races=True, dma_execution_mode=mode)):
        runpy.run_path(path, run_name="__main__")
except Exception as e:  # noqa: BLE001 - reported: JAX's interpreter cannot run every kernel
    error = f"{type(e).__name__}: {str(e)[-300:]}"
races = bool(interpreter.races is not None and interpreter.races.races_found)
print("SEMCHECK-RESULT " + json.dumps({"races": races, "error": error}))
