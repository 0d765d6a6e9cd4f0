"""A counterexample in JAX's own TPU interpret mode: ``semcheck replay --interpret TRACE``.

``python -m semcheck.interpret PLAN OUT`` runs the kernel file of a semcheck trace under
``pltpu.InterpretParams`` (of jax 0.8.1 to 0.12.x: :class:`_Interpreter`) twice, each time
steering the interpreter's devices and DMAs through one schedule semcheck computed, and
writes what each run computed (what JAX's race detector printed, and the semaphores
non-zero at the kernel's exit) to ``OUT``: the counterexample's schedule, then the
lock-step schedule, whose outputs are the reference the wrong numbers are shown against.

How the interpreter is steered (what the interpreter allows):

* **Devices.** The interpreter runs each device on its own thread and performs every
  semaphore signal, semaphore wait, DMA start and DMA wait of the kernel through a Python
  callback (``semaphore_signal``, ``semaphore_wait``, ``dma_start``, ``dma_wait`` of
  ``jax._src.pallas.mosaic.interpret.interpret_pallas_call``), looked up when the kernel
  is traced. While the target kernel is traced those four are replaced by *gates*: the
  k-th such operation of device d blocks until the schedule's cursor reaches the k-th
  synchronising event of d, which must be of the same kind (else the run *diverged*:
  reported, and the rest runs unsteered). A wait is released only when its semaphore
  already holds enough (else: diverged). The events semcheck has between two
  synchronisations of a device (its loads, stores and computations, its entry, the
  implicit entry barrier, its exit) are not callbacks one can hold: the cursor passes them
  once the device has reached its next synchronisation (or finished), which is where they
  happen in program order; they only touch the device's own memory, which no DMA of a
  race-free prefix writes meanwhile.
* **DMAs.** With ``dma_execution_mode="on_wait"`` the interpreter does not run a DMA when
  it starts; it queues its read and its write as tasks of the semaphores they signal and
  runs them, last queued first, when a device waits on such a semaphore. Steered, the
  tasks are not queued: the DMA is kept, and its read (``sent``: the source is read, the
  send semaphore signalled) and write (``received``/``done``: the destination written,
  the receive semaphore signalled) run exactly where the schedule has them; a local copy
  reads its source when it starts, as semcheck's model does.
* **After the schedule.** A counterexample ends where the rule breaks: from there the run
  continues unsteered (every DMA not yet done queued as the interpreter would have), to
  the kernel's outputs.

What cannot be steered (and is reported instead): a DMA landing cell by cell (the
interpreter writes a copy whole), several invocations (``repeat``), a DMA landing in, or a
signal reaching, a device that has not entered the kernel or has left it (the interpreter
runs every device's kernel from the same start and allocates a device's buffers when that
device starts, so the ``outside-kernel`` bugs cannot happen there), a grid the interpreter
visits in another order (``parallel`` dimensions it randomises), a deadlock (the
interpreter would block at its waits), a kernel whose waits take more from a semaphore
than all its operations add to it (the same, in the run continued after the schedule)
and a program of several kernels (the interpreter allocates a call's semaphores for that
call only): semcheck refuses those three before this module runs.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import threading
import time
import traceback
from typing import Any, Callable

from .frontend import jaxcompat
from .frontend.scripts import StderrTail, exit_message, run_as_main

#: Seconds the cursor may wait for a device before the run counts as diverged.
STALL_SECONDS = 30.0

#: Virtual vector clocks of the race detector's DMAs (see ``run``).
VECTOR_CLOCKS = 1024


class Steering:
    """The cursor over one schedule and the state of the devices it gates."""

    def __init__(self, steps: list[dict], devices: int):
        self.steps = steps
        self.cursor = 0
        self.cv = threading.Condition()
        self.count = [0] * devices  # synchronisations each device has done (or is at)
        self.arrived: dict[int, tuple[int, str]] = {}  # device -> (ordinal, kind) it waits at
        self.finished = [False] * devices
        self.dmas: dict[tuple[int, int], Any] = {}  # (issuer, ordinal of its start) -> DMA
        self.tasks: dict[tuple[int, int], list] = {}  # the tasks the interpreter would have queued
        self.free = False
        self.divergence: str | None = None
        self.local = threading.local()
        self.original_append: Callable[[Any, Any, Any, Any], Any] | None = None

    # -- the cursor -------------------------------------------------------------------

    def diverge(self, why: str) -> None:
        """Stops steering (holding ``cv``): the rest of the run is the interpreter's own."""
        if self.divergence is None and not self.free:
            step = self.steps[self.cursor] if self.cursor < len(self.steps) else None
            at = f" at event {step['index']} `{step['name']}`" if step else ""
            self.divergence = f"{why}{at}"
        self.go_free()

    def go_free(self) -> None:
        """Ends steering (holding ``cv``): every DMA not yet done is queued as the
        interpreter would have queued it."""
        if self.free:
            return
        self.free = True
        for key, dma in self.dmas.items():
            if getattr(dma.state, "name", "") == "COMPLETED":
                continue
            for (memory, sem_id, core, task) in self.tasks.get(key, []):
                read_only = getattr(task, "__name__", "") == "execute_read"
                if read_only and dma.state.name != "STARTED":
                    continue
                if self.original_append is not None:
                    self.original_append(memory, sem_id, core, task)
        self.cv.notify_all()

    def advance(self) -> None:
        """Moves the cursor over every event it can pass now (holding ``cv``): a device's
        own work once the device reached its next synchronisation, a DMA's read or
        write (performed here)."""
        while not self.free and self.cursor < len(self.steps):
            step = self.steps[self.cursor]
            op, d = step["op"], step["device"]
            if op == "other":
                nxt = step["next_ordinal"]
                reached = self.count[d] > nxt or (d in self.arrived and self.arrived[d][0] == nxt)
                if not (reached or self.finished[d]):
                    return
            elif op == "dma":
                key = tuple(step["dma"])
                dma = self.dmas.get(key)
                if dma is None:
                    self.diverge(f"the DMA started by d{key[0]}'s synchronisation {key[1]} was not started")
                    return
                if step["action"] == "read":
                    dma.execute_read()
                elif dma.state.name == "STARTED":
                    dma.execute_read_and_write()
                else:
                    dma.execute_write()
            elif op == "unsupported":
                self.diverge(step["why"])
                return
            else:  # a synchronisation: its device's gate moves the cursor
                return
            self.cursor += 1
            self.cv.notify_all()
        if self.cursor >= len(self.steps):
            self.go_free()

    # -- the gates --------------------------------------------------------------------

    def enter(self, device: int, kind: str, ready=None) -> bool:
        """Blocks device ``device`` at its next synchronisation (``kind``) until the
        schedule reaches it; ``ready()`` says whether a wait can be satisfied. Returns
        whether the operation is steered (then ``leave`` moves the cursor past it)."""
        with self.cv:
            k = self.count[device]
            if self.free:
                self.count[device] += 1
                return False
            self.arrived[device] = (k, kind)
            self.cv.notify_all()
            deadline = time.monotonic() + STALL_SECONDS
            steered = False
            while not self.free:
                self.advance()
                if self.free:
                    break
                step = self.steps[self.cursor]
                if step["op"] != "other" and step["op"] != "dma" and step["device"] == device and step["ordinal"] == k:
                    if step["op"] != kind:
                        self.diverge(f"d{device}'s synchronisation {k} is a {kind} in JAX's interpreter, "
                                     f"a {step['op']} in semcheck's model")
                    elif ready is not None and not ready():
                        self.diverge(f"d{device}'s wait cannot be satisfied there in JAX's interpreter")
                    else:
                        steered = True
                    break
                if time.monotonic() > deadline:
                    waiting = ", ".join(f"d{e} at synchronisation {a[0]} ({a[1]})" for e, a in sorted(self.arrived.items()))
                    self.diverge(f"no progress for {STALL_SECONDS:.0f} s (waiting: {waiting})")
                    break
                self.cv.wait(0.05)
            del self.arrived[device]
            self.count[device] += 1
            return steered

    def leave(self, steered: bool) -> None:
        """After a steered operation ran: the cursor moves past it."""
        with self.cv:
            if steered and not self.free:
                self.cursor += 1
                self.advance()
            self.cv.notify_all()

    def finish(self, device: int) -> None:
        """Device ``device`` has run its kernel to the end."""
        with self.cv:
            self.finished[device] = True
            self.advance()
            self.cv.notify_all()


