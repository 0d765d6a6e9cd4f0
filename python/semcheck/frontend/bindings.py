"""What the walker binds jaxpr variables to, and the declarations it makes.

Every jaxpr variable is bound to one of:

* :class:`ExprB`: an integer or boolean scalar computed from ``axis_index``,
  ``program_id``, literals and loop variables (an :mod:`~semcheck.frontend.exprs` tree);
* :class:`RefB`: a buffer or semaphore, with the ``.at[...]`` views applied so far,
  composed into one selection per dimension of the declared array;
* :class:`ValB`: data (an array or a scalar loaded from a buffer, and compute on it);
* an index array (:class:`~semcheck.frontend.vectors.IdxVec`), :class:`SemRead` (a
  semaphore's value, accepted only where it reaches debug output), or :data:`POISONED`
  (the result of an equation that could not be translated).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from . import exprs as E


class Tainted(Exception):
    """An equation read a :class:`Poisoned` binding: it is skipped, and its results are
    poisoned in turn."""


@dataclasses.dataclass(frozen=True)
class ExprB:
    """An index value: an expression and its dtype kind (``i`` int, ``b`` bool)."""

    expr: E.Expr
    kind: str


@dataclasses.dataclass(frozen=True)
class RefB:
    """A view of a buffer or semaphore declaration.

    ``dims`` has one entry per dimension of the declared array: ``("at", expr)`` (the
    dimension is dropped) or ``("slice", start_expr, size[, step])``, the size an int or,
    for a slice of dynamic size (DMAs only), an expression, the step 1 when absent.

    After a ``reshape`` view, ``stages`` holds what follows, in order, and ``view`` the
    view's dimensions now. A dimension is ``("base", k)`` while it is the array's own
    dimension ``k`` (indexing it is composed into ``dims``: a reshape of other dimensions
    does not move it), ``("group", size)`` when a reshape merged or split it out of the
    array's dimensions (indexed in its stages), or ``("unit",)`` for a dimension of size 1
    a reshape added. A stage is ``("reshape", view, merged)`` (the dimensions after it, and
    the array dimensions it merged or split: the checker's cells are single elements
    along those) or ``("index", entries)``, one ``(dimension, index or None)`` per
    dimension of the view then (``None``: composed into ``dims``, or a unit dimension).

    A bitcast to a wider type packs ``ratio`` consecutive elements of the second-minor
    dimension into one (JAX's TPU layout): ``packed`` holds ``(k, ratio)`` for such an
    array dimension ``k``, whose ``dims`` entry stays in the array's elements (an ``at``
    there names the first of ``ratio`` elements) while the view counts its words; the
    checker's cells along it are then ``ratio`` elements each (cells.py).
    """

    what: str  # "buffer" | "sem"
    id: int
    dims: tuple
    stages: tuple = ()
    view: tuple = ()
    packed: tuple = ()

    def ratio(self, k: int) -> int:
        """How many elements of array dimension ``k`` one element of the view packs."""
        return next((r for j, r in self.packed if j == k), 1)

    def shape(self) -> tuple[int, ...]:
        if not self.stages:
            return tuple(_words(d[2], self.ratio(k)) for k, d in enumerate(self.dims) if d[0] == "slice")
        return tuple(self.view_size(v) for v in self.view)

    def view_size(self, v: tuple) -> Any:
        """The size of one of the view's dimensions (``view``)."""
        if v[0] == "base":
            return _words(self.dims[v[1]][2], self.ratio(v[1]))
        return v[1] if v[0] == "group" else 1

    def view_dims(self) -> tuple:
        """The view's dimensions, as in ``view`` (the kept array dimensions before any
        reshape)."""
        if self.stages:
            return self.view
        return tuple(("base", k) for k, d in enumerate(self.dims) if d[0] == "slice")


def _words(size: Any, ratio: int) -> Any:
    """A size in elements as a size in words of ``ratio`` elements."""
    if ratio == 1:
        return size
    return size // ratio if isinstance(size, int) else E.op("div", size, E.const(ratio))


@dataclasses.dataclass(frozen=True)
class ValB:
    """Data: a value tree (see :func:`value_json`), its shape and dtype, and whether
    it is computed cell by cell (elementwise, no broadcasting of arrays)."""

    node: tuple
    shape: tuple
    dtype: str
    cellwise: bool


@dataclasses.dataclass(frozen=True)
class SemRead:
    """The value of a ``pl.semaphore_read`` (and anything computed from it): a semaphore's
    count at one moment of one schedule. Accepted while it reaches only debug output (or
    nothing); any use that steers the kernel (control flow, an index, an amount, a device
    id, data stored into a buffer) is refused by name (``loc``: where it was read)."""

    loc: Any
    semaphore: str


@dataclasses.dataclass(frozen=True)
class Poisoned:
    """The result of an equation the walker could not translate (see ``errors``)."""


POISONED = Poisoned()


@dataclasses.dataclass
class BufferDecl:
    """A buffer of the kernel: an operand, scratch, a scoped allocation, or a private
    buffer of the walker's (a snapshot, a data carry, a window's loads)."""

    name: str
    space: str
    role: str
    shape: tuple[int, ...]
    dtype: str
    itemsize: int
    shared: bool = False
    scoped: bool = False
    aliases: list[str] = dataclasses.field(default_factory=list)
    #: A scalar-prefetch operand's (or whole-array SMEM input's) values, per device
    #: coordinates (mesh order): the values the script passes, the entry contents of the
    #: kernel's scalar state.
    known: dict | None = None


@dataclasses.dataclass
class SemDecl:
    """A semaphore (or array of them) of the kernel: ``kind`` is ``dma``, ``regular`` or
    ``barrier``; ``role`` is ``input``, ``output`` or ``input_output`` (an input aliased
    to an output: taken and handed back out) for a ``pltpu.SEMAPHORE``-space operand (one
    a kernel takes from, or hands to, another kernel), else ``scratch``."""

    name: str
    kind: str
    shape: tuple[int, ...]
    scoped: bool = False
    role: str = "scratch"


#: The snapshot mark of a data carry's load: its buffer changes only at the end of an
#: iteration, so the load is current wherever the carry is used.
CARRY = "carry"


def load_views(node: tuple) -> list[RefB]:
    """The views a value tree reads."""
    if node[0] == "load":
        return [node[1]]
    if node[0] == "add":
        return load_views(node[1]) + load_views(node[2])
    if node[0] == "fn":
        return [r for a in node[2] for r in load_views(a)]
    return []


def slice_step(dim: tuple) -> int:
    """The step of a slice entry of ``RefB.dims``."""
    return dim[3] if len(dim) > 3 else 1


def itemsize(dtype: str) -> int:
    """The bytes of one element of ``dtype`` (a name): ``float0`` counts 1, a name numpy
    does not know 4."""
    if dtype == "float0":
        return 1
    try:
        return int(np.dtype(dtype).itemsize)
    except TypeError:
        return 4


def mesh_of(names: Any) -> str:
    """Mesh axis names as a report shows them: ``x,y``."""
    return ",".join(names)
