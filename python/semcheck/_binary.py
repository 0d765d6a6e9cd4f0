"""Finding the ``semcheck`` binary, and the environment it is started with.

The binary is the product; this package is the glue. A wheel installs the binary into
the scripts directory of the environment it is installed in, so the binary of *this*
interpreter's installation is found first (as ruff's and uv's Python shims do).
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig

#: The directory holding the ``semcheck`` package (put first on the front end's path).
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_EXE = "semcheck" + (".exe" if sys.platform == "win32" else "")


class BinaryNotFound(RuntimeError):
    """No ``semcheck`` binary could be found."""


def _scripts_dirs() -> list[str]:
    dirs = [sysconfig.get_path("scripts")]
    user_scheme = {"posix": "posix_user", "nt": "nt_user"}.get(os.name)
    if user_scheme:
        try:
            dirs.append(sysconfig.get_path("scripts", scheme=user_scheme))
        except KeyError:
            pass
    return [d for d in dirs if d]


def find_binary() -> str:
    """``SEMCHECK_BIN``, else the binary installed with this package, else ``semcheck``
    on ``PATH``."""
    explicit = os.environ.get("SEMCHECK_BIN")
    if explicit:
        if not os.path.isfile(explicit):
            raise BinaryNotFound(f"SEMCHECK_BIN={explicit} is not a file")
        return explicit
    for d in _scripts_dirs():
        candidate = os.path.join(d, _EXE)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(_EXE)
    if found:
        return found
    raise BinaryNotFound("the semcheck binary was not found: install the `semcheck` package "
                         "(`pip install semcheck`, which carries it), or set SEMCHECK_BIN to a built binary")


def host_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment to start the binary with: this interpreter is named as the one to
    read kernels with (``SEMCHECK_HOST_PYTHON``), when it has a supported JAX."""
    out = dict(os.environ if env is None else env)
    out.setdefault("SEMCHECK_HOST_PYTHON", sys.executable)
    return out
