"""The installed wheel, as a user has it: run by `.ci/wheel` with the interpreter of a fresh
virtual environment that had a JAX before `semcheck` was installed into it, with no Rust
toolchain on PATH, from a folder outside the checkout.

Environment: ``SEMCHECK_EXPECT_JAX`` (the JAX the environment had before the wheel),
``SEMCHECK_REPO`` (the checkout, for the seed kernel files and the example project).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.environ["SEMCHECK_REPO"]
JAX = os.environ["SEMCHECK_EXPECT_JAX"]
BIN = os.path.join(os.path.dirname(sys.executable), "semcheck")


def run(*args: str, cwd: str | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMCHECK_") or k == "SEMCHECK_CACHE_DIR"}
    return subprocess.run(list(args), capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)


def test_the_environment_is_a_users():
    assert shutil.which("cargo") is None, "cargo is on PATH: this test must run without a Rust toolchain"
    assert not os.path.realpath(os.getcwd()).startswith(os.path.realpath(REPO)), "run outside the checkout"
    # Installing semcheck kept the JAX that was there.
    assert importlib.metadata.version("jax") == JAX
    assert os.path.isfile(BIN) and os.access(BIN, os.X_OK)


def test_a_seed_kernel_file_is_proved_with_the_environments_jax(tmp_path):
    proc = run(BIN, "check", os.path.join(REPO, "protocols", "pallas", "psum.py"), "--devices", "3", "--json",
               cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema_version"] == 1 and doc["verdict"] == "proved", doc
    # The installed binary carries the schema of the document it printed.
    schema = json.loads(run(BIN, "schema").stdout)
    assert schema["$id"] == "urn:semcheck:output:1" and set(schema["required"]) <= set(doc), schema["required"]
    case = doc["cases"][0]
    assert case["frontend"]["jax"] == JAX, case["frontend"]
    assert case["frontend"]["origin"] == "installed", case["frontend"]
    assert os.path.samefile(case["frontend"]["python"], sys.executable), case["frontend"]
    # No managed environment was made: the environment's own JAX read the kernel.
    cache = os.environ["SEMCHECK_CACHE_DIR"]
    assert not [d for d in os.listdir(cache) if d.startswith("python-")], os.listdir(cache)


def test_doctor_names_this_interpreter():
    proc = run(BIN, "doctor", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["chosen"]["origin"] == "installed", doc
    proc = run(sys.executable, "-m", "semcheck", "doctor")
    assert proc.returncode == 0 and f"jax {JAX}" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("workers", [None, "2"])
def test_the_marker_checks_a_users_project(tmp_path, workers):
    project = tmp_path / "project"
    shutil.copytree(os.path.join(REPO, "tests", "wheel", "project"), project)
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    if workers:
        pytest.importorskip("xdist")
        args += ["-n", workers]
    proc = run(*args, "--semcheck-html", "pages", cwd=str(project))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 failed, 2 passed" in out, out
    assert "kernels.py:22" in out, out
    # The failure drawn as a page, for CI to keep.
    page = project / "pages" / "test_kernels.py-test_shift_early-N2-shift_kernel.html"
    assert page.read_text().startswith("<!DOCTYPE html>"), os.listdir(project / "pages")


def test_the_ci_job_checks_a_folder_of_kernels_into_sarif(tmp_path):
    # docs/ci.md's job: `semcheck check kernels/*.py --format sarif` from the project's
    # root, the folder a package: its __init__.py and a module that runs a sibling's kernel
    # import relatively (run as `python -m kernels.ring` runs it), the sibling only defines it.
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    for name in ("ppermute.py", "psum--no-capacity.py"):
        shutil.copy(os.path.join(REPO, "protocols", "pallas", name), kernels / name)
    shutil.copy(os.path.join(REPO, "tests", "wheel", "project", "kernels.py"), kernels / "shift.py")
    (kernels / "__init__.py").write_text("from .shift import run\n")
    (kernels / "ring.py").write_text("from .shift import run\n\nrun()\n")
    files = sorted(f"kernels/{name}" for name in os.listdir(kernels))  # as the shell expands kernels/*.py
    proc = run(BIN, "check", *files, "--devices", "2", "--format", "sarif", cwd=str(tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    log = json.loads(proc.stdout)["runs"][0]
    [result] = log["results"]
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "kernels/psum--no-capacity.py", location
    assert result["ruleId"] == "race" and location["region"]["startLine"] > 0, result
    invocation = log["invocations"][0]
    assert invocation["executionSuccessful"] is True, invocation
    notes = invocation["toolExecutionNotifications"]
    assert [n["level"] for n in notes] == ["note", "note"], invocation  # __init__.py and shift.py call no kernel


def test_a_counterexample_shows_its_wrong_numbers_in_this_jax_s_interpreter(tmp_path):
    # `replay --interpret` steers the environment's own JAX's TPU interpreter (each
    # release's differences: semcheck.interpret._Interpreter) through a counterexample.
    kernel = tmp_path / "psum--no-capacity.py"
    shutil.copy(os.path.join(REPO, "protocols", "pallas", "psum--no-capacity.py"), kernel)
    proc = run(BIN, "trace", str(kernel), "--devices", "2", "--format", "trace", cwd=str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    trace = tmp_path / "psum-nc.trace"
    trace.write_text(proc.stdout)
    proc = run(BIN, "replay", "--interpret", str(trace), cwd=str(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "  counterexample: all 31 events steered" in out, out
    # d0 summed memory nothing had written yet (NaN in the interpreter), not the sums.
    assert "  d0 output 0 (o_ref): 1024 of 1024 values differ from the lock-step run" in out, out
    assert "    [0, 0]: lock step 1.88" in out and "counterexample nan" in out, out
    detector = out.split("JAX's race detector, in the counterexample's run")[1]
    assert "psum--no-capacity.py:86" in detector and "psum--no-capacity.py:95" in detector, out
