"""Programs of several kernels: which kernels a script runs hand semaphores, and so DMAs
still in flight, from one to the next.

JAX's split-phase collectives start a DMA in one ``pallas_call`` and hand its DMA
semaphores out as ``pltpu.SEMAPHORE``-space outputs; later kernels take them as inputs
and wait (``send_done``, ``recv_done``). Checked alone, the start kernel leaks its
semaphores and the done kernels wait for bytes no kernel sends: such kernels are one
protocol per device, and the checker runs them as one program (``python/SCHEMA.md``,
*Programs*).

:class:`Tracker` follows the values of every computation the capture hook sees, in the
order the script runs them: each jaxpr variable is a *value*, flowing positionally into
``jit``/``shard_map`` bodies and out of them, through the iterations of a ``scan`` with a
static length (unrolled), and from one computation to the next when the script passes a
placeholder result of one (a semaphore array, say) to another, or one array of its own to
both. Every kernel equation
executed is a :class:`Call` with the values of its operands and results. Kernels inside a
``lax.cond`` or a ``while_loop`` are *unordered*: whether and how often they run is not
static, so they are never part of a program (and a note says so when they pass
semaphores).

:meth:`Tracker.programs` groups the calls: two calls are one program when a semaphore
value one hands out is an operand of the other; and a call that takes a value (a buffer)
a program's kernel produced, while the program still has semaphores alive (up to the last
call that takes one of them, or to the end of the script for one no call takes), joins
that program: it may touch a buffer a DMA of the program is still writing or reading. A
group whose kernels hand out no semaphore is no program: its kernels are checked alone.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from jax._src import core as jax_core

from . import jaxcompat
from .dataflow import KERNELS, has_kernel, sub_jaxprs
from .export import numbered

#: The most iterations of a ``scan`` around kernels that are unrolled into a program.
MAX_UNROLL = 64

#: Kernel primitives whose operands and results are the kernel's arguments in order
#: (``[*operands, *results]``): ``pallas_call`` and 0.10's ``mpmd_map``. A 0.8/0.9
#: ``core_map`` (``pl.kernel``) closes over refs instead; its values are not followed.
_POSITIONAL = ("pallas_call", "mpmd_map")


@dataclasses.dataclass
class Call:
    """One execution of a kernel equation."""

    index: int
    eqn: Any
    #: The captured kernel it was exported as (``kernel.Captured``).
    kernel: Any
    #: The values of its operands and results.
    ins: list[int]
    outs: list[int]
    #: The name of the jitted computation that ran it.
    computation: str
    #: Whether its place in the script's order is static (not under ``cond``/``while``).
    ordered: bool
    #: Where the script called the computation.
    call_loc: dict | None

    def semaphore_operands(self) -> list[int]:
        """The positions of its semaphore-typed operands."""
        return [i for i, v in enumerate(self.eqn.invars) if jaxcompat.is_extended(getattr(v, "aval", None))]

    def semaphore_results(self) -> list[int]:
        """The positions of its semaphore-typed results."""
        return [j for j, v in enumerate(self.eqn.outvars) if jaxcompat.is_extended(getattr(v, "aval", None))]

    def follows_values(self) -> bool:
        """Whether its operands and results are its kernel's arguments in order."""
        return self.eqn.primitive.name in _POSITIONAL

    def aliased_operands(self) -> set[int]:
        """The operands the kernel writes in place (``input_output_aliases``)."""
        aliases = self.eqn.params.get("input_output_aliases") or ()
        return {int(i) for i, _ in (aliases.items() if isinstance(aliases, dict) else aliases)}


@dataclasses.dataclass
class Program:
    """Calls the checker runs as one program, in order, with the values they share."""

    calls: list[Call]
    #: ``((step, argument), (step, argument))``: argument ``to`` of step ``to[0]`` is the
    #: value argument ``from`` of an earlier step holds (steps index ``calls``).
    links: list[tuple[tuple[int, int], tuple[int, int]]]
    #: Why the program cannot be checked (its semaphores reach kernels whose runs are not
    #: static), or ``None``.
    unsupported: str | None = None

    def name(self) -> str:
        names: list[str] = []
        for c in self.calls:
            if c.computation not in names:
                names.append(c.computation)
        return "+".join(names)


