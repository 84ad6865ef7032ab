"""State of one kernel build: the blocks being filled, declared variables, unique names, the
function being built (the kernel or an inlined ``@func``) and error reporting.

A value of the front end (:data:`Value`) is an IR operand, an IR array, or a :class:`PyVal`: a
compile-time Python value (a literal, a ``Comptime`` value, a module, a type, an ``@func`` …)
that becomes IR only when it meets a typed value. This module knows nothing of Python syntax
beyond locating nodes.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NoReturn

from ..errors import CompilationError
from ..ir import (
    LANE_WISE_OPS,
    LINE_OPS,
    Builtin,
    Const,
    Elem,
    Fragment,
    Instr,
    Local,
    LocalArray,
    Op,
    Operand,
    Param,
    SharedArray,
    SourceLoc,
    Stmt,
)
from .syntax import ParsedFunction
from .types import ElemVar

if TYPE_CHECKING:
    from .assignment import LoopExits

__all__ = [
    "BuilderState",
    "Fields",
    "Frame",
    "LiteralPick",
    "PyVal",
    "Return",
    "Several",
    "Value",
    "View",
    "described",
    "is_array",
    "is_line",
    "width_of",
]


@dataclass(frozen=True, slots=True)
class PyVal:
    """A compile-time Python value."""

    value: object


@dataclass(frozen=True, slots=True)
class LiteralPick:
    """Compile-time numbers picked at run time: ``a if cond else b`` (``key`` the bool
    condition, ``values`` ``(a, b)``) or ``TABLE[i]`` (``key`` the integer index into the
    tuple). Like a literal, it takes the type its context asks for, and its own default alone."""

    key: Operand
    values: tuple[object, ...]

    @property
    def typical(self) -> object:
        """The value whose default type the pick takes alone (a float over an int)."""
        return next((v for v in self.values if isinstance(v, float)), self.values[0])


@dataclass(frozen=True, slots=True)
class View:
    """``a[lo:hi]`` of a global, shared or local array: ``length`` elements of ``base`` from
    ``offset`` on (both ``u32`` operands, the view inside the array). Index ``i`` of the view is
    element ``offset + i`` of ``base``; an ``i`` past ``length`` is outside (a checked read
    gives 0, a checked write is dropped)."""

    base: Param | SharedArray | LocalArray
    offset: Operand
    length: Operand

    @property
    def elem(self) -> Elem:
        return self.base.elem

    def __str__(self) -> str:
        return f"{self.base}[{self.offset}:+{self.length}]"


@dataclass(frozen=True, slots=True)
class Fields:
    """A dataclass kernel parameter in the body (held by a :class:`PyVal`): ``p.x`` is the
    value of its field ``x``."""

    cls: type
    values: tuple[tuple[str, Value], ...]

    def get(self, name: str) -> Value | None:
        return next((v for n, v in self.values if n == name), None)


@dataclass(frozen=True, slots=True)
class Several:
    """The values of a tuple ``(a, b)`` or of a ``@func`` that returns several. They are only
    unpacked by an assignment (``x, y = f(v)``) or returned from a ``@func``."""

    items: tuple[Value, ...]


Value = (
    Const
    | Local
    | Builtin
    | Param
    | SharedArray
    | LocalArray
    | Fragment
    | View
    | PyVal
    | LiteralPick
    | Several
)


def described(value: Value) -> str:
    """``value`` as a message names it: a compile-time value as Python writes it (a class by
    its name), an array by its own name, any other as a run-time value."""
    if isinstance(value, PyVal):
        v = value.value
        return v.__name__ if isinstance(v, type) else repr(v)
    return f"the array {value}" if is_array(value) else "a run-time value"


def is_array(value: Value) -> bool:
    """True for global array/tensor parameters, shared and local arrays, and views of them."""
    if isinstance(value, Param):
        return value.is_array
    return isinstance(value, SharedArray | LocalArray | View)


def is_line(value: Value) -> bool:
    """True for a line (a local of several lanes)."""
    return isinstance(value, Local) and value.width > 1


def width_of(value: Value) -> int:
    """The lanes of a line; 1 for anything else."""
    return value.width if isinstance(value, Local) else 1


@dataclass(slots=True)
class Return:
    """Where the ``return`` statements of an inlined ``@func`` deliver.

    A return nested in a runtime ``if`` or loop leaves a loop that wraps the function's body
    (``wrapped``); from inside the function's own loops it also sets ``done``, which each of
    those loops tests after it ends to leave the next enclosing loop.
    """

    elems: tuple[Elem | None, ...] | None  #: the annotated result elements, if any
    direct: bool  #: the only return is the last statement: its value is the result as is
    several: bool | None = None  #: it returns a tuple (known from the annotation or a return)
    depth: int = 0  #: the block depth of the function's top level
    finished: bool = False  #: a top-level return was built; the rest is unreachable
    result: Value | None = None
    locals: tuple[Local, ...] | None = None  #: where the returns write (several returns)
    done: Local | None = None
    wrapped: bool = False
    in_loops: int = 0  #: returns made inside the function's runtime loops so far
    has_value: bool | None = None


@dataclass(slots=True)
class Frame:
    """The function being built: its names, element bindings and loop nesting.

    ``scope`` holds the names assigned on every path to the point being built (see
    :mod:`.assignment`). ``loops`` holds ``"loop"`` for IR loops and ``"unroll"`` for loops
    unrolled at build time; ``exits`` the paths that leave each enclosing IR loop.
    """

    parsed: ParsedFunction
    scope: dict[str, Value]
    bindings: dict[ElemVar, Elem]
    locals_by_name: dict[str, Local] = field(default_factory=dict)
    loops: list[str] = field(default_factory=list)
    ret: Return | None = None
    #: some path reaches the point being built (none after a break, continue or return)
    live: bool = True
    exits: list[LoopExits] = field(default_factory=list)
    #: why each name assigned on some paths only is not in ``scope``
    unsure: dict[str, str] = field(default_factory=dict)


class BuilderState:
    """Mutable state of one build. Not thread-safe; one build runs on one thread."""

    def __init__(self, kernel_name: str, frame: Frame) -> None:
        self.kernel_name = kernel_name
        self.frame = frame
        self.blocks: list[list[Stmt]] = [[]]
        self.locals: dict[Local, None] = {}
        self.fresh: set[Local] = set()
        self.shared: list[SharedArray] = []
        self.local_arrays: list[LocalArray] = []
        self.fragments: list[Fragment] = []
        self.used: set[str] = set()
        self.counter = 0
        self.loc: SourceLoc | None = None
        self.name_hint: str | None = None
        self.inlining: list[object] = []
        #: the shapes of multi-dimensional shared and local arrays, by array name
        self.shapes: dict[str, tuple[int, ...]] = {}
        #: constant tables indexed at run time, by their values, and their local arrays
        self.tables: dict[tuple[Const, ...], LocalArray] = {}
        #: the most units per cube the kernel states (``launch_bounds``, ``cube_units``); None:
        #: no bound; with ``exact_units`` (``cube_units``), the units of every cube
        self.max_units: int | None = None
        self.exact_units = False
        #: cubes asked to fit one multiprocessor at once (``launch_bounds(n, cubes)``)
        self.min_cubes: int | None = None

    # -- errors -----------------------------------------------------------------------------

    def comptime_int(
        self, value: Value, fits: Callable[[int], bool], need: str, node: ast.AST
    ) -> int:
        """``value`` as a compile-time int (not a bool) for which ``fits`` holds; else fail
        with ``"{need}, got {the value, or 'a run-time value'}"``."""
        n = value.value if isinstance(value, PyVal) else None
        if not isinstance(n, int) or isinstance(n, bool) or not fits(n):
            self.fail(f"{need}, got {described(value)}", node)
        return n

    def fail(self, message: str, node: ast.AST | None = None) -> NoReturn:
        """Raise a CompilationError at ``node`` (else the current statement)."""
        parsed = self.frame.parsed
        if node is not None:
            line = parsed.line(node)
        elif self.loc is not None:
            line = self.loc.line
        else:
            line = parsed.line(parsed.tree)
        if parsed.kind == "kernel":
            where = f"kernel '{self.kernel_name}'"
        else:
            where = f"@func '{parsed.name}' (inlined into kernel '{self.kernel_name}')"
        raise CompilationError(
            f"{parsed.file}:{line}: in {where}: {message}", file=parsed.file, line=line
        )

    def locate(self, node: ast.AST) -> SourceLoc:
        return SourceLoc(self.frame.parsed.file, self.frame.parsed.line(node))

    # -- names and variables ----------------------------------------------------------------

    def unique(self, base: str) -> str:
        """A name not used yet in this kernel: ``base``, else ``base_1``, ``base_2`` …"""
        name, n = base, 0
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.used.add(name)
        return name

    def new_local(self, base: str, elem: Elem, width: int = 1) -> Local:
        local = Local(self.unique(base), elem, width)
        self.locals[local] = None
        return local

    def temp(self, elem: Elem, width: int = 1) -> Local:
        """A fresh temporary (``_t<n>``), a line of ``width`` lanes when it is above 1."""
        name = f"_t{self.counter}"
        while name in self.used:
            self.counter += 1
            name = f"_t{self.counter}"
        self.counter += 1
        return self.new_local(name, elem, width)

    # -- emission ---------------------------------------------------------------------------

    def constant_table(self, values: tuple[Const, ...]) -> LocalArray:
        """A local array holding ``values``, filled at the kernel's start (once per unit,
        before any use) and shared by every use of the same values."""
        if values not in self.tables:
            array = LocalArray(self.unique("_table"), values[0].elem, len(values))
            self.local_arrays.append(array)
            at = [Const(k, Elem.U32) for k in range(len(values))]
            fill = [
                Instr(Op.INDEX_ASSIGN, None, (array, k, v)) for k, v in zip(at, values, strict=True)
            ]
            self.blocks[0][:0] = fill
            self.tables[values] = array
        return self.tables[values]

    def append(self, stmt: Stmt) -> None:
        self.blocks[-1].append(stmt)

    def emit(
        self,
        op: Op,
        elem: Elem,
        *args: Operand | Param | SharedArray | LocalArray,
        width: int | None = None,
    ) -> Local:
        """Append ``t = op(*args)`` with a fresh temporary ``t`` of ``elem``; return ``t``.

        ``t`` is a line of ``width`` lanes when given; else, for a lane-wise operation, of the
        width of its line operands (see :mod:`ruda_core.ir.ops`).

        :raises CompilationError: for lines of two widths, or a line where ``op`` takes scalars.
        """
        out = self.temp(elem, self.lanes(op, args) if width is None else width)
        self.fresh.add(out)
        self.append(Instr(op, out, args, self.loc))
        return out

    def emit_to(
        self, out: Local | None, op: Op, *args: Operand | Param | SharedArray | LocalArray
    ) -> None:
        self.lanes(op, args)
        self.append(Instr(op, out, args, self.loc))

    def lanes(self, op: Op, args: tuple[object, ...]) -> int:
        """The width of ``op``'s result from its line operands (1 when there are none)."""
        widths = sorted({a.width for a in args if isinstance(a, Local) and a.width > 1})
        if widths and op not in LANE_WISE_OPS | LINE_OPS:
            line = next(a for a in args if isinstance(a, Local) and a.width > 1)
            self.fail(f"{op} takes scalars, but '{line.name}' is a line of {line.type_text}")
        if len(widths) > 1:
            self.fail(f"lines of {' and '.join(map(str, widths))} lanes do not combine")
        return widths[0] if widths and op in LANE_WISE_OPS else 1

    def write(self, dest: Local, value: Operand) -> None:
        """``dest = value``: retargets the instruction that just computed a fresh temporary
        ``value`` instead of copying it, so generated code reads ``y = a + b``."""
        block = self.blocks[-1]
        last = block[-1] if block else None
        if (
            isinstance(value, Local)
            and value in self.fresh
            and isinstance(last, Instr)
            and last.out == value
        ):
            block[-1] = Instr(last.op, dest, last.args, last.loc)
            self.fresh.discard(value)
            del self.locals[value]
            return
        self.emit_to(dest, Op.ASSIGN, value)

    def pin(self, value: Value) -> None:
        """Mark ``value`` as bound to a name, so :meth:`write` never retargets it."""
        if isinstance(value, Local):
            self.fresh.discard(value)

    @contextmanager
    def capture(self) -> Iterator[list[Stmt]]:
        """Collect the statements appended inside the ``with`` into a new list."""
        block: list[Stmt] = []
        self.blocks.append(block)
        try:
            yield block
        finally:
            self.blocks.pop()

    @contextmanager
    def into(self, block: list[Stmt]) -> Iterator[None]:
        """Append to ``block`` inside the ``with``."""
        self.blocks.append(block)
        try:
            yield
        finally:
            self.blocks.pop()