def _install(plan: dict, steering: Steering, record: dict) -> list:
    """Patches the interpreter: gates around its synchronisation callbacks (while the
    target kernel is traced), DMA capture, output recording. Returns the undo list."""
    from jax import lax
    from jax._src import callback
    from jax._src import core as jax_core
    from jax._src.pallas.mosaic.interpret import interpret_pallas_call as ip
    from jax._src.pallas.mosaic.interpret import shared_memory as memory
    import numpy as np

    undo = []

    def patch(owner, name, value):
        undo.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    originals = {n: getattr(ip, n) for n in ("semaphore_signal", "semaphore_wait", "dma_start", "dma_wait", "_validate",
                                             "_allocate_semaphores")}
    original_append = memory.SharedMemory.append_semaphore_task

    def append(self, semaphore_id, global_core_id, task):
        key = getattr(steering.local, "dma", None)
        if key is None or steering.free:
            return original_append(self, semaphore_id, global_core_id, task)
        steering.dmas[key] = task.__self__
        steering.tasks.setdefault(key, []).append((self, semaphore_id, global_core_id, task))
        return None

    steering.original_append = lambda memory_, sem_id, core, task: original_append(memory_, sem_id, core, task)
    patch(memory.SharedMemory, "append_semaphore_task", append)

    def core_of(device_id, local_core_id) -> int:
        """semcheck's device: the interpreter's global core (a device's cores are the
        devices of a TensorCore mesh)."""
        return int(ip._get_shared_memory().get_global_core_id(int(device_id), int(local_core_id)))

    def sem_ready(sem_id, device_id, local_core_id, value):
        sem = _Interpreter.semaphore(ip._get_shared_memory(), int(sem_id))
        core = core_of(device_id, local_core_id)
        return lambda: int(sem.read(core)) >= int(value)

    # The callbacks' own arguments, after the ordering token the newer interpreters pass
    # first (see _Interpreter).
    token = _Interpreter.passes_token(originals["semaphore_wait"])

    def own(args: tuple) -> tuple:
        return args[1:] if token else args

    def signal(*args, **kwargs):
        device_id, local_core_id = own(args)[:2]
        steered = steering.enter(core_of(device_id, local_core_id), "signal")
        try:
            return originals["semaphore_signal"](*args, **kwargs)
        finally:
            steering.leave(steered)

    def gated_wait(name: str) -> Callable:
        """The interpreter's ``name`` (a semaphore's or a DMA's wait), let through once the
        schedule reaches it and the semaphore holds what it waits for."""

        def wait(*args, **kwargs):
            device_id, local_core_id, sem_id, amount = own(args)[:4]
            ready = sem_ready(sem_id, device_id, local_core_id, amount)
            steered = steering.enter(core_of(device_id, local_core_id), "wait", ready)
            try:
                return originals[name](*args, **kwargs)
            finally:
                steering.leave(steered)

        return wait

    def dma_start(*args, **kwargs):
        device_id, src_local_core_id = own(args)[:2]
        core = core_of(device_id, src_local_core_id)
        with steering.cv:
            ordinal = steering.count[core]
        steered = steering.enter(core, "dma_start")
        steering.local.dma = (core, ordinal) if steered else None
        try:
            out = originals["dma_start"](*args, **kwargs)
            dma = steering.dmas.get((core, ordinal)) if steered else None
            if dma is not None and dma.src_sem is None:
                dma.execute_read()  # a local copy reads its source when it starts, as in the model
            return out
        finally:
            steering.local.dma = None
            steering.leave(steered)

    # Per device, the semaphores the kernel allocated, in order (its semaphore operands and
    # scratch first, in the kernel's argument order, then its `run_scoped` ones): to name
    # a semaphore the interpreter knows by a number.
    allocated: dict[int, list] = {}

    def allocate_semaphores(*args, **kwargs):
        out = originals["_allocate_semaphores"](*args, **kwargs)
        allocated.setdefault(int(own(args)[0]), []).append(np.asarray(out[1] if token else out))
        return out

    def sem_name(device: int, sem_id: int) -> str:
        names = record["sem_args"]
        if names is None:
            return f"the interpreter's semaphore {sem_id}"
        for k, ids in enumerate(allocated.get(device, [])):
            at = np.argwhere(ids == sem_id)
            if len(at):
                name = names[k] if k < len(names) else "a run_scoped semaphore"
                index = ", ".join(str(int(i)) for i in at[0])
                return f"{name}[{index}]" if ids.ndim else name
        return f"the interpreter's semaphore {sem_id}"

    def validate(*args, **kwargs):
        device = int(own(args)[0])
        # What the interpreter only prints (the first one, per device): a semaphore left
        # non-zero at the kernel's exit. Every one is recorded.
        shared = ip._get_shared_memory()
        cores = shared.get_global_core_ids(device)
        nonzero = getattr(shared, "get_sempahores_with_nonzero_count", None)
        for sem, core in nonzero(device) if nonzero is not None else ():
            where = f"d{device}" + (f" (core {core})" if len(cores) > 1 else "")
            record["exit_counts"].append(f"{where}: {sem_name(device, sem.id)} holds {sem.count_by_core[core]}, not 0")
        out = originals["_validate"](*args, **kwargs)
        for core in cores:
            steering.finish(int(core))
        return out

    gates = {"semaphore_signal": signal, "semaphore_wait": gated_wait("semaphore_wait"), "dma_start": dma_start,
             "dma_wait": gated_wait("dma_wait"), "_validate": validate, "_allocate_semaphores": allocate_semaphores}
    want = plan.get("kernel_name")
    original_call = ip.interpret_pallas_call

    def interpret_pallas_call(*args, **kwargs):
        info = getattr(kwargs.get("jaxpr"), "debug_info", None)
        function = (getattr(info, "func_src_info", None) or "").split(" at ")[0]
        target = not record["traced"] and (want is None or function == want)
        if not target:
            return original_call(*args, **kwargs)
        record["traced"] = True
        record["kernel"] = function
        record["sem_args"] = _Interpreter.semaphore_arguments(ip, kwargs.get("jaxpr"), kwargs.get("grid_mapping"))
        saved = {n: getattr(ip, n) for n in gates}
        for n, g in gates.items():
            setattr(ip, n, g)
        try:
            ret = original_call(*args, **kwargs)
        finally:
            for n, f in saved.items():
                setattr(ip, n, f)
        axis_sizes = jax_core.get_axis_env().axis_sizes
        axis_indices = {k: lax.axis_index(k) for k in axis_sizes.keys()}
        device_id = _Interpreter.logical_id(ip, tuple(axis_indices.values()), axis_sizes, axis_indices)

        def keep(device, *values):
            record["outputs"][int(device)] = [_encode(v) for v in values]

        callback.io_callback(keep, None, device_id, *ret)
        return ret

    patch(ip, "interpret_pallas_call", interpret_pallas_call)
    return undo


