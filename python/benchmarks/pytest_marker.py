"""Benchmark of the pytest marker: one pytest run over a project of marked tests, with the
session's export server (the default) and with a process of its own per export
(``SEMCHECK_EXPORT=process``), side by side; prints a table.

    python python/benchmarks/pytest_marker.py [--sizes 2-8] [--runs 2]

Run with an interpreter that has a supported JAX and pytest (the managed environment's,
say), the ``semcheck`` binary on ``PATH`` or in ``SEMCHECK_BIN``. The project is
``tests/wheel/project`` (a ring shift, correct and reading early), copied into a temporary
folder, with its marked tests asked for every size of ``--sizes``: ``2 x len(sizes)``
items, half of them failing with a counterexample.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROJECT = os.path.join(REPO, "tests", "wheel", "project")


def _sizes(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def _run(project: str, mode: str) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": os.path.join(REPO, "python")}
    env.pop("SEMCHECK_EXPORT", None)
    if mode == "process":
        env["SEMCHECK_EXPORT"] = "process"
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "semcheck.pytest_plugin", "-p", "no:cacheprovider",
                           "-q"], cwd=project, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - start
    summary = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
    return seconds, summary.strip("= ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2-8", help="mesh sizes of every marked test (default 2-8)")
    parser.add_argument("--runs", type=int, default=2, help="pytest runs per mode (default 2)")
    args = parser.parse_args()
    sizes = _sizes(args.sizes)
    with tempfile.TemporaryDirectory(prefix="semcheck-bench-") as tmp:
        project = os.path.join(tmp, "project")
        shutil.copytree(PROJECT, project)
        with open(os.path.join(project, "test_kernels.py"), "w") as f:
            f.write(f"import pytest\nimport kernels\n\n\n@pytest.mark.semcheck(devices={sizes})\n"
                    f"def test_shift():\n    kernels.run()\n\n\n@pytest.mark.semcheck(devices={sizes})\n"
                    f"def test_shift_early():\n    kernels.run(early=True)\n")
        items = 2 * len(sizes)
        print(f"pytest over {items} marked items (a ring shift and its early read, N = {args.sizes}), "
              f"{args.runs} run(s) per mode")
        print("| exports | wall s (each run) | s per item | pytest's summary |")
        print("|---|---|---|---|")
        for mode in ("session", "process"):
            runs = [_run(project, mode) for _ in range(args.runs)]
            walls = ", ".join(f"{s:.2f}" for s, _ in runs)
            best = min(s for s, _ in runs)
            name = "one server per session" if mode == "session" else "a process per export"
            print(f"| {name} | {walls} | {best / items:.2f} | {runs[-1][1]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
