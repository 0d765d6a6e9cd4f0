"""What the parts of the kernel walker see of each other, for the type checker.

:class:`~semcheck.frontend.walker.KernelWalker` is made of parts, the classes of
:mod:`.views`, :mod:`.compute`, :mod:`.scalars`, :mod:`.accesses` and :mod:`.control`,
whose methods use the walker's state and methods of the walker and of the other parts.
mypy checks each part on its own, so :class:`WalkerState` declares those, and each part
derives from :data:`WalkerPart`: :class:`WalkerState` to mypy, ``object`` at run time, so
the walker's classes and behaviour are the same as without it.

To mypy, a part's method overrides its declaration here (and is checked against it), and
each declared method is abstract, so the walker cannot be built (``kernel.py``) until one
of its classes defines it. (A ``typing.Protocol`` would not do: mypy reads a part's
``self.loc = loc`` as its own definition of a protocol's attribute, of a type it cannot
infer.)
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, AbstractSet, Any, Sequence

if TYPE_CHECKING:
    from jax._src import core as jax_core

    from . import exprs as E
    from .bindings import BufferDecl, ExprB, RefB, SemDecl, SemRead, ValB
    from .errors import Unsupported
    from .scalars import RecordedCopy


class WalkerState:
    """The state and methods of :class:`~semcheck.frontend.walker.KernelWalker` that its
    parts use beyond their own (what each means: where it is defined)."""

    # ------------------------------------------------------------------ state (walker.py)

    mesh_axes: dict[str, int]
    tree_sizes: dict[int, tuple[tuple, int]]
    buffers: list[BufferDecl]
    semaphores: list[SemDecl]
    blocks: list[list[dict]]
    ignored: list[dict]
    errors: list[Unsupported]
    epoch: int
    writes: dict[int, int]
    loc: dict | None
    data_smem: AbstractSet[int]
    scalar_of: dict[int, int]
    scalars: list[dict]
    too_large: set[int]
    data_stored: set[int]
    table_of: dict[int, int]
    windows: AbstractSet[int]
    windows_found: set[int]
    recorded: dict[str, dict[tuple, list]]
    recorded_tables: dict[str, RecordedCopy]
    source_info: Any
    written: set[int]
    probes: dict[int, RefB]

    # ------------------------------------------------------------------ walker.py

    @abstractmethod
    def unsupported(self, construct: str, message: str) -> Unsupported: ...

    @abstractmethod
    def unknown_primitive(self, name: str, what: str) -> Unsupported: ...

    @abstractmethod
    def fresh(self, hint: str) -> str: ...

    @abstractmethod
    def emit(self, stmt: dict) -> None: ...

    @abstractmethod
    def emit_quiet(self, stmt: dict) -> None: ...

    @abstractmethod
    def declare_buffer(self, decl: BufferDecl) -> int: ...

    @abstractmethod
    def ref_binding(self, aval: Any, name: str, role: str, *, scoped: bool, shared_hbm: bool,
                    default_space: str = "vmem") -> RefB: ...

    @abstractmethod
    def read(self, env: dict, x: Any, raw: bool = False) -> Any: ...

    @abstractmethod
    def literal(self, v: Any) -> Any: ...

    @abstractmethod
    def expr(self, env: dict, x: Any, what: str) -> E.Expr: ...

    @abstractmethod
    def walk(self, jaxpr: jax_core.Jaxpr, env: dict) -> list: ...

    @abstractmethod
    def read_or_poisoned(self, env: dict, v: Any) -> Any: ...

    @abstractmethod
    def bind_outs(self, env: dict, eqn: Any, outs: Sequence[Any]) -> None: ...

    @abstractmethod
    def steers(self, read: SemRead) -> Unsupported: ...

    # ------------------------------------------------------------------ views.py

    @abstractmethod
    def view(self, env: dict, node: Any, what: str) -> RefB: ...

    @abstractmethod
    def apply_transform(self, env: dict, ref: RefB, t: Any, what: str) -> RefB: ...

    @abstractmethod
    def indexed(self, env: dict, ref_var: Any, flat: Sequence[Any], tree: Any, what: str) -> RefB: ...

    @abstractmethod
    def name_of(self, ref: RefB) -> str: ...

    # ------------------------------------------------------------------ compute.py

    @abstractmethod
    def as_value(self, b: Any) -> ValB: ...

    @abstractmethod
    def bounded(self, node: tuple) -> tuple: ...

    # ------------------------------------------------------------------ scalars.py

    @abstractmethod
    def scalar_state(self, ref: RefB, window: tuple = ()) -> int | None: ...

    @abstractmethod
    def scalar_load(self, ref: RefB, sid: int, aval: Any) -> ExprB: ...

    @abstractmethod
    def scalar_store(self, ref: RefB, sid: int, value: Any) -> None: ...

    @abstractmethod
    def scalar_swap(self, eqn: Any, env: dict, ref: RefB, sid: int, value: Any) -> None: ...

    # ------------------------------------------------------------------ accesses.py

    @abstractmethod
    def load(self, ref: RefB, aval: Any) -> ValB: ...

    @abstractmethod
    def register(self, what: str, shape: tuple, dtype: str, itemsize: int) -> RefB: ...

    @abstractmethod
    def store(self, dst: RefB, val: ValB) -> None: ...

    # ------------------------------------------------------------------ control.py

    @abstractmethod
    def block(self, fn: Any) -> tuple[list, Any]: ...


#: The base of the walker's parts: :class:`WalkerState` to mypy only.
if TYPE_CHECKING:
    WalkerPart = WalkerState
else:
    WalkerPart = object
