"""semcheck_pallas: read Pallas TPU kernels as written, for the semcheck model checker.

* ``python -m semcheck_pallas export FILE --devices N`` runs a kernel script unmodified
  and prints its kernels as a JSON document (``SCHEMA.md``).
* :func:`check`, :func:`check_file` and :func:`assert_proved` check kernels from a
  pytest suite through the ``semcheck`` binary.

Importing this package does not import JAX: the device count must be fixed first.
"""

from .api import KernelVerdict, SemcheckError, assert_proved, check, check_file, export

__all__ = ["KernelVerdict", "SemcheckError", "assert_proved", "check", "check_file", "export"]
__version__ = "0.1.0"
