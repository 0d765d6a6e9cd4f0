"""``python -m semcheck ARGS``: runs the ``semcheck`` binary installed with this package,
with this interpreter offered as the one to read kernels with."""

from __future__ import annotations

import os
import subprocess
import sys

from ._binary import BinaryNotFound, find_binary, host_environment


def main() -> int:
    try:
        binary = find_binary()
    except BinaryNotFound as e:
        print(f"semcheck: error: {e}", file=sys.stderr)
        return 2
    env = host_environment()
    if sys.platform == "win32":
        return subprocess.run([binary, *sys.argv[1:]], env=env).returncode
    os.execve(binary, [binary, *sys.argv[1:]], env)
    return 2  # not reached


if __name__ == "__main__":
    sys.exit(main())
