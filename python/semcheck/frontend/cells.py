"""Cells: the granularity at which the checker sees each buffer.

A buffer is split, per dimension, into equal cells whose size is the greatest common
divisor of

* the dimension's size,
* every position and slice boundary the kernel actually uses on that dimension, on any
  device at any grid index of this mesh (found by evaluating every statement the
  kernel reaches, with the same semantics as the Rust compiler), and
* the same numbers for every dimension it is *aligned* with: a DMA's source and
  destination, and a cell-by-cell store's destination and the views it reads, must cut
  their dimensions at the same places, so their dimensions (in order) share one cell
  size (union-find over ``(buffer, dimension)``).

A dimension cut into one cell is dropped from the cell shape. So ``hbm_buf.at[slot]``
makes two cells of ``hbm_buf[2, 8, 128]`` (shape ``[2]``), and psum_scatter's
``pl.ds(0, 8)``/``pl.ds(8, 8)`` halves make ``x_ref[N, 16, 128]`` shape ``[N, 2]``. Views
are then rewritten in cell units: an index ``i`` on a dimension of cell size ``g`` becomes
``exactdiv(i, g)``, which fails (never rounds) if a reached index is not a multiple of
``g``. A view that cannot be expressed in cells (only in statements this mesh never
reaches) is marked ``unaligned``; the checker refuses it if it ever reaches it.
"""

from __future__ import annotations

import math
from typing import AbstractSet, Any, Iterable, Sequence

from . import exprs as E
from .errors import Unsupported
from .bindings import BufferDecl, RefB, load_views, slice_step

#: Statements evaluated at most, over all devices and grid indices.
MAX_STEPS = 5_000_000
#: Iterations of one loop at most.
MAX_ITERATIONS = 1_000_000


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[Any, Any] = {}

    def find(self, x: Any) -> Any:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: Any, b: Any) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb


def _views(stmt: dict) -> list[RefB]:
    op = stmt["op"]
    if op in ("dma_start", "dma_wait"):
        return [stmt["dma"]["src"], stmt["dma"]["dst"]]
    if op == "store":
        return [stmt["dst"], *load_views(stmt["value"])]
    return []


def _cutting_views(stmt: dict) -> list[RefB]:
    """The views whose positions cut their buffers into cells: every view but a load
    that a value computed from every cell it reads (a store not cell by cell) reads
    without a reshape. Such a load reads the cells around what it reads
    (:func:`view_json` with ``cover``): every DMA and store writes whole cells, so the
    races it takes part in are the same, and its value is a function of those cells."""
    if stmt["op"] == "store" and not stmt["cellwise"]:
        return [stmt["dst"], *(r for r in load_views(stmt["value"]) if r.stages)]
    return _views(stmt)


def _alignments(stmt: dict) -> list[tuple[RefB, RefB]]:
    op = stmt["op"]
    if op in ("dma_start", "dma_wait"):
        return [(stmt["dma"]["src"], stmt["dma"]["dst"])]
    if op == "store" and stmt["cellwise"]:
        return [(stmt["dst"], leaf) for leaf in load_views(stmt["value"])]
    return []


