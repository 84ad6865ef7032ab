"""Statements, structured control flow and the :class:`KernelDefinition`.

A kernel is a tree of statements: instructions, ``If``, ``RangeLoop``, ``Loop``, ``Break``,
``Continue`` and ``Return``. There is no goto; every backend can emit it as structured code and
the NumPy device can run it as masks.

**The launch ABI** (what ``ComputeServer.launch`` receives for a definition) is fixed here:

* ``bindings``: one per ARRAY or TENSOR parameter, in parameter order;
* ``scalars``: one per SCALAR parameter, in parameter order, already of the parameter's type;
* ``metadata``: ``u32`` values: the length (elements) of every ARRAY/TENSOR parameter in
  parameter order, then for every TENSOR in order its ``rank`` shape extents and ``rank``
  strides (elements). See :meth:`KernelDefinition.metadata_layout`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import cast

from ..errors import CompilationError
from .matrix import Fragment, MatrixConfig
from .ops import Op
from .printing import PrintFormat
from .variables import (
    ArrayVar,
    Builtin,
    BuiltinKind,
    Const,
    Local,
    LocalArray,
    Operand,
    Param,
    SharedArray,
    SourceLoc,
)

__all__ = [
    "DYNAMIC_SHARED_ALIGN",
    "Block",
    "Break",
    "Continue",
    "If",
    "Instr",
    "KernelDefinition",
    "Loop",
    "RangeLoop",
    "Return",
    "Stmt",
    "rewrite",
    "walk",
]


#: Each dynamic shared array of a cube starts at a multiple of this many bytes.
DYNAMIC_SHARED_ALIGN = 16


@dataclass(frozen=True, slots=True)
class Instr:
    """``out = op(*args)``. ``out`` is ``None`` for operations without a result (stores,
    barriers) and may be ``None`` for atomics whose old value is unused. ``format`` is the text
    of a ``PRINT`` (``None`` for every other operation)."""

    op: Op
    out: Local | None
    args: tuple[Operand | ArrayVar | Fragment, ...]
    loc: SourceLoc | None = field(default=None, compare=False)
    format: PrintFormat | None = None

    def __str__(self) -> str:
        args = ", ".join(str(a) for a in self.args)
        if self.format is not None:
            args = f"{self.format}" + (f", {args}" if args else "")
        lhs = f"{self.out}: {self.out.type_text} = " if self.out is not None else ""
        return f"{lhs}{self.op}({args})"


@dataclass(frozen=True, slots=True)
class If:
    """Run ``then`` where ``cond`` (bool) holds, else ``orelse``."""

    cond: Operand
    then: Block
    orelse: Block = ()
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class RangeLoop:
    """``for var in range(start, end, step)`` with Python's meaning. ``step`` is a non-zero
    constant; ``start`` and ``end`` are evaluated once, before the first iteration, and have
    ``var``'s type. ``var`` holds the iteration's value inside ``body``."""

    var: Local
    start: Operand
    end: Operand
    step: Const
    body: Block
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Loop:
    """Repeat ``body`` until a ``Break`` or ``Return`` leaves it."""

    body: Block
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Break:
    """Leave the innermost loop."""

    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Continue:
    """Go to the next iteration of the innermost loop."""

    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Return:
    """End the unit's execution of the kernel."""

    loc: SourceLoc | None = field(default=None, compare=False)


