"""semcheck's front end: reads Pallas TPU kernels as written, through JAX's own tracer.

``python -m semcheck.frontend export FILE --devices N`` runs a kernel script unmodified
and prints its kernels as a JSON document (``python/SCHEMA.md``), which the ``semcheck``
binary checks. The binary carries this package and runs it in the interpreter it chose
(``semcheck doctor`` says which).

Importing this package does not import JAX: the device count must be fixed first.
"""