class _Interpreter:
    """What differs between the JAX releases' TPU interpreters, in one place. The steering
    above is written against jax 0.10.2's; the others differ in these points (read from
    their sources, and each run by the tests under that JAX):

    * jax 0.10.1 and later pass an ordering token first to every callback
      (``semaphore_wait(token, device_id, ...)``) and ``_allocate_semaphores`` returns
      ``(token, ids)``; 0.8 to 0.10.0 pass none and return the ids;
    * jax 0.10.2 looks a semaphore up with ``SharedMemory._unsafe_get_semaphore`` (under
      its lock); earlier releases keep them in ``SharedMemory.sem``, and the barrier
      semaphores in ``SharedMemory.fixed_id_sem``;
    * jax 0.9 and later decide which kernel arguments are semaphores after
      ``_forward_any_to_hbm`` of their block's memory space; 0.8 by the argument's own;
    * jax 0.8.3 and later number a device from its mesh coordinates with
      ``utils.device_coords_to_logical_id(coords, sizes, indices)``; 0.8.1 (which has no
      ``utils``) with ``interpret_pallas_call._device_coords_to_logical_id(coords, sizes)``."""

    @staticmethod
    def passes_token(callback: Any) -> bool:
        """Whether this interpreter passes an ordering token first to its callbacks (read
        from one of them)."""
        import inspect

        return next(iter(inspect.signature(callback).parameters), None) == "token"

    @staticmethod
    def semaphore(shared: Any, sem_id: int) -> Any:
        """The interpreter's semaphore ``sem_id``."""
        with shared.lock:
            get = getattr(shared, "_unsafe_get_semaphore", None)
            if get is not None:
                return get(sem_id)
            fixed = shared.fixed_id_sem  # the barrier semaphores, by their fixed ids
            return fixed[sem_id] if sem_id in fixed else shared.sem[sem_id]

    @staticmethod
    def logical_id(ip: Any, coords: tuple, sizes: Any, indices: Any) -> Any:
        """A device's number from its mesh coordinates, traced."""
        try:
            from jax._src.pallas.mosaic.interpret import utils
        except ImportError:
            return ip._device_coords_to_logical_id(coords, sizes)
        return utils.device_coords_to_logical_id(coords, sizes, indices)

    @staticmethod
    def semaphore_arguments(ip: Any, jaxpr: Any, grid_mapping: Any) -> list[str] | None:
        """The names of the kernel's semaphore arguments (operands and scratch), in the
        order the interpreter allocates them, by its own test of an argument's memory
        space; ``None`` when this interpreter is not laid out so."""
        try:
            from jax._src.pallas.mosaic import core as mosaic_core

            names = list(jaxpr.debug_info.arg_names or ())
            first = grid_mapping.num_index_operands
            operands = grid_mapping.num_inputs + grid_mapping.num_outputs
            forward = getattr(ip, "_forward_any_to_hbm", None)
            found: list[str] = []
            for i, var in enumerate(jaxpr.invars[first:]):
                if forward is None:  # jax 0.8: the argument's own memory space
                    space = var.aval.memory_space
                elif i < operands:
                    space = forward(jaxcompat.block_aval(grid_mapping.block_mappings[i]).memory_space)
                else:
                    space = forward(var.aval.memory_space)
                if space == mosaic_core.MemorySpace.SEMAPHORE:
                    found.append(names[first + i] if first + i < len(names) else f"semaphore argument {len(found)}")
            return found
        except (AttributeError, ImportError, IndexError, TypeError):
            return None