class Granularity:
    """Computes the cell size of every buffer dimension of a walked kernel."""

    def __init__(self, buffers: list[BufferDecl], body: list[dict], mesh_axes: dict[str, int],
                 grid: tuple[int, ...], scalars: Sequence[dict] = (), forced: dict[int, list[int]] | None = None):
        self.buffers = buffers
        #: Per buffer, a cell size per dimension its cells must divide (imposed by the
        #: other kernels of a program that share the array).
        self.forced = forced or {}
        self.scalars = list(scalars)
        self.body = body
        self.mesh_axes = mesh_axes
        self.grid = grid
        self.points: dict[tuple[int, int], set[int]] = {}
        self.uf = _UnionFind()
        self.steps = 0
        self.reached: set[int] = set()
        #: Dimensions a slice of dynamic size cuts, per buffer: kept in the cell shape
        #: even when they are one cell, so that a size of 0 can be said.
        self.kept: dict[int, set[int]] = {}
        #: Loads of SMEM scalar state outside its array whose value nothing used, per
        #: array and line: ``(loc, array name, first index seen)``.
        self.outside: dict[tuple, tuple] = {}

    def run(self) -> list[list[int]]:
        """The cell size of every dimension of every buffer.

        Every device is visited at every grid index, but for one shortcut: when no
        expression the visit evaluates reads the device's coordinates and no SMEM scalar
        state exists (which starts per device), every device evaluates the same
        expressions to the same values, so the first device's visit finds every point
        the others would (and fails, if it fails, exactly where the full visit first
        would). psum's cells at N = 64: 64 visits instead of 4,096."""
        self.collect_alignments(self.body)
        devices = math.prod(self.mesh_axes.values())
        same_everywhere = not self.scalars and not _reads_device(self.body)
        for n, coords in enumerate(_product([s for s in self.mesh_axes.values()])):
            if n == 1 and same_everywhere and self.steps * devices <= MAX_STEPS:
                self.steps *= devices
                break
            axes = dict(zip(self.mesh_axes, coords))
            # SMEM scalar state persists from one grid index to the next.
            memory: list[list[int | None]] = [
                next((list(i["values"]) for i in sc["init"] if tuple(i["device"]) == tuple(coords)),
                     [None] * sc["len"]) for sc in self.scalars]
            for ids in _product(list(self.grid)):
                env = E.Env(axes, tuple(ids), self.grid)
                env.memory = memory
                self.visit(self.body, env)
        g: dict[Any, int] = {}
        for b, decl in enumerate(self.buffers):
            forced = self.forced.get(b, [])
            for k, size in enumerate(decl.shape):
                root = self.uf.find((b, k))
                extra = [forced[k]] if k < len(forced) else []
                g[root] = math.gcd(g.get(root, 0), size, *self.points.get((b, k), ()), *extra)
        out = []
        for b, decl in enumerate(self.buffers):
            out.append([g[self.uf.find((b, k))] or 1 for k in range(len(decl.shape))])
        return out

    def collect_alignments(self, body: list[dict]) -> None:
        for stmt in body:
            for ref in _views(stmt):
                for k in _single_elements(ref):
                    self.force(ref.id, k)
                for k, ratio in ref.packed:
                    # A bitcast view's word is one cell (of ``ratio`` elements, or fewer:
                    # then view_json says the view does not fit).
                    self.points.setdefault((ref.id, k), set()).add(ratio)
            for a, b in _alignments(stmt):
                # A dynamic size is compared per device by the checker, when it compiles.
                if all(isinstance(n, int) for n in a.shape() + b.shape()) and a.shape() != b.shape():
                    raise Unsupported("shape mismatch", f"views of shapes {a.shape()} and {b.shape()} are "
                                      "copied into each other", stmt.get("loc"))
                for x, y in zip(a.view_dims(), b.view_dims()):
                    if (a.ratio(x[1]) if x[0] == "base" else 1) != (b.ratio(y[1]) if y[0] == "base" else 1):
                        raise Unsupported("bitcast ref transform", "a view that a bitcast to a wider type packs is "
                                          "copied cell by cell into one it does not pack the same way", stmt.get("loc"))
                    if x[0] == "base" and y[0] == "base":
                        self.uf.union((a.id, x[1]), (b.id, y[1]))
                    elif x[0] == "base" and y[0] == "group":
                        self.force(a.id, x[1])
                    elif y[0] == "base" and x[0] == "group":
                        self.force(b.id, y[1])
            for sub in children(stmt):
                self.collect_alignments(sub)

    def force(self, buffer: int, k: int) -> None:
        """Cells of one element along dimension ``k`` of ``buffer``."""
        self.points.setdefault((buffer, k), set()).add(1)

    def visit(self, body: list[dict], env: E.Env) -> None:
        for stmt in body:
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise Unsupported("kernel size", f"more than {MAX_STEPS} statements executed over the mesh; "
                                  "the kernel is too large to analyse", stmt.get("loc"))
            self.reached.add(id(stmt))
            try:
                self.visit_one(stmt, env)
            except E.EvalError as e:
                raise Unsupported("evaluation", f"{e} (on device {env.axes} at grid {env.program_ids})",
                                  stmt.get("loc")) from None

    def scalar_element(self, scalar: int, i: int) -> int:
        """``i``, checked to be an element of scalar array ``scalar``."""
        sc = self.scalars[scalar]
        if not 0 <= i < sc["len"]:
            raise E.EvalError(f"index {i} out of range for `{sc['name']}` ({sc['len']} elements)")
        return i

    def scalar_value(self, env: E.Env, scalar: int, i: int) -> int:
        """Element ``i`` of scalar array ``scalar``: an error if nothing was stored there."""
        value = env.memory[scalar][i]
        if value is None:
            raise E.EvalError(f"reads element {i} of `{self.scalars[scalar]['name']}` before anything was stored there")
        return value

    def scalar_elements(self, scalar: int, rng: dict, env: E.Env) -> list[int]:
        """The flat elements of scalar array ``scalar`` a ``scalar_copy`` range names."""
        offsets = [0]
        for size, stride in rng["dims"]:
            offsets = [o + i * stride for o in offsets for i in range(size)]
        if "count" in rng:
            # A copy of computed size: its first `count` elements (at most all of them).
            offsets = offsets[: max(0, min(E.evaluate(rng["count"], env), len(offsets)))]
        start = E.evaluate(rng["start"], env)
        return [self.scalar_element(scalar, start + o) for o in offsets]

    def visit_one(self, stmt: dict, env: E.Env) -> None:
        op = stmt["op"]
        if op == "when":
            if E.evaluate(stmt["cond"], env) != 0:
                self.visit(stmt["body"], env)
        elif op == "switch":
            # Clamped into range, as XLA's conditional does.
            i = min(max(E.evaluate(stmt["index"], env), 0), len(stmt["branches"]) - 1)
            self.visit(stmt["branches"][i], env)
        elif op == "scoped":
            self.visit(stmt["body"], env)
        elif op == "scalar_copy":
            src, dst = (self.scalar_elements(stmt["source"], stmt["src"], env),
                        self.scalar_elements(stmt["scalar"], stmt["dst"], env))
            values = [self.scalar_value(env, stmt["source"], i) for i in src]
            for i, v in zip(dst, values):
                env.memory[stmt["scalar"]][i] = v
        elif op == "scalar_load" and not 0 <= E.evaluate(stmt["index"], env) < self.scalars[stmt["scalar"]]["len"]:
            # Mosaic does not check an SMEM index: the word read is another allocation's.
            # Its value is none; using it is an error (a select that discards it, as a
            # kernel's invalid pipeline step does, does not use it).
            sc, i = self.scalars[stmt["scalar"]], E.evaluate(stmt["index"], env)
            why = (f"uses a value loaded from `{sc['name']}` at index {i}, outside its {sc['len']} elements (on device "
                   f"{env.axes} at grid {env.program_ids})")
            env.poisoned[stmt["var"]] = why
            loc = stmt.get("loc")
            self.outside.setdefault((sc["name"], (loc or {}).get("file"), (loc or {}).get("line")), (loc, sc["name"], i))
        elif op in ("scalar_load", "scalar_store"):
            i = self.scalar_element(stmt["scalar"], E.evaluate(stmt["index"], env))
            if op == "scalar_store":
                env.memory[stmt["scalar"]][i] = E.evaluate(stmt["value"], env)
            elif env.memory[stmt["scalar"]][i] is None:
                # Scratch never written here holds what was there before (a dead row's
                # stale index): its value is none; using it is an error.
                env.poisoned[stmt["var"]] = (
                    f"uses a value loaded from element {i} of `{self.scalars[stmt['scalar']]['name']}` before anything "
                    "was stored there")
            else:
                env.poisoned.pop(stmt["var"], None)
                env.vars[stmt["var"]] = self.scalar_value(env, stmt["scalar"], i)
        elif op == "loop":
            values = [E.evaluate(e, env) for e in stmt["init"]]
            k = 0
            while True:
                env.vars.update(zip(stmt["vars"], values))
                if stmt["count"] is not None and k >= stmt["count"]:
                    break
                if stmt["cond"] is not None and E.evaluate(stmt["cond"], env) == 0:
                    break
                if k >= MAX_ITERATIONS:
                    raise E.EvalError(f"a loop runs more than {MAX_ITERATIONS} iterations")
                self.visit(stmt["body"], env)
                values = [E.evaluate(e, env) for e in stmt["next"]]
                k += 1
        else:
            for ref in _cutting_views(stmt):
                for k, d in enumerate(ref.dims):
                    if d[0] == "at":
                        p = E.evaluate(d[1], env)
                        self.points.setdefault((ref.id, k), set()).update((p, p + ref.ratio(k)))
                    elif slice_step(d) != 1:
                        continue  # strided: single elements (``_single_elements``)
                    else:
                        if isinstance(d[2], int):
                            size = d[2]
                        else:
                            size = E.evaluate(d[2], env)
                            self.kept.setdefault(ref.id, set()).add(k)
                            if size == 0:
                                continue  # copies nothing: its start is not read (the checker's too)
                        s = E.evaluate(d[1], env)
                        self.points.setdefault((ref.id, k), set()).update((s, s + size))


