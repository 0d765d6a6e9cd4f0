"""The shared set-up of the test kernels (``../_harness.py``), for the scripts of this
folder, which import ``_harness`` from their own."""

import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "_kernels_harness", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_harness.py"))
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)

N, P, call, remote = _module.N, _module.P, _module.call, _module.remote