def _races(printed: str) -> list[str]:
    """The race detector's reports in what the script printed, one line per access:
    ``write of d0 hbm buffer 102 [0, 0:8, 0:128] by 100 at psum.py:86`` (the accessor is a
    device or a DMA id; clocks left out)."""
    import re

    reports = []
    for block in printed.split("RACE DETECTED")[1:]:
        lines = []
        for line in block.strip().splitlines():
            # The accessor `from 104, 0, FILE:LINE` (0.8 to 0.11) or `from (104, 0), ...` (0.12).
            m = re.match(r"\s*(read|write) of \('(\w+)', (\d+), (\d+), \d+\)\[(.*)\] from \(?(\d+), \d+\)?,? ?(\S*)",
                         line)
            if not m:
                continue
            kind, space, buf, dev, rng, who, where = m.groups()
            rng = re.sub(r"slice\((\d+), (\d+), 1\)", r"\1:\2", rng).strip("()").rstrip(",")
            where = os.path.basename(where.rsplit(":", 1)[0]) if where else "the kernel's own copy"
            # The interpreter numbers DMAs from 100 up; below that, the accessor is a device.
            by = f"DMA {who}" if int(who) >= 100 else f"d{who}"
            lines.append(f"{kind} of d{dev} {space} buffer {buf} [{rng}] by {by} at {where}")
        reports.append("\n".join(lines) if lines else block.strip()[:500])
    return reports


