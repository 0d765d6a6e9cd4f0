"""semcheck: proves the semaphore and remote-DMA protocols of Pallas TPU kernels, or shows
the shortest schedule that breaks them.

* The ``semcheck`` command (the binary this package carries): ``semcheck check kernel.py
  --devices 2-4``; ``python -m semcheck`` runs the same binary.
* A pytest marker: a test marked ``@pytest.mark.semcheck(devices=[2, 3])`` is checked
  instead of run, one test per mesh size (:mod:`semcheck.pytest_plugin`).
* :func:`check`, :func:`check_file` and :func:`assert_proved`, for checking kernels from
  Python code (:mod:`semcheck.api`); :func:`is_exporting`, true where semcheck runs the
  code to capture its kernels (their outputs are placeholders there).
* :mod:`semcheck.frontend`: the front end that reads kernels through JAX's tracer.

Importing this package does not import JAX: the device count must be fixed first.
"""

from .api import (KernelVerdict, SemcheckError, SemcheckPartialCaptureWarning, SemcheckVacuityWarning,
                  SemcheckWarning, assert_proved, check, check_file, export, is_exporting)

__all__ = ["KernelVerdict", "SemcheckError", "SemcheckPartialCaptureWarning", "SemcheckVacuityWarning",
           "SemcheckWarning", "assert_proved", "check", "check_file", "export", "is_exporting"]
__version__ = "0.1.0"