class Tracker:
    """The kernels the script runs, in order, and the values that flow between them."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._next = 0
        #: value -> (call, result position) of the kernel that produced it.
        self.producer: dict[int, tuple[int, int]] = {}
        #: ``id`` of an array a computation took or returned (a placeholder result of an
        #: earlier one) -> (the array, its value).
        self._placeholders: dict[int, tuple[Any, int]] = {}
        #: How many times each kernel equation has run (its captured records in turn).
        self._runs: dict[int, int] = {}
        #: Notes for the document (kernels whose semaphores are not followed).
        self.notes: list[str] = []
        #: Semaphore values kernels handed out that flow into a ``cond`` or ``while`` whose
        #: kernels run a number of times that is not static, with those kernels' calls.
        self.escapes: dict[int, list[Call]] = {}

    def _fresh(self) -> int:
        self._next += 1
        return self._next

    # -- following a computation --------------------------------------------------

    def computation(self, jaxpr: Any, args: Any, name: str, kernels_of: dict[int, list], call_loc: dict | None,
                    results: list) -> None:
        """Follows one computation the script runs: ``args`` its arguments (placeholders
        of earlier ones are their values), ``kernels_of`` the captured records of each
        kernel equation (by ``id``), ``results`` the placeholders it returns."""
        ins = []
        for a in args:
            known = self._placeholders.get(id(a))
            if known is None or known[0] is not a:
                # An array of the script's own: one value in every computation it is
                # passed to (kept, so that its id is not reused).
                known = (a, self._fresh())
                self._placeholders[id(a)] = known
            ins.append(known[1])
        ctx = _Context(name, kernels_of, call_loc)
        outs = self._walk(jaxpr, ins, ctx, True)
        for obj, node in zip(results, outs):
            self._placeholders[id(obj)] = (obj, node)

    def _walk(self, jaxpr: Any, ins: list[int], ctx: "_Context", ordered: bool) -> list[int]:
        jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
        env: dict[Any, int] = dict(zip(jaxpr.invars, ins))
        for v in jaxpr.constvars:
            env[v] = self._fresh()

        def of(x: Any) -> int:
            if isinstance(x, jax_core.Var) and x in env:
                return env[x]
            return self._fresh()

        for eqn in jaxpr.eqns:
            vals = [of(x) for x in eqn.invars]
            outs = self._eqn(eqn, vals, ctx, ordered)
            env.update(zip(eqn.outvars, outs))
        return [of(x) for x in jaxpr.outvars]

    def _eqn(self, eqn: Any, ins: list[int], ctx: "_Context", ordered: bool) -> list[int]:
        name = eqn.primitive.name
        n_out = len(eqn.outvars)
        if name in KERNELS:
            outs = [self._fresh() for _ in range(n_out)]
            records = ctx.kernels_of.get(id(eqn)) or [None]
            run = self._runs.get(id(eqn), 0)
            self._runs[id(eqn)] = run + 1
            call = Call(len(self.calls), eqn, records[run % len(records)], ins, outs, ctx.name, ordered, ctx.call_loc)
            self.calls.append(call)
            for j, v in enumerate(outs):
                self.producer[v] = (call.index, j)
            return outs
        subs = sub_jaxprs(eqn)
        if not any(has_kernel(s) for s in subs):
            return [self._fresh() for _ in range(n_out)]
        params = eqn.params
        if name == "scan" and int(params.get("length", 0)) <= MAX_UNROLL:
            nc, ncarry = jaxcompat.scan_counts(params)
            consts, carry = ins[:nc], ins[nc:nc + ncarry]
            n_xs = len(ins) - nc - ncarry
            ys: list[int] = []
            for _ in range(int(params["length"])):
                xs = [self._fresh() for _ in range(n_xs)]
                outs = self._walk(params["jaxpr"], consts + carry + xs, ctx, ordered)
                carry, ys = outs[:ncarry], outs[ncarry:]
            return carry + [self._fresh() for _ in ys]
        if name not in ("cond", "while", "scan") and len(subs) == 1 \
                and len(subs[0].invars) == len(ins) and len(subs[0].outvars) == n_out:
            # jit, shard_map, closed_call, custom_jvp, remat: positionally.
            return self._walk(subs[0], ins, ctx, ordered)
        # A conditional, a loop of unknown (or too large) trip count: its kernels run, but
        # whether and how often is not static.
        first = len(self.calls)
        for sub in subs:
            self._walk(sub, [self._fresh() for _ in sub.invars], ctx, False)
        inside = self.calls[first:]
        for v in ins:
            src = self.producer.get(v)
            if inside and src is not None and src[1] in self.calls[src[0]].semaphore_results():
                self.escapes.setdefault(v, []).extend(inside)
        return [self._fresh() for _ in range(n_out)]

    # -- grouping -------------------------------------------------------------------

    def programs(self) -> list[Program]:
        """The programs of several kernels among the calls (see the module docs)."""
        calls = [c for c in self.calls if c.ordered and c.follows_values()]
        parent = {c.index: c.index for c in calls}

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        def union(a: int, b: int) -> bool:
            ra, rb = find(a), find(b)
            if ra == rb:
                return False
            parent[max(ra, rb)] = min(ra, rb)
            return True

        ordered = {c.index for c in calls}
        for c in calls:
            for i in c.semaphore_operands():
                src = self.producer.get(c.ins[i])
                if src is not None and src[0] in ordered:
                    union(src[0], c.index)
        changed = True
        while changed:
            changed = False
            groups: dict[int, list[Call]] = {}
            for c in calls:
                groups.setdefault(find(c.index), []).append(c)
            for members in groups.values():
                end = self._span_end(members, calls)
                produced = {v for m in members for v in m.outs}
                first = members[0].index
                for c in calls:
                    if first < c.index <= end and find(c.index) != find(first) and any(v in produced for v in c.ins):
                        changed |= union(first, c.index)
        groups = {}
        for c in calls:
            groups.setdefault(find(c.index), []).append(c)
        out = []
        for members in groups.values():
            if not any(m.semaphore_results() for m in members):
                continue
            out.append(Program(members, _links(members), self._escaped(members)))
        self._note_unordered()
        return out

    def _escaped(self, members: list[Call]) -> str | None:
        """Why the program of ``members`` cannot be checked: a semaphore one of them hands
        out flows into a ``cond`` or ``while`` that calls kernels (which may take it, a
        number of times that is not static); ``None`` when none does."""
        for m in members:
            for j in m.semaphore_results():
                inside = self.escapes.get(m.outs[j])
                if inside:
                    names = ", ".join(dict.fromkeys(_kernel_name(c) for c in inside))
                    return (f"a semaphore kernel {_kernel_name(m)} hands out (its result {j}, counting from 0) "
                            "is passed into a "
                            f"lax.cond or while_loop that calls {names}: whether and how often those run is not "
                            "static, so what takes the semaphore is not known")
        return None

    def _span_end(self, members: list[Call], calls: list[Call]) -> float:
        """The last call that takes a semaphore the group hands out (infinite for one no
        call takes), or the group's last call."""
        end: float = members[-1].index
        for m in members:
            for j in m.semaphore_results():
                takers = [c.index for c in calls if m.outs[j] in c.ins]
                end = max(end, max(takers) if takers else float("inf"))
        return end

    def _note_unordered(self) -> None:
        for c in self.calls:
            passes = c.semaphore_operands() or c.semaphore_results()
            if passes and not c.ordered:
                self.notes.append(f"kernel {_kernel_name(c)} takes or hands out semaphores inside a lax.cond or "
                                  "while_loop: whether and how often it runs is not static, so semcheck does not "
                                  "follow its semaphores from kernel to kernel (a program whose semaphores reach "
                                  "it is not checked)")
            elif passes and not c.follows_values():
                self.notes.append(f"kernel {_kernel_name(c)} takes or hands out semaphores as a pl.kernel staged "
                                  "under this JAX: semcheck does not follow them from kernel to kernel; it is "
                                  "checked alone")
        self.notes = list(dict.fromkeys(self.notes))