Stmt = Instr | If | RangeLoop | Loop | Break | Continue | Return
Block = tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class KernelDefinition:
    """One specialised kernel: hashable, comparable, and printable as a stable text form.

        ``locals`` lists every :class:`Local` the body writes (declared once, at the top, by
        emitters); ``shared`` and ``local_arrays`` list the arrays, ``fragments`` the cooperative
        matrices (one per plane). ``max_units`` is the most units a cube of any launch may have, as
        the kernel states it (``launch_bounds``; ``None``: the device's limit alone): a target may
        fit the kernel's registers to it, and launches of larger cubes are refused. With
        ``exact_units`` every cube has exactly ``max_units`` units (``cube_units``): launches of
        other cubes are refused too, and a target may fold what depends on the cube's size (CUDA's
        warp masks where the cube is whole warps). ``min_cubes`` is how many such cubes the kernel
    asks to fit one multiprocessor at once (``launch_bounds(n, cubes)``): a target may limit the
    registers per unit for it. ``source`` locates the Python function.
        :meth:`fingerprint` is a content hash suitable for cache keys.

        :raises CompilationError: for a ``max_units`` below 1, or ``exact_units`` or ``min_cubes``
            without it, or a ``min_cubes`` below 1.
    """

    name: str
    params: tuple[Param, ...]
    locals: tuple[Local, ...]
    shared: tuple[SharedArray, ...]
    local_arrays: tuple[LocalArray, ...]
    body: Block
    fragments: tuple[Fragment, ...] = ()
    source: SourceLoc | None = field(default=None, compare=False)
    max_units: int | None = None
    exact_units: bool = False
    min_cubes: int | None = None

    def __post_init__(self) -> None:
        if self.max_units is not None and self.max_units < 1:
            raise CompilationError(
                f"kernel {self.name} states at most {self.max_units} units per cube; a cube "
                "holds at least 1 unit. State 1 or more, or no bound"
            )
        if self.exact_units and self.max_units is None:
            raise CompilationError(
                f"kernel {self.name} states an exact cube without its units; give max_units"
            )
        if self.min_cubes is not None and (self.max_units is None or self.min_cubes < 1):
            raise CompilationError(
                f"kernel {self.name} asks for {self.min_cubes} cubes at once; that needs "
                "max_units and at least 1 cube"
            )

    @property
    def array_params(self) -> tuple[Param, ...]:
        """ARRAY and TENSOR parameters, in order: the order of the launch's bindings."""
        return tuple(p for p in self.params if p.is_array)

    @property
    def scalar_params(self) -> tuple[Param, ...]:
        """SCALAR parameters, in order: the order of the launch's scalars."""
        return tuple(p for p in self.params if not p.is_array)

    @property
    def shared_bytes(self) -> int:
        """Static shared memory per cube, in bytes: every shared array's length times its
        element size (dynamic shared arrays count in :meth:`dynamic_shared_bytes`)."""
        return sum(s.length * s.elem.nbytes for s in self.shared)

    @property
    def dynamic_shared(self) -> tuple[tuple[SharedArray, int], ...]:
        """The dynamic shared arrays with the position of their size among the launch's
        scalars, in declaration order."""
        scalars = self.scalar_params
        return tuple((s, scalars.index(s.size)) for s in self.shared if s.size is not None)

    def dynamic_shared_bytes(self, scalars: Sequence[object]) -> int:
        """The dynamic shared memory a launch with ``scalars`` needs per cube (see
        :func:`dynamic_shared_bytes`)."""
        return dynamic_shared_bytes(self.dynamic_shared, scalars)

    @property
    def local_bytes(self) -> int:
        """Local-array memory per unit, in bytes."""
        return sum(a.length * a.elem.nbytes for a in self.local_arrays)

    @property
    def matrix_configs(self) -> frozenset[MatrixConfig]:
        """The configurations of the kernel's ``CMMA_EXECUTE`` instructions: what the device
        must support (:meth:`~ruda_core.runtime.Features.supports_matrix`)."""
        configs = set()
        for stmt in walk(self.body):
            if isinstance(stmt, Instr) and stmt.op is Op.CMMA_EXECUTE:
                a, b, c = (cast(Fragment, x) for x in stmt.args[:3])
                configs.add(
                    MatrixConfig(a.matrix_elem, b.matrix_elem, c.matrix_elem, a.m, a.n, a.k)
                )
        return frozenset(configs)

    def metadata_layout(self) -> tuple[tuple[str, Param, int], ...]:
        """The launch's metadata slots as ``(what, param, axis)`` with ``what`` one of
        ``"len"``, ``"shape"``, ``"stride"`` (axis is 0 for ``"len"``)."""
        slots: list[tuple[str, Param, int]] = [("len", p, 0) for p in self.array_params]
        for p in self.array_params:
            slots.extend(("shape", p, d) for d in range(p.rank))
            slots.extend(("stride", p, d) for d in range(p.rank))
        return tuple(slots)

    def fingerprint(self) -> str:
        """A hex SHA-256 of the definition's text form, source lines included (they appear in
        generated code)."""
        text = self.dump(with_locations=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def dump(self, with_locations: bool = False) -> str:
        """The definition as readable, deterministic text."""
        lines = [f"kernel {self.name}("]
        lines += [
            f"    {p.name}: {p.kind.value}[{p.elem}]"
            + (f" rank={p.rank}" if p.rank else "")
            + (" read_only" if p.read_only else "")
            for p in self.params
        ]
        lines.append(")")
        if self.max_units is not None:
            exact = " exact" if self.exact_units else ""
            cubes = f" cubes {self.min_cubes}" if self.min_cubes is not None else ""
            lines.append(f"  max_units {self.max_units}{exact}{cubes}")
        lines += [f"  shared {s.name}: {s.elem}[{s.size or s.length}]" for s in self.shared]
        lines += [f"  local_array {a.name}: {a.elem}[{a.length}]" for a in self.local_arrays]
        lines += [f"  local {v.name}: {v.type_text}" for v in self.locals]
        lines += [f"  fragment {f.name}: {f.type_text}" for f in self.fragments]
        _dump_block(self.body, 1, lines, with_locations)
        if with_locations and self.source is not None:
            lines.append(f"# source {self.source}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.dump()


def walk(block: Block) -> Iterator[Stmt]:
    """Every statement of ``block``, nested ones included, in order."""
    # one iterator per open block, innermost last: no generator per nesting level to pass
    # each statement up through
    stack = [iter(block)]
    while stack:
        for stmt in stack[-1]:
            yield stmt
            if isinstance(stmt, If):
                stack += (iter(stmt.orelse), iter(stmt.then))
                break
            if isinstance(stmt, RangeLoop | Loop):
                stack.append(iter(stmt.body))
                break
        else:
            stack.pop()


def operands_read(stmt: Stmt) -> tuple[Operand, ...]:
    """The locals, builtins and parameters that ``stmt`` itself reads (not its nested blocks)."""
    if isinstance(stmt, Instr):
        return tuple(a for a in stmt.args if isinstance(a, Local | Builtin | Param))
    if isinstance(stmt, If):
        return (stmt.cond,)
    if isinstance(stmt, RangeLoop):
        return (stmt.start, stmt.end)
    return ()


def builtins_read(block: Block) -> frozenset[BuiltinKind]:
    """The builtins ``block`` reads, nested blocks included."""
    return frozenset(
        u.kind for s in walk(block) for u in operands_read(s) if isinstance(u, Builtin)
    )


def dynamic_shared_bytes(
    arrays: Sequence[tuple[SharedArray, int]], scalars: Sequence[object]
) -> int:
    """The dynamic shared memory per cube of ``arrays`` (:attr:`KernelDefinition.dynamic_shared`)
    for a launch with ``scalars``: each array's bytes rounded up to :data:`DYNAMIC_SHARED_ALIGN`,
    in declaration order, as the kernel carves them out of its one dynamic shared buffer."""
    align = DYNAMIC_SHARED_ALIGN
    return sum(
        -(-int(scalars[k]) * s.elem.nbytes // align) * align  # type: ignore[call-overload]
        for s, k in arrays
    )


def rewrite(block: Block, instr: Callable[[Instr], Iterable[Stmt]]) -> Block:
    """``block`` with every instruction, nested ones included, replaced by what ``instr`` gives
    for it (the structure around them kept)."""
    out: list[Stmt] = []
    for stmt in block:
        if isinstance(stmt, Instr):
            out.extend(instr(stmt))
        elif isinstance(stmt, If):
            out.append(
                replace(stmt, then=rewrite(stmt.then, instr), orelse=rewrite(stmt.orelse, instr))
            )
        elif isinstance(stmt, RangeLoop | Loop):
            out.append(replace(stmt, body=rewrite(stmt.body, instr)))
        else:
            out.append(stmt)
    return tuple(out)


def _dump_block(block: Block, depth: int, lines: list[str], with_loc: bool) -> None:
    pad = "  " * depth
    for stmt in block:
        loc = f"  # {stmt.loc}" if with_loc and stmt.loc is not None else ""
        if isinstance(stmt, Instr):
            lines.append(f"{pad}{stmt}{loc}")
        elif isinstance(stmt, If):
            lines.append(f"{pad}if {stmt.cond}:{loc}")
            _dump_block(stmt.then, depth + 1, lines, with_loc)
            if stmt.orelse:
                lines.append(f"{pad}else:")
                _dump_block(stmt.orelse, depth + 1, lines, with_loc)
        elif isinstance(stmt, RangeLoop):
            rng = f"range({stmt.start}, {stmt.end}, {stmt.step})"
            lines.append(f"{pad}for {stmt.var}: {stmt.var.elem} in {rng}:{loc}")
            _dump_block(stmt.body, depth + 1, lines, with_loc)
        elif isinstance(stmt, Loop):
            lines.append(f"{pad}loop:{loc}")
            _dump_block(stmt.body, depth + 1, lines, with_loc)
        else:
            lines.append(f"{pad}{type(stmt).__name__.lower()}{loc}")
