"""Control flow: calls (nested ``jit``), ``pl.when`` / ``lax.cond``, ``pl.run_scoped``,
and loops (``fori_loop`` as ``scan``, ``while``) with their index and data carries."""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from jax._src import core as jax_core

from . import exprs as E
from . import jaxcompat
from .bindings import CARRY, POISONED, ExprB, Poisoned, RefB, SemRead, Tainted, ValB, itemsize, load_views
from .dataflow import used_later
from .errors import Unsupported
from .vectors import IdxVec
from .walker_state import WalkerPart


class Control(WalkerPart):
    """The :class:`~semcheck.frontend.walker.KernelWalker`'s reading of control flow."""

    def sub_env(self, jaxpr: Any, args: Sequence[Any], consts: Sequence[Any] = ()) -> tuple[Any, dict]:
        """Binds a (closed) sub-jaxpr's constvars and invars."""
        inner = getattr(jaxpr, "jaxpr", jaxpr)
        env: dict = {}
        closed_consts = list(getattr(jaxpr, "consts", ()) or ())
        constvals = list(consts) if consts else [self.literal(c) if not isinstance(c, (ExprB, ValB, RefB)) else c
                                                  for c in closed_consts]
        for v, c in zip(inner.constvars, constvals):
            env[v] = c
        for v, a in zip(inner.invars, args):
            env[v] = a
        return inner, env

    def p_call(self, eqn: Any, env: dict) -> None:
        params = eqn.params
        sub = params.get("jaxpr") or params.get("call_jaxpr") or params.get("fun_jaxpr")
        if sub is None:
            raise self.unsupported(eqn.primitive.name, f"call primitive `{eqn.primitive.name}` without a jaxpr")
        args = [self.read_or_poisoned(env, x) for x in eqn.invars]
        loc = self.loc
        inner, sub_env = self.sub_env(sub, args)
        outs = self.walk(inner, sub_env)
        self.loc = loc
        self.bind_outs(env, eqn, outs)

    def block(self, fn: Any) -> tuple[list, Any]:
        self.blocks.append([])
        result = fn()
        return self.blocks.pop(), result

    def p_cond(self, eqn: Any, env: dict) -> None:
        # A condition that cannot be translated is recorded (or, poisoned, is a
        # consequence) and the branches are still walked for the constructs in them.
        tainted = False
        try:
            index = self.expr(env, eqn.invars[0], "the condition of pl.when / lax.cond")
        except Unsupported as u:
            self.errors.append(u)
            index, tainted = E.const(0), True
        except Tainted:
            index, tainted = E.const(0), True
        args = [self.read_or_poisoned(env, x) for x in eqn.invars[1:]]
        loc = self.loc
        bodies, outs = [], []
        start_epoch, start_writes = self.epoch, dict(self.writes)
        for br in eqn.params["branches"]:
            inner, sub_env = self.sub_env(br, args)
            self.epoch, self.writes = start_epoch, dict(start_writes)
            body, o = self.block(lambda: self.walk(inner, sub_env))
            self.loc = loc
            bodies.append(body)
            outs.append(o)
        self.epoch, self.writes = start_epoch, start_writes
        if tainted:
            raise Tainted()
        results: list[ExprB | RefB | Poisoned] = []
        for k in range(len(eqn.outvars)):
            branch_outs = [o[k] for o in outs]
            if any(isinstance(b, Poisoned) for b in branch_outs):
                results.append(POISONED)
            elif all(isinstance(b, ExprB) and b.kind != "f" for b in branch_outs):
                results.append(ExprB(E.op("select_n", index, *[b.expr for b in branch_outs]),
                                     branch_outs[0].kind))
            elif all(isinstance(b, RefB) for b in branch_outs) and len(set(branch_outs)) == 1:
                results.append(branch_outs[0])
            else:
                raise self.unsupported("cond result", "a lax.cond / pl.when branch returns data or refs")
        if any(map(_effectful, bodies)):
            if len(bodies) == 2 and not _effectful(bodies[0]):
                self.emit({"op": "when", "cond": index, "body": bodies[1]})
            elif len(bodies) == 2 and not _effectful(bodies[1]):
                self.emit({"op": "when", "cond": E.op("eq", index, E.const(0)), "body": bodies[0]})
            else:
                self.emit({"op": "switch", "index": index, "branches": bodies})
        self.bind_outs(env, eqn, results)

    def p_run_scoped(self, eqn: Any, env: dict) -> None:
        # An allocation that cannot be translated is recorded and poisoned, and the body
        # still walked for the constructs in it; the scope is then skipped.
        tainted = False

        def refuse(u: Unsupported) -> None:
            nonlocal tainted
            self.errors.append(u)
            tainted = True

        if eqn.params.get("collective_axes"):
            refuse(self.unsupported("run_scoped(collective_axes=...)", "a collective allocation is not supported"))
        if any(jaxcompat.run_scoped_ref_transforms(eqn)):
            refuse(self.unsupported("run_scoped ref_transforms", "transformed scoped allocations are not supported"))
        jaxpr = eqn.params["jaxpr"]
        inner = getattr(jaxpr, "jaxpr", jaxpr)
        consts = [self.read_or_poisoned(env, x) for x in eqn.invars]
        names = tuple(inner.debug_info.arg_names) if inner.debug_info and inner.debug_info.arg_names else ()
        sems: list[int] = []
        bufs: list[int] = []
        allocs: list[RefB | Poisoned] = []
        for k, v in enumerate(inner.invars):
            name = names[k] if k < len(names) and names[k] else f"scoped{len(self.semaphores) + len(self.buffers)}"
            try:
                b = self.ref_binding(v.aval, name, "scratch", scoped=True, shared_hbm=False)
            except Unsupported as u:
                refuse(u)
                allocs.append(POISONED)
                continue
            (sems if b.what == "sem" else bufs).append(b.id)
            allocs.append(b)
        env2: dict = {}
        for v, c in zip(inner.constvars, consts):
            env2[v] = c
        for v, a in zip(inner.invars, allocs):
            env2[v] = a
        loc = self.loc
        body, outs = self.block(lambda: self.walk(inner, env2))
        self.loc = loc
        if tainted:
            raise Tainted()
        for o in outs:
            if not isinstance(o, (ExprB, Poisoned)):
                raise self.unsupported("run_scoped result", "pl.run_scoped returns data or refs")
        self.emit({"op": "scoped", "semaphores": sems, "buffers": bufs, "body": body})
        self.bind_outs(env, eqn, outs)

    def loop(self, eqn: Any, env: dict, *, carries: list, count: int | None,
             cond: tuple | None, body: tuple, hint: str) -> tuple[list, list]:
        """Common part of scan and while: ``carries`` are the initial bindings;
        ``cond``/``body`` are ``(jaxpr, consts)`` pairs taking the carries."""
        loc = self.loc
        # Set when the loop cannot be translated for an error already recorded: its
        # body is still walked for the constructs in it, and the loop then skipped.
        tainted = False
        # The carries a while loop's condition reads: its bounds (fori_loop) or its own.
        bounds = _carries_read(cond[0], len(cond[1])) if cond is not None else set()
        names: list[str] = []
        init: list[E.Expr] = []
        var_b: list[ExprB | ValB | Poisoned] = []
        # Data carries (an accumulator array, a loaded value): each lives in a private
        # VMEM buffer of its own, stored before the loop and at the end of every
        # iteration, and read wherever the carry is used.
        registers: dict[int, RefB] = {}
        carries = [_as_data(c) for c in carries]
        for k, c in enumerate(carries):
            if isinstance(c, Poisoned):
                tainted = True
                var_b.append(POISONED)
            elif isinstance(c, ExprB) and c.kind != "f":
                names.append(self.fresh(hint if k == 0 else "c"))
                init.append(c.expr)
                var_b.append(ExprB(("var", names[-1]), c.kind))
            elif isinstance(c, ValB) and k not in bounds:
                registers[k] = self.register(f"carry{k}", c.shape, c.dtype, itemsize(c.dtype))
                self.store(registers[k], c)
                var_b.append(ValB(("load", registers[k], 0, 0, self.loc, CARRY), c.shape, c.dtype, True))
            else:
                # Recorded, and the body still walked (with this carry poisoned) for the
                # constructs after it.
                if isinstance(c, SemRead):
                    self.errors.append(self.steers(c))
                elif k in bounds:
                    self.errors.append(self.unsupported(
                        "run-time data", "the trip count of a loop (its bounds or its condition) depends on data "
                        "loaded from a buffer"))
                else:
                    self.errors.append(self.unsupported(
                        "loop carry", "a loop carries a value that is neither an integer index nor data (a ref, "
                        "a float index)"))
                var_b.append(POISONED)
        cond_expr = None
        reload: list[dict] = []
        if cond is not None:
            cjaxpr, cconsts = cond
            inner, cenv = self.sub_env(cjaxpr, list(cconsts) + var_b)
            before = len(self.blocks[-1])
            depth_epoch = self.epoch
            (c_out,) = self.walk(inner, cenv)
            emitted = self.blocks[-1][before:]
            # Loads of SMEM scalar state in the condition (with, for a window, the read of
            # its cell): made before the loop and again at the end of every iteration, so
            # the condition reads the current values.
            probes = {p.id for p in self.probes.values()}

            def reloaded(x: dict) -> bool:
                # (A window's cell read only where its index is in range: a `when`.)
                return (x["op"] == "scalar_load" or (x["op"] == "store" and x["dst"].id in probes)
                        or (x["op"] == "when" and all(reloaded(y) for y in x["body"])))

            quiet = all(reloaded(x) or x["op"] == "snapshot" for x in emitted)
            if quiet:
                # Before the loop its variables are their initial values; at the end of an
                # iteration, their next ones (the condition reads the values it will see).
                reload = [_copied(x) for x in emitted if reloaded(x)]
                for x in emitted:
                    _substitute(x, dict(zip(names, init)))
            if (not quiet and _effectful(emitted)) or self.epoch != depth_epoch:
                self.errors.append(self.unsupported("while condition", "the condition of a while loop has effects"))
                tainted = True
            elif isinstance(c_out, Poisoned):
                tainted = True
            elif not isinstance(c_out, ExprB):
                self.errors.append(self.unsupported("run-time data",
                                                    "the condition of a while loop depends on run-time data"))
                tainted = True
            else:
                cond_expr = c_out.expr
            self.loc = loc
        bjaxpr, bconsts = body
        inner, benv = self.sub_env(bjaxpr, list(bconsts) + var_b)
        self.epoch += 1  # a load from before the loop is not the value of every iteration

        def iteration() -> list:
            """The body, then the data carries' next values stored into their buffers
            (after every one is computed: a next value that reads a carry stored before
            it in this order is refused)."""
            nonlocal tainted
            outs = [_as_data(o) for o in self.walk(inner, benv)]
            self.loc = loc
            stored: set[int] = set()
            for k, reg in registers.items():
                o = outs[k]
                if isinstance(o, Poisoned):
                    tainted = True
                elif not isinstance(o, ValB):
                    self.errors.append(self.unsupported("loop carry", "a loop's data carry becomes an index value"))
                    tainted = True
                elif any(leaf.id in stored for leaf in load_views(o.node)):
                    self.errors.append(self.unsupported(
                        "loop carry", "the next values of a loop's data carries read each other's (a swap)"))
                    tainted = True
                else:
                    self.store(reg, o)
                    stored.add(reg.id)
            return outs

        stmts, outs = self.block(iteration)
        stmts.extend(reload)
        self.loc = loc
        nexts: list[E.Expr] = []
        for k, (b, o) in enumerate(zip(var_b, outs)):
            if isinstance(b, Poisoned) or k in registers:
                continue
            if isinstance(o, Poisoned):
                tainted = True
                continue
            if not (isinstance(o, ExprB) and o.kind != "f"):
                raise self.unsupported("loop carry", "an integer loop carry becomes data loaded from a buffer "
                                       "(run-time data in an index)")
            nexts.append(o.expr)
        for x in reload:
            _substitute(x, dict(zip(names, nexts)))
        if tainted:
            raise Tainted()
        self.emit({"op": "loop", "vars": names, "init": init, "count": count, "cond": cond_expr,
                   "next": nexts, "body": stmts})
        return var_b, outs

    def p_scan(self, eqn: Any, env: dict) -> None:
        p = eqn.params
        # `reverse` orders only xs and ys: a scan with neither (refused below otherwise) runs
        # its carries the same way in both directions.
        nc, ncarry = jaxcompat.scan_counts(p)
        ins = [self.read_or_poisoned(env, x) for x in eqn.invars]
        consts, carries, xs = ins[:nc], ins[nc: nc + ncarry], ins[nc + ncarry:]
        if xs:
            raise self.unsupported("scan over xs", "lax.scan over arrays (xs) is not supported; use fori_loop")
        ys = eqn.outvars[ncarry:]
        if any(not isinstance(y, jax_core.DropVar) and used_later(y) for y in ys):
            raise self.unsupported("scan outputs", "stacked outputs of lax.scan are not supported")
        var_b, _ = self.loop(eqn, env, carries=carries, count=int(p["length"]), cond=None,
                             body=(p["jaxpr"], consts), hint="i")
        self.bind_outs(env, eqn, var_b + [ValB(("const", "ys"), (), "", False)] * len(ys))

    def p_while(self, eqn: Any, env: dict) -> None:
        p = eqn.params
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        ins = [self.read_or_poisoned(env, x) for x in eqn.invars]
        cconsts, bconsts, carries = ins[:cn], ins[cn: cn + bn], ins[cn + bn:]
        var_b, _ = self.loop(eqn, env, carries=carries, count=None, cond=(p["cond_jaxpr"], cconsts),
                             body=(p["body_jaxpr"], bconsts), hint="i")
        self.bind_outs(env, eqn, var_b)