def _evaluated(stmt: dict) -> Iterable[E.Expr]:
    """The expressions :meth:`Granularity.visit_one` evaluates for ``stmt`` itself (its
    nested bodies apart); scalar statements are not listed (their state is per device)."""
    op = stmt["op"]
    if op == "when":
        yield stmt["cond"]
    elif op == "switch":
        yield stmt["index"]
    elif op == "loop":
        yield from stmt["init"]
        yield from stmt["next"]
        if stmt["cond"] is not None:
            yield stmt["cond"]
    else:
        for ref in _cutting_views(stmt):
            for d in ref.dims:
                if d[0] == "at":
                    yield d[1]
                elif slice_step(d) == 1:
                    yield d[1]
                    if not isinstance(d[2], int):
                        yield d[2]


def _reads_device(body: list[dict]) -> bool:
    """Whether an expression the cell pass evaluates in ``body`` reads a mesh coordinate
    (``axis_index``)."""
    return any(any(E.mentions(e, "axis_index") for e in _evaluated(stmt)) or any(_reads_device(b) for b in children(stmt))
               for stmt in body)


def _single_elements(ref: RefB) -> list[int]:
    """The array dimensions a view needs cut into single elements: those a reshape merges
    or splits (the checker reshapes cells, so a cell must be an element there) and those
    a strided slice steps over."""
    merged = [k for st in ref.stages if st[0] == "reshape" for k in st[2]]
    return merged + [k for k, d in enumerate(ref.dims) if d[0] == "slice" and slice_step(d) != 1]


