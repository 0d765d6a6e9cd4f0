"""The JAX releases semcheck's front end reads, and how a version string is read against
them; no JAX is imported (the pytest plugin's header asks before anything traces).
:mod:`semcheck.frontend.jaxcompat` holds what differs between those releases."""

from __future__ import annotations

import re

#: The JAX releases the front end reads: from the first, (major, minor, patch), to every
#: release of the last minor line, (major, minor). (jax 0.8.0 has neither the TPU sizes
#: ``SEMCHECK_TPU`` pretends with nor ``pl.kernel``; 0.8.1 has both.)
SUPPORTED: tuple[tuple[int, int, int], tuple[int, int]] = ((0, 8, 1), (0, 12))


def release(version: str) -> tuple[int, ...]:
    """The release numbers of a version string: ``0.9.0.1`` -> ``(0, 9, 0, 1)``,
    ``0.10.2.dev20260101`` -> ``(0, 10, 2)``; ``(-1,)`` for no version at all."""
    m = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(x) for x in m.group(0).split(".")) if m else (-1,)


def minor(version: str) -> tuple[int, int]:
    """``(major, minor)`` of a version string (``0.10.2.dev20260101`` -> ``(0, 10)``)."""
    m = re.match(r"(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else (-1, -1)


def supports(version: str) -> bool:
    """Whether the front end reads kernels under JAX ``version``."""
    return (*release(version)[:3], 0, 0)[:3] >= SUPPORTED[0] and minor(version) <= SUPPORTED[1]


def supported_range() -> str:
    """``0.8.1 to 0.12.x``."""
    (a, b, c), (d, e) = SUPPORTED
    return f"{a}.{b}.{c} to {d}.{e}.x"


def pip_requirement() -> str:
    """``jax>=0.8.1,<0.13``: what pip installs to get a supported JAX."""
    (a, b, c), (d, e) = SUPPORTED
    return f"jax>={a}.{b}.{c},<{d}.{e + 1}"
