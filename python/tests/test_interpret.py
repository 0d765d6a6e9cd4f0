"""semcheck against JAX's own TPU interpret mode: every local kernel is run on CPU devices
by JAX's interpreter with its dynamic race detector (vector clocks over the one schedule
it happens to run). A race JAX finds is a race in some execution, so semcheck, which
explores every execution, must not prove that kernel. (The converse is not asked: one
run of the interpreter sees one schedule.) Opt-in, as it takes several minutes:
``SEMCHECK_INTERPRET=1 SEMCHECK_BIN=target/release/semcheck python -m pytest tests/test_interpret.py``
with the front end's interpreter."""

from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import sys

import pytest

from conftest import HERE, kernel_files, seed_files

#: (N, DMA execution mode of the interpreter): DMAs run when waited for, or at once.
RUNS = [(3, "on_wait"), (2, "eager")]


#: Seconds one interpreter run may take: a kernel that deadlocks in the schedule the
#: interpreter runs (a racy wait, say) never ends there.
RUN_SECONDS = 120


def interpret(path: str, devices: int, mode: str) -> dict:
    try:
        proc = subprocess.run([sys.executable, os.path.join(HERE, "interpret_run.py"), str(devices), mode, path],
                              capture_output=True, text=True, timeout=RUN_SECONDS)
    except subprocess.TimeoutExpired:
        return {"races": False, "error": f"JAX's interpreter did not finish in {RUN_SECONDS} s"}
    marks = [line for line in proc.stdout.splitlines() if line.startswith("SEMCHECK-RESULT ")]
    if not marks:
        return {"races": False, "error": f"no result (exit {proc.returncode}): {proc.stderr[-300:]}"}
    return json.loads(marks[-1][len("SEMCHECK-RESULT "):])


def semcheck_verdicts(path: str, devices: int) -> list[str]:
    binary = os.environ.get("SEMCHECK_BIN") or "semcheck"
    proc = subprocess.run([binary, "check", path, "--devices", str(devices), "--json"], capture_output=True,
                          text=True, timeout=600)
    out, verdicts = proc.stdout, []
    decoder, i = json.JSONDecoder(), 0
    while out[i:].strip():
        i += len(out[i:]) - len(out[i:].lstrip())
        value, n = decoder.raw_decode(out[i:])
        verdicts.append(value.get("verdict"))
        i += n
    return verdicts or [f"exit {proc.returncode}: {proc.stderr[-300:]}"]


@pytest.mark.skipif(not (os.environ.get("SEMCHECK_BIN") and os.environ.get("SEMCHECK_INTERPRET")),
                    reason="opt-in, minutes long: SEMCHECK_INTERPRET=1 and the semcheck binary (SEMCHECK_BIN)")
@pytest.mark.parametrize("devices,mode", RUNS)
def test_no_kernel_jax_finds_a_race_in_is_proved(devices, mode):
    files = [f for f in seed_files() + kernel_files() if "unsupported" not in f]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = dict(zip(files, pool.map(lambda f: interpret(f, devices, mode), files)))
    ran = [f for f, r in runs.items() if r["error"] is None]
    racy = [f for f in ran if runs[f]["races"]]
    print(f"N = {devices}, {mode}: {len(files)} kernels, {len(ran)} run by JAX's interpreter, {len(racy)} with a race")
    # The interpreter runs most of them (not the TensorCore meshes, nor kernels that ask
    # for a TPU's sizes), and its detector finds something: the comparison is not empty.
    assert len(ran) >= 40, {f: r["error"] for f, r in runs.items() if r["error"]}
    assert racy, "JAX's race detector found no race at all"
    for f in racy:
        verdicts = semcheck_verdicts(f, devices)
        assert "proved" not in verdicts and all(v == "violation" for v in verdicts), (f, verdicts)