def children(stmt: dict) -> list[list[dict]]:
    """The statement lists nested in ``stmt`` (bodies, branches)."""
    op = stmt["op"]
    if op in ("when", "scoped", "loop"):
        return [stmt["body"]]
    if op == "switch":
        return list(stmt["branches"])
    return []


def _product(sizes: list[int]) -> Iterable[tuple[int, ...]]:
    if not sizes:
        yield ()
        return
    total = math.prod(sizes)
    for flat in range(total):
        idx = []
        for s in reversed(sizes):
            idx.append(flat % s)
            flat //= s
        yield tuple(reversed(idx))


def cell_dims(decl: BufferDecl, g: list[int], kept: AbstractSet[int] = frozenset()) -> list[int]:
    """The array dimensions the cell shape keeps: those cut into more than one cell, and
    those in ``kept`` (cut by a slice of dynamic size)."""
    return [k for k, (size, gk) in enumerate(zip(decl.shape, g)) if size // gk > 1 or k in kept]


def cell_shape(decl: BufferDecl, g: list[int], kept: AbstractSet[int] = frozenset()) -> list[int]:
    """The shape in cells, along :func:`cell_dims`."""
    return [decl.shape[k] // g[k] for k in cell_dims(decl, g, kept)]


def view_json(ref: RefB, decl: BufferDecl, g: list[int], kept: AbstractSet[int] = frozenset(),
              cover: bool = False) -> dict:
    """A view in cell units (SCHEMA.md ``View``), on the cell shape of
    :func:`cell_shape`. With ``cover`` (a load whose value is a function of every cell
    it reads, :func:`_cutting_views`), a view that is not whole cells is the cells around
    it."""
    indices = []
    for k, (d, size) in enumerate(zip(ref.dims, decl.shape)):
        gk = g[k]
        n = size // gk
        shown = n > 1 or k in kept
        if ref.ratio(k) != 1 and gk != ref.ratio(k):
            return {"buffer": ref.id, "unaligned": f"a bitcast view packs {ref.ratio(k)} elements of dimension {k} of "
                                                   f"`{decl.name}` into one word, and its cells there are {gk} elements"}
        if d[0] == "at" and ref.ratio(k) != 1:
            if shown:
                indices.append({"at": E.to_json(E.op("div", d[1], E.const(gk)))})
            continue
        if d[0] == "at":
            if gk != 1 and not (cover and not ref.stages):
                return {"buffer": ref.id, "unaligned": f"index on dimension {k} of `{decl.name}` is inside a cell of {gk}"}
            if shown:
                indices.append({"at": E.to_json(E.op("div", d[1], E.const(gk)))})
        else:
            start, length = d[1], d[2]
            step = slice_step(d)
            if not isinstance(length, int):
                if not shown:
                    return {"buffer": ref.id, "unaligned": f"slice of dynamic size on dimension {k} of `{decl.name}`, "
                                                           "in a statement this mesh never reaches"}
                # Every reached size is a multiple of the cell: it is among the points.
                indices.append({"slice": {"start": E.to_json(E.op("exactdiv", start, E.const(gk))),
                                          "size": E.to_json(E.op("exactdiv", length, E.const(gk))),
                                          **_step_json(step)}})
                continue
            if cover and not ref.stages and gk != 1:
                if shown:
                    indices.append({"slice": _covering(start, length, gk)})
                continue
            if length % gk != 0:
                return {"buffer": ref.id,
                        "unaligned": f"slice of {length} on dimension {k} of `{decl.name}` is not a multiple of its cells of {gk}"}
            if shown:
                # A size of 0 (computed: a pipeline's step out of range copies nothing) is
                # sent as an expression, which the checker reads as copying nothing (a
                # constant 0 is a malformed view of the DSL's).
                cells: Any = length // gk if length else {"op": "mul", "args": [{"const": 0}, {"const": 1}]}
                indices.append({"slice": {"start": E.to_json(E.op("exactdiv", start, E.const(gk))),
                                          "size": cells, **_step_json(step)}})
    out: dict[str, Any] = {"buffer": ref.id, "indices": indices}
    if ref.stages:
        out["stages"] = _stages_json(ref, decl, g, kept)
    return out


def _covering(start: E.Expr, length: int, g: int) -> dict:
    """The slice, in cells of ``g``, of the cells around ``length`` positions from
    ``start`` (a slice of a dimension cut into cells has step 1)."""
    first = E.op("div", start, E.const(g))
    end = E.op("div", E.op("add", start, E.const(length + g - 1)), E.const(g))
    size = E.op("sub", end, first)
    return {"start": E.to_json(first), "size": size[1] if size[0] == "const" else E.to_json(size)}


def _stages_json(ref: RefB, decl: BufferDecl, g: list[int], kept: AbstractSet[int]) -> list[dict]:
    """A view's reshapes and the indexing after them, in cells: an array dimension kept
    through them is there whole (its indexing is in ``indices``), unless it has one cell;
    dimensions a reshape made are single elements (:func:`_single_elements`)."""

    def cells(v: tuple) -> int | None:
        """The size in cells of a view dimension, ``None`` when the cell view has none."""
        if v[0] == "group":
            return v[1]
        if v[0] == "unit":
            return None
        d, k = ref.dims[v[1]], v[1]
        if d[0] != "slice" or not (decl.shape[k] // g[k] > 1 or k in kept):
            return None
        return d[2] // g[k]

    out: list[dict[str, Any]] = []
    for stage in ref.stages:
        if stage[0] == "reshape":
            out.append({"reshape": [n for n in map(cells, stage[1]) if n is not None]})
            continue
        indices = []
        for v, entry in stage[1]:
            if entry is None:
                n = cells(v)
                if n is not None:
                    indices.append({"slice": {"start": E.to_json(E.const(0)), "size": n}})
            elif entry[0] == "at":
                indices.append({"at": E.to_json(entry[1])})
            else:
                size = entry[2] if isinstance(entry[2], int) else E.to_json(entry[2])
                indices.append({"slice": {"start": E.to_json(entry[1]), "size": size, **_step_json(entry[3])}})
        out.append({"indices": indices})
    return out


def _step_json(step: int) -> dict:
    return {"step": step} if step != 1 else {}
