"""Constructs outside the supported set are errors naming the construct and its line;
kernels JAX refuses to build are refused with JAX's reason."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import KERNELS, LOCAL_COPY_SEMS_FROM, needs_jax
from helpers import line_of

UNSUPPORTED = os.path.join(KERNELS, "unsupported")

CASES = [
    # file, construct, a text on the reported line
    # A semaphore's value is refused where it steers the kernel (here: an amount).
    ("semaphore_read", "semaphore_read", "pl.semaphore_wait(sem, n)"),
    ("dma_add", "dma_start(add=True)", "d.start(add=True)"),
    ("data_cond", "run-time data", "@pl.when(x_ref[0, 0] > 0)"),
    ("prefetch_unknown", "run-time data", "d.start()"),
    ("prefetch_from_kernel", "run-time data", "d.start()"),
    ("smem_copied", "run-time data", "d.start()"),
    ("smem_large", "SMEM array size", "# too many elements"),
    ("carry_swap", "loop carry", "# a swap"),
    ("bitcast", "bitcast ref transform", "d.start()"),
    ("core_index", "semaphore_signal(core_index=...)", "core_index=0"),
    ("pipelined", "BlockSpec pipelining", "call(kernel"),
    ("pipelined_remote", "remote copy into a pipelined block", "d.start()"),
    ("pipelined_alias", "BlockSpec pipelining", "jax.jit(jax.shard_map(f"),
]


def reported_at(loc: dict, path: str, line: int) -> bool:
    """The location, or one of the user frames that called it."""
    return any(f["file"] == path and f["line"] == line for f in [loc, *loc.get("stack", [])])


@pytest.mark.parametrize("name,construct,text", CASES, ids=[c[0] for c in CASES])
def test_unsupported_construct_is_named_with_its_line(exports, name, construct, text):
    path = os.path.join(UNSUPPORTED, name + ".py")
    doc = exports.get(path, 2)
    assert doc["errors"] == []
    # The one kernel the case is about (another may compute its inputs).
    (k,) = [k for k in doc["kernels"] if k["status"] != "ok" or k["communicates"]]
    assert k["status"] == "unsupported"
    (err,) = k["errors"]
    assert err["construct"] == construct
    assert reported_at(err["loc"], path, line_of(path, text))


@needs_jax(LOCAL_COPY_SEMS_FROM, "make_async_copy(src_sem=...) and make_async_copy(src, dst) are jax 0.12's")
@pytest.mark.parametrize("sems,construct,text", [
    ("src", "make_async_copy(src_sem=...)", "d.start()  # with a source semaphore"),
    ("none", "make_async_copy(sem=None)", "d.start()  # without a semaphore"),
])
def test_a_local_copy_signalling_other_than_one_semaphore_is_named_once_at_its_start(exports, sems, construct, text):
    path = os.path.join(UNSUPPORTED, "local_sems.py")
    (k,) = exports.get(path, 2, {"SEMS": sems})["kernels"]
    assert k["status"] == "unsupported"
    # Its waits (`.wait_read()`'s descriptor swapped by JAX) are not reported again.
    (err,) = k["errors"]
    assert err["construct"] == construct and "a local copy" in err["message"]
    assert reported_at(err["loc"], path, line_of(path, text))


def test_scalar_prefetch_values_that_cannot_be_computed_are_said_to_be_unknown(exports):
    (k,) = exports.get(os.path.join(UNSUPPORTED, "prefetch_unknown.py"), 2)["kernels"]
    assert k["prefetch"]["error"].endswith("failed (JaxRuntimeError: ValueError: no such table)")
    # Values computed by another kernel would come from the zeros that stand in for it.
    doc = exports.get(os.path.join(UNSUPPORTED, "prefetch_from_kernel.py"), 2)
    (k,) = [k for k in doc["kernels"] if k["name"] == "kernel"]
    assert k["prefetch"]["error"].startswith("they are computed from the output of another kernel")


def test_every_unsupported_construct_is_named_and_its_consequences_are_not(exports):
    path = os.path.join(UNSUPPORTED, "several.py")
    (k,) = exports.get(path, 2)["kernels"]
    assert k["status"] == "unsupported"
    # In kernel order; the uses of the loop's carry and of its result are not reported
    # a second time.
    assert [(e["construct"], e["loc"]["line"]) for e in k["errors"]] == [
        ("run-time data", line_of(path, "# trip count")),
        ("dma_start(add=True)", line_of(path, "d.start(add=True)")),
        ("run-time data", line_of(path, "@pl.when(x_ref[0, 0] > 0)")),
        # The branch under a condition that cannot be translated is still read.
        ("semaphore_read", line_of(path, "pl.semaphore_read(sem)")),
    ]


def test_a_scope_with_an_unsupported_allocation_is_still_read(exports):
    path = os.path.join(UNSUPPORTED, "scoped_barrier.py")
    (k,) = exports.get(path, 2)["kernels"]
    assert [(e["construct"], e["loc"]["line"]) for e in k["errors"]] == [
        ("scoped barrier semaphore", line_of(path, "# barrier allocation")),
        ("semaphore_read", line_of(path, "# inside the scope")),
    ]


def test_pipelined_blocks_are_named_and_the_body_still_read(exports):
    path = os.path.join(UNSUPPORTED, "pipelined_two.py")
    (k,) = exports.get(path, 2)["kernels"]
    # The input's blocks do not divide its array (the output is whole, in VMEM); the store
    # that reads it is not reported again, the semaphore_read after it is.
    assert [e["construct"] for e in k["errors"]] == ["BlockSpec pipelining", "semaphore_read"]
    assert "`x_ref`" in k["errors"][0]["message"]
    assert k["errors"][1]["loc"]["line"] == line_of(path, "pl.semaphore_read(sem)")


@pytest.mark.parametrize("name,reason", [
    ("barrier_no_cid", "collective_id has to be specified when using a custom barrier"),
    ("cid_no_barrier", "collective_id has to be unspecified or None when not using a custom barrier"),
])
def test_kernels_jax_refuses_are_refused_with_its_reason(exports, name, reason):
    (k,) = exports.get(os.path.join(UNSUPPORTED, name + ".py"), 2)["kernels"]
    assert k["status"] == "refused"
    assert k["refusal"]["reason"] == reason
    # Mosaic's own lowering agrees, word for word (jax 0.11 and later add a parenthesis to
    # the first: "(cannot auto-allocate without lowering context)").
    mosaic = k["entry"]["mosaic"]
    assert mosaic["lowered"] is False
    assert mosaic["error"] == f"ValueError: {reason}" or mosaic["error"].startswith(f"ValueError: {reason} (")


@pytest.mark.parametrize("variant,reason,text", [
    ("vmem", "Cannot store scalars to VMEM", "o_ref[0, 0] = jnp.float32(1)"),
    ("smem", "Can only store scalars to SMEM", "t_ref[...] = jnp.ones(t_ref.shape, jnp.int32)"),
])
def test_stores_mosaic_cannot_lower_are_refused_at_their_line(exports, variant, reason, text):
    # Mosaic's own rules for stores, word for word; the refusal names the statement.
    path = os.path.join(UNSUPPORTED, "scalar_stores.py")
    (k,) = exports.get(path, 2, {"SCALAR": variant})["kernels"]
    assert k["status"] == "refused"
    assert k["refusal"]["reason"] == reason
    assert k["refusal"]["loc"]["line"] == line_of(path, text)


def test_a_load_of_hbm_is_the_one_mosaic_refuses(exports):
    # The exporter reads it; the checker's compile refuses it (for DSL kernels too), with
    # the words Mosaic's lowering uses for it.
    (k,) = exports.get(os.path.join(UNSUPPORTED, "hbm_load.py"), 2)["kernels"]
    assert k["status"] == "ok"
    assert k["entry"]["mosaic"]["error"].startswith("ValueError: Loads are only allowed on VMEM and SMEM references.")


def test_script_errors_name_the_user_frame(exports):
    path = os.path.join(UNSUPPORTED, "script_error.py")
    doc = exports.get(path, 2)
    (err,) = doc["errors"]
    assert err["construct"] == "script error"
    assert err["message"] == "ValueError: the user's own bug"
    assert (err["loc"]["file"], err["loc"]["line"]) == (path, 4)
    assert "Traceback" in err["traceback"]


def test_a_keyboard_interrupt_the_script_raises_is_its_error_not_an_interrupt(exports, tmp_path):
    # Only a SIGINT delivered to the exporting process ends the export; the script's own
    # `raise KeyboardInterrupt` is its error, at its line, like any other exception.
    script = tmp_path / "interrupts_itself.py"
    script.write_text("import jax\n\nraise KeyboardInterrupt('from the script')\n")
    (err,) = exports.get(str(script), 2)["errors"]
    assert err["construct"] == "script error"
    assert err["message"] == "KeyboardInterrupt: from the script"
    assert (err["loc"]["file"], err["loc"]["line"]) == (str(script), 3)


def test_an_interrupt_delivered_to_the_export_ends_it(tmp_path):
    # A real SIGINT (the terminal's Ctrl-C) ends the export, however the script is written.
    mark = tmp_path / "running"
    script = tmp_path / "waits.py"
    script.write_text(f"import time\nopen({str(mark)!r}, 'w').close()\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-m", "semcheck.frontend", "export", "--devices", "2", "--no-lower",
                             "--out", str(tmp_path / "doc.json"), str(script)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))})
    try:
        deadline = time.monotonic() + 60
        while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mark.exists(), "the script did not start"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode != 0 and "KeyboardInterrupt" in err, err[-2000:]
    assert not (tmp_path / "doc.json").exists()


def test_a_script_that_does_not_compile_names_its_line(exports, tmp_path):
    # Not the interpreter's frame that read the file (`<frozen runpy>`), but the line of
    # the module with the syntax error, here one the script imports.
    (tmp_path / "helper.py").write_text("x = 1\ny = (\n")
    script = tmp_path / "imports_broken.py"
    script.write_text("import helper\n")
    (err,) = exports.get(str(script), 2)["errors"]
    assert err["construct"] == "script error"
    assert err["message"].startswith("SyntaxError: ")
    assert (err["loc"]["file"], err["loc"]["line"]) == (str(tmp_path / "helper.py"), 2)
    assert err["loc"]["code"] == "y = ("


def test_a_script_without_kernels_is_an_error(exports):
    doc = exports.get(os.path.join(UNSUPPORTED, "no_kernel.py"), 2)
    assert [e["construct"] for e in doc["errors"]] == ["no kernel"]
