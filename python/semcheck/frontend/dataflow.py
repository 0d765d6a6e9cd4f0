"""Data flow through jaxprs: which kernels read values another kernel computes, and
which variables of a kernel's jaxpr are read at all.

To learn the values a script passes to a kernel's scalar-prefetch operands, the capture
runs the computation on the CPU with every kernel replaced by zeros (nothing of a kernel
runs). A value computed from another kernel's output is then computed from those zeros,
not from what the script would pass: :func:`fed_by_kernels` finds the kernels whose
values depend on one, following the data flow of the computation's jaxpr (through calls,
``shard_map``, conditionals and loops, whose carries are followed to a fixed point).

The walker loads an old value only where a store's or swap's result is read
(:func:`mark_uses`, :func:`used_later`).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from jax._src import core as jax_core

from .jaxcompat import KERNEL_PRIMITIVES, scan_counts

#: Primitives of kernels (``core_map``: ``pl.kernel`` under jax 0.8, 0.9).
KERNELS = KERNEL_PRIMITIVES


def sub_jaxprs(eqn: Any) -> list[jax_core.Jaxpr]:
    """The jaxprs among an equation's parameters (a call's body, a loop's, every branch),
    open."""
    out = []
    for p in eqn.params.values():
        for sub in (p if isinstance(p, (tuple, list)) else (p,)):
            sub = getattr(sub, "jaxpr", sub)
            if isinstance(sub, jax_core.Jaxpr):
                out.append(sub)
    return out


def fed_by_kernels(jaxpr: jax_core.Jaxpr, operands: Callable[[Any], Sequence[int]]) -> set[int]:
    """The ids of the kernel equations of ``jaxpr`` (nested ones included) one of whose
    ``operands(eqn)`` depends on the output of a kernel."""
    fed: set[int] = set()
    _flow(jaxpr, [False] * len(jaxpr.invars), operands, fed)
    return fed


def _flow(jaxpr: Any, tainted_in: list[bool], operands: Callable[[Any], Sequence[int]], fed: set[int]) -> list[bool]:
    """The taint of ``jaxpr``'s outputs given its inputs' (a value computed from a kernel's
    output is tainted), recording kernels fed tainted operands in ``fed``."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    taint: dict[Any, bool] = dict(zip(jaxpr.invars, tainted_in))

    def of(x: Any) -> bool:
        return isinstance(x, jax_core.Var) and taint.get(x, False)

    for eqn in jaxpr.eqns:
        ins = [of(x) for x in eqn.invars]
        name = eqn.primitive.name
        if name in KERNELS:
            if any(ins[k] for k in operands(eqn) if k < len(ins)):
                fed.add(id(eqn))
            outs = [True] * len(eqn.outvars)
        else:
            outs = _through(eqn, ins, operands, fed)
        taint.update(zip(eqn.outvars, outs))
    return [of(x) for x in jaxpr.outvars]


def _through(eqn: Any, ins: list[bool], operands: Callable[[Any], Sequence[int]], fed: set[int]) -> list[bool]:
    """The taint of an equation's outputs: through its sub-jaxprs when it has some (calls
    and ``shard_map`` positionally, ``cond`` per branch, loops to a fixed point), else
    tainted when any input is."""
    params = eqn.params
    name = eqn.primitive.name
    n_out = len(eqn.outvars)
    if name == "cond":
        outs = [False] * n_out
        for branch in params["branches"]:
            outs = [a or b for a, b in zip(outs, _flow(branch, ins[1:], operands, fed))]
        return [o or ins[0] for o in outs]
    if name == "while":
        nc, nb = params["cond_nconsts"], params["body_nconsts"]
        cconsts, bconsts, carry = ins[:nc], ins[nc:nc + nb], list(ins[nc + nb:])
        while True:
            new = _flow(params["body_jaxpr"], bconsts + carry, operands, fed)
            merged = [a or b for a, b in zip(carry, new)]
            if merged == carry:
                break
            carry = merged
        stop = any(_flow(params["cond_jaxpr"], cconsts + carry, operands, fed))
        return [c or stop for c in carry]
    if name == "scan":
        nc, ncarry = scan_counts(params)
        consts, carry, xs = ins[:nc], list(ins[nc:nc + ncarry]), ins[nc + ncarry:]
        while True:
            outs = _flow(params["jaxpr"], consts + carry + xs, operands, fed)
            merged = [a or b for a, b in zip(carry, outs[:ncarry])]
            if merged == carry:
                return merged + outs[ncarry:]
            carry = merged
    subs = sub_jaxprs(eqn)
    if len(subs) == 1 and len(subs[0].invars) == len(ins) and len(subs[0].outvars) == n_out:
        return _flow(subs[0], ins, operands, fed)
    # Anything else: every output depends on every input, and on any kernel inside.
    any_in = any(ins)
    for sub in subs:
        _flow(sub, [any_in] * len(sub.invars), operands, fed)
    return [any_in or any(has_kernel(s) for s in subs)] * n_out


def has_kernel(jaxpr: Any) -> bool:
    """Whether ``jaxpr`` (or a closed one) calls a kernel, directly or in a sub-jaxpr."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in KERNELS or any(has_kernel(sub) for sub in sub_jaxprs(eqn)):
            return True
    return False


_USES: dict[int, bool] = {}


def used_later(var: Any) -> bool:
    """Whether an outvar is used (set by :func:`mark_uses` before walking)."""
    return _USES.get(id(var), True)


def mark_uses(jaxpr: jax_core.Jaxpr) -> None:
    """Records, for every variable of ``jaxpr`` and its sub-jaxprs, whether it is read."""
    used: set[int] = set()

    def visit(j: Any) -> None:
        j = getattr(j, "jaxpr", j)
        for eqn in j.eqns:
            for x in eqn.invars:
                if isinstance(x, jax_core.Var):
                    used.add(id(x))
            for sub in sub_jaxprs(eqn):
                visit(sub)
        for x in j.outvars:
            if isinstance(x, jax_core.Var):
                used.add(id(x))

    def collect(j: Any) -> None:
        j = getattr(j, "jaxpr", j)
        for eqn in j.eqns:
            for v in eqn.outvars:
                _USES[id(v)] = id(v) in used
            for sub in sub_jaxprs(eqn):
                collect(sub)

    visit(jaxpr)
    collect(jaxpr)