@dataclasses.dataclass
class _Context:
    name: str
    kernels_of: dict[int, list]
    call_loc: dict | None


def _kernel_name(c: Call) -> str:
    name = c.eqn.params.get("name")
    if isinstance(name, str) and name:
        return name
    jaxpr = jaxcompat.kernel_jaxpr(c.eqn)
    info = getattr(jaxpr, "debug_info", None)
    return str(getattr(info, "func_name", None) or c.eqn.primitive.name)


def _links(members: list[Call]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The arguments of a program's steps that hold one value: each later appearance of a
    value linked to its first (a kernel's result taken by a later kernel, or one value
    passed to two kernels). A value a kernel writes in place (``input_output_aliases``)
    is, for later kernels that take the original, a copy XLA makes: not linked."""
    first: dict[int, tuple[int, int]] = {}
    links = []
    for step, c in enumerate(members):
        for i, v in enumerate(c.ins):
            if v in first:
                links.append((first[v], (step, i)))
            else:
                first[v] = (step, i)
        for i in c.aliased_operands():
            if i < len(c.ins):
                first.pop(c.ins[i], None)
        for j, v in enumerate(c.outs):
            first[v] = (step, len(c.ins) + j)
    return links


def export_programs(tracker: Tracker, captured: list, records: list[dict],
                    rebuild: Any) -> list[dict]:
    """The ``programs`` of the document (``python/SCHEMA.md``), for the kernel ``records``
    built from ``captured`` (in the same order). Marks each record ``standalone`` (the
    script also calls it outside every program) and rebuilds, with ``rebuild(k, forced)``,
    the kernels whose shared arrays other kernels of a program cut into finer cells, so
    that every kernel of a program cuts an array alike."""
    index = {id(c): i for i, c in enumerate(captured)}
    out: list[dict] = []
    seen: dict[Any, dict] = {}
    in_programs: set[int] = set()
    progs = tracker.programs()
    for p in progs:
        steps = [index.get(id(c.kernel)) for c in p.calls]
        if any(s is None for s in steps):
            continue
        in_programs.update(c.index for c in p.calls)
        key = (tuple(steps), tuple(p.links))
        if key in seen:
            seen[key]["invocations"] += 1
            continue
        rec = {"name": p.name(), "kernels": steps,
               "links": [{"from": list(a), "to": list(b)} for a, b in p.links],
               "call": p.calls[0].call_loc, "invocations": 1, "unsupported": p.unsupported}
        seen[key] = rec
        out.append(rec)
    standalone = {index[id(c.kernel)] for c in tracker.calls if c.index not in in_programs and id(c.kernel) in index}
    for k, rec in enumerate(records):
        rec["standalone"] = k in standalone or not any(k in p["kernels"] for p in out)
    _name_programs(out)
    _unify_cells(out, records, rebuild)
    return out


def _name_programs(programs: list[dict]) -> None:
    seen: dict[str, int] = {}
    for p in programs:
        p["name"] = numbered(seen, p["name"])


def _unify_cells(programs: list[dict], records: list[dict], rebuild: Any) -> None:
    """Rebuilds kernels until every array two kernels of a program share is cut into the
    same cells by both: the greatest common divisor, per dimension, of their cells.
    Ends: a kernel is rebuilt only when a cell of one of its arrays must shrink to a
    proper divisor of itself, and a rebuilt kernel's cells divide the ones forced on it."""
    forced: dict[int, dict[int, list[int]]] = {}
    while True:
        parent: dict[tuple[int, int], tuple[int, int]] = {}

        def find(x: tuple[int, int]) -> tuple[int, int]:
            parent.setdefault(x, x)
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for p in programs:
            for link in p["links"]:
                ends = [_buffer_of(records, p["kernels"][step], arg) for step, arg in (link["from"], link["to"])]
                first, second = ends
                if first is not None and second is not None:
                    parent[find(first)] = find(second)
        classes: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for x in list(parent):
            classes.setdefault(find(x), []).append(x)
        again: set[int] = set()
        for members in classes.values():
            bufs = [records[k]["buffers"][b] for k, b in members]
            if len({tuple(b["array_shape"]) for b in bufs}) != 1:
                continue
            cell = [0] * len(bufs[0]["cell"])
            for b in bufs:
                cell = [math.gcd(a, c) for a, c in zip(cell, b["cell"])]
            for (k, b), decl in zip(members, bufs):
                if decl["cell"] != cell:
                    forced.setdefault(k, {})[b] = cell
                    again.add(k)
        if not again:
            return
        for k in sorted(again):
            records[k].update(rebuild(k, forced[k]))


def _buffer_of(records: list[dict], k: int, arg: int) -> tuple[int, int] | None:
    rec = records[k]
    if rec.get("status") != "ok":
        return None
    args = rec.get("arguments") or []
    a = args[arg] if arg < len(args) else None
    return (k, a["buffer"]) if a and "buffer" in a else None


__all__ = ["Call", "Program", "Tracker", "MAX_UNROLL", "export_programs"]
