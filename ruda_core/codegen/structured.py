"""The IR's structured statements in the brace syntax the C family and WGSL share: the walk
over a block, ``if``/``else``, ``break`` and ``continue``. An emitter's writer inherits it and
writes the rest: instructions, loops, returns and what it says where a statement has a
source location."""

from __future__ import annotations

from abc import ABC, abstractmethod

from ..errors import CompilationError
from ..ir import (
    Block,
    Break,
    Continue,
    Elem,
    If,
    Instr,
    Loop,
    Op,
    Operand,
    RangeLoop,
    Return,
    SourceLoc,
    Stmt,
)
from .dialect import Dialect
from .located import Located
from .prelude import bare

__all__ = ["DERIVED_POSITIONS", "INDENT", "StructuredWriter", "range_advance"]

#: One level of indentation in the emitted source.
INDENT = "    "
#: The position builtins computed from the per-axis ones (``UNIT_POS_X`` …, ``RUDA_DIM_Z``), with
#: their ``u32`` formulas in the syntax C and WGSL share, each after those its formula names.
DERIVED_POSITIONS = [
    ("UNIT_POS", "UNIT_POS_Z * RUDA_DIM_X * RUDA_DIM_Y + UNIT_POS_Y * RUDA_DIM_X + UNIT_POS_X"),
    (
        "RUDA_POS",
        "RUDA_POS_Z * RUDA_COUNT_X * RUDA_COUNT_Y + RUDA_POS_Y * RUDA_COUNT_X + RUDA_POS_X",
    ),
    ("RUDA_DIM", "RUDA_DIM_X * RUDA_DIM_Y * RUDA_DIM_Z"),
    ("RUDA_COUNT", "RUDA_COUNT_X * RUDA_COUNT_Y * RUDA_COUNT_Z"),
    *((f"ABSOLUTE_POS_{a}", f"RUDA_POS_{a} * RUDA_DIM_{a} + UNIT_POS_{a}") for a in "XYZ"),
    (
        "ABSOLUTE_POS",
        "ABSOLUTE_POS_Z * (RUDA_COUNT_X * RUDA_DIM_X) * (RUDA_COUNT_Y * RUDA_DIM_Y)"
        " + ABSOLUTE_POS_Y * (RUDA_COUNT_X * RUDA_DIM_X) + ABSOLUTE_POS_X",
    ),
]


def range_advance(d: Dialect, elem: Elem, counter: str, end: str, step: int) -> tuple[str, str]:
    """The condition and the advance (a statement without ``;``) of the hidden counter of a
    ``RangeLoop`` over ``elem`` by ``step`` to ``end`` (names of values read once): a step
    other than ±1 stops at the end instead of stepping past it, so the counter never wraps."""
    cond = f"{counter} < {end}" if step > 0 else f"{counter} > {end}"
    if abs(step) == 1:
        return cond, f"{counter}++" if step > 0 else f"{counter}--"
    unsigned = Elem.U64 if elem.bits == 64 else Elem.U32
    size = d.literal(abs(step), unsigned)

    def wide(x: str) -> str:
        return x if elem is unsigned else d.convert(unsigned, x)

    if step > 0:
        distance, moved = f"{wide(end)} - {wide(counter)}", f"{wide(counter)} + {size}"
    else:
        distance, moved = f"{wide(counter)} - {wide(end)}", f"{wide(counter)} - {size}"
    if elem is not unsigned:
        moved = d.convert(elem, f"({moved})")
    return cond, f"{counter} = {bare(d.select(f'{distance} > {size}', moved, end))}"


def leaves_early(body: Block, breaks: bool = True) -> bool:
    """Whether the loop whose body is ``body`` may be left before its end: a ``break`` of it
    (``breaks``: one not inside a loop of its own) or a ``return`` in it. A ``while`` loop's
    test is not (:func:`_test_end`): it ends the loop before a turn starts, as a ``for``
    loop's does."""
    for stmt in body[_test_end(body) if breaks else 0 :]:
        if isinstance(stmt, Return) or (breaks and isinstance(stmt, Break)):
            return True
        if isinstance(stmt, If) and (
            leaves_early(stmt.then, breaks) or leaves_early(stmt.orelse, breaks)
        ):
            return True
        if isinstance(stmt, RangeLoop | Loop) and leaves_early(stmt.body, breaks=False):
            return True
    return False


def _test_end(body: Block) -> int:
    """Where the loop body ``body`` goes on after a ``while`` loop's test at its start
    (instructions that move no line, then an ``if`` that only breaks), else 0."""
    for k, stmt in enumerate(body):
        if isinstance(stmt, Instr) and stmt.op not in (Op.LOAD_LINE, Op.STORE_LINE):
            continue
        if isinstance(stmt, If) and not stmt.orelse and len(stmt.then) == 1:
            return k + 1 if isinstance(stmt.then[0], Break) else 0
        return 0
    return 0


class StructuredWriter(Located, ABC):
    """Appends an emission's statements to ``lines``, indented by depth."""

    lines: list[str]
    #: how many of the loops being written may be left early (:func:`leaves_early`)
    left_early = 0

    def _line(self, depth: int, text: str) -> None:
        self.lines.append(INDENT * depth + text)

    def _block(self, block: Block, depth: int) -> None:
        for stmt in block:
            self._stmt(stmt, depth)

    def _stmt(self, stmt: Stmt, depth: int) -> None:
        if stmt.loc is not None:
            self._locate(stmt.loc, depth)
        if isinstance(stmt, Instr):
            self._instr(stmt, depth)
        elif isinstance(stmt, If):
            self._line(depth, f"if ({self._condition(stmt.cond)}) {{")
            self._block(stmt.then, depth + 1)
            if stmt.orelse:
                self._line(depth, "} else {")
                self._block(stmt.orelse, depth + 1)
            self._line(depth, "}")
        elif isinstance(stmt, RangeLoop | Loop):
            early = leaves_early(stmt.body)
            self.left_early += early
            if isinstance(stmt, RangeLoop):
                self._range_loop(stmt, depth)
            else:
                self._loop_head(depth)
                self._block(stmt.body, depth + 1)
                self._line(depth, "}")
            self.left_early -= early
        elif isinstance(stmt, Break):
            self._line(depth, "break;")
        elif isinstance(stmt, Continue):
            self._line(depth, "continue;")
        elif isinstance(stmt, Return):
            self._return(depth)
        else:
            raise CompilationError(f"{stmt!r} is not a statement")

    def _locate(self, loc: SourceLoc, depth: int) -> None:
        """A statement at ``loc`` comes next (its errors name it)."""
        self.loc = loc

    @abstractmethod
    def _condition(self, cond: Operand) -> str:
        """The text of an ``if``'s boolean operand."""

    @abstractmethod
    def _instr(self, ins: Instr, depth: int) -> None: ...

    @abstractmethod
    def _range_loop(self, loop: RangeLoop, depth: int) -> None: ...

    @abstractmethod
    def _loop_head(self, depth: int) -> None:
        """The lines that open an endless loop (its body and ``}`` follow)."""

    @abstractmethod
    def _return(self, depth: int) -> None: ...