def _encode(value) -> dict:
    """An array as JSON: its shape and its values, flattened, with NaN and infinities as
    strings (JSON has no literal for them)."""
    import math

    import numpy as np

    arr = np.asarray(value)
    flat = arr.ravel().tolist()
    return {"shape": list(arr.shape), "dtype": str(arr.dtype),
            "values": [x if not isinstance(x, float) or math.isfinite(x) else str(x) for x in flat]}


def _drain() -> None:
    """Waits for every computation the script dispatched. JAX runs them asynchronously: a
    script that does not block on its result returns before its kernel has run, and the
    interpreter's state must not be reset under it (its callbacks would fail, and the run
    would record nothing)."""
    import jax

    jax.effects_barrier()
    for array in jax.live_arrays():
        array.block_until_ready()


def run(plan: dict, schedule: str) -> dict:
    """Runs the kernel file once, steered through ``plan['schedules'][schedule]``."""
    devices = plan["devices"]
    steps = plan["schedules"][schedule]
    steering = Steering(steps, devices)
    record: dict[str, Any] = {"traced": False, "kernel": None, "outputs": {}, "exit_counts": [], "sem_args": None}
    path = os.path.abspath(plan["kernel_file"])
    from jax.experimental.pallas import tpu as pltpu
    from jax._src.pallas.mosaic.interpret import interpret_pallas_call as ip

    undo = _install(plan, steering, record)
    out = io.StringIO()
    error = None
    # The detector's vector clocks give every DMA one of `vector_clock_size - devices`
    # virtual clocks at random: with JAX's default (as many as devices) two DMAs often share
    # one, and a race between them looks ordered. Many more make that unlikely.
    params = jaxcompat.interpret_params(dma_execution_mode="on_wait", detect_races=True, random_seed=0,
                                        vector_clock_size=VECTOR_CLOCKS + devices,
                                        uninitialized_memory=plan.get("uninitialized_memory", "nan"))
    import numpy as np

    np.random.seed(0)  # the race detector's choice of virtual clocks
    race_found = False
    tail = StderrTail(sys.stderr)
    try:
        if plan.get("tpu"):
            # The chip the trace was written for: the script sizes its kernel as it did then.
            jaxcompat.pretend_tpu(plan["tpu"])
        with tail.keeping(), contextlib.redirect_stdout(out), jaxcompat.race_reports_to(out), \
                pltpu.force_tpu_interpret_mode(params):
            try:
                run_as_main(path, list(plan.get("argv", [])))
            except SystemExit as e:
                error = exit_message(e, tail)
            finally:
                _drain()
        race_found = bool(getattr(ip, "races", None) is not None and ip.races.races_found)
    except BaseException as e:  # noqa: BLE001 - reported: the interpreter may fail
        error = f"{type(e).__name__}: {str(e)[-500:]}"
        if os.environ.get("SEMCHECK_INTERPRET_DEBUG"):
            traceback.print_exc()
    finally:
        for owner, name, value in reversed(undo):
            setattr(owner, name, value)
        with contextlib.suppress(Exception):
            ip.reset_tpu_interpret_mode_state()
    races = _races(out.getvalue())
    # A DMA the schedule started that never completed: in on_wait mode the interpreter runs
    # a DMA's read and write when a device waits on its semaphores, so one nobody waits for
    # never runs there (its semaphores stay 0 and its destination unwritten).
    unfinished = [
        [issuer, ordinal, getattr(dma.state, "name", str(dma.state))]
        for (issuer, ordinal), dma in sorted(steering.dmas.items())
        if getattr(dma.state, "name", "") != "COMPLETED"
    ]
    return {
        "schedule": schedule,
        "kernel": record["kernel"],
        "steered": steering.cursor if steering.divergence is not None else min(steering.cursor, len(steps)),
        "events": len(steps),
        "divergence": steering.divergence,
        "outputs": {str(d): v for d, v in sorted(record["outputs"].items())},
        "races": races,
        "exit_counts": sorted(record["exit_counts"]),
        "unfinished_dmas": unfinished,
        "race_found": race_found or bool(races),
        "error": error,
    }


def main(argv: list[str]) -> int:
    """``python -m semcheck.interpret PLAN OUT [SCHEDULE]``: one run per process (the
    interpreter keeps global state), so the caller runs this once per schedule."""
    plan_path, out_path, schedule = argv[0], argv[1], argv[2]
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={plan['devices']}"
    os.environ["JAX_PLATFORMS"] = "cpu"
    if plan.get("tpu"):
        os.environ["SEMCHECK_TPU"] = plan["tpu"]
    result = run(plan, schedule)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