def _carries_read(closed: Any, nconsts: int) -> set[int]:
    """The positions of the carries (the invars after ``nconsts`` constants) that the
    output of a loop's condition jaxpr depends on."""
    inner = getattr(closed, "jaxpr", closed)
    needed = {v for v in inner.outvars if isinstance(v, jax_core.Var)}
    for eqn in reversed(inner.eqns):
        if any(v in needed for v in eqn.outvars):
            needed.update(v for v in eqn.invars if isinstance(v, jax_core.Var))
    return {k for k, v in enumerate(inner.invars[nconsts:]) if v in needed}


def _as_data(b: Any) -> Any:
    """An index array as the data it is (a loop carries arrays as data); anything else as is."""
    return b.data if isinstance(b, IdxVec) else b


def _copied(stmt: dict) -> dict:
    """A reloaded statement of a while condition, copied (a ``when``'s body too)."""
    if stmt["op"] == "when":
        return {**stmt, "body": [_copied(y) for y in stmt["body"]]}
    return dict(stmt)


def _substitute(stmt: dict, values: dict) -> None:
    """A reloaded statement of a while condition (a load of SMEM scalar state, or a
    window's cell read with it) with the loop's variables replaced by ``values``."""
    if stmt["op"] == "when":
        stmt["cond"] = E.substitute(stmt["cond"], values)
        for y in stmt["body"]:
            _substitute(y, values)
    elif stmt["op"] == "scalar_load":
        stmt["index"] = E.substitute(stmt["index"], values)
    elif stmt["op"] == "store" and stmt["value"][0] == "load":
        _, ref, *rest = stmt["value"]
        stmt["value"] = ("load", _substitute_ref(ref, values), *rest)


def _substitute_ref(ref: RefB, values: dict) -> RefB:
    """``ref`` with the loop's variables in its indices replaced by ``values``."""
    def entry(e: tuple | None) -> tuple | None:
        if e is None:
            return None
        return (e[0], *(E.substitute(p, values) if isinstance(p, tuple) else p for p in e[1:]))

    stages = tuple(st if st[0] != "index" else ("index", tuple((v, entry(x)) for v, x in st[1])) for st in ref.stages)
    return dataclasses.replace(ref, dims=tuple(entry(d) for d in ref.dims), stages=stages)


def _effectful(body: list[dict]) -> bool:
    """Whether statements do anything (a snapshot no store used does not)."""
    return any(s["op"] != "snapshot" or "dst" in s for s in body)
