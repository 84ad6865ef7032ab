"""A small builder of kernels written directly as IR, for conformance tests and fuzzing.

:class:`KernelBuilder` appends statements to the innermost open block; ``if_``, ``else_``,
``range_`` and ``loop`` are context managers opening nested blocks. :meth:`KernelBuilder.build`
verifies the definition (a ``CompilationError`` for ill-formed IR). It builds IR only; running
a definition is :mod:`.runner`'s job.

Source locations are the builder's choice: by default every statement gets a line of its own in
``<ruda-conformance>``; ``file`` names another file, ``line`` pins statements to a line the caller
moves on (as hand-written source puts several statements on one line, which golden files show),
and ``file=None`` leaves the kernel without locations.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..ir import (
    Break,
    Builtin,
    BuiltinKind,
    Const,
    Continue,
    Elem,
    If,
    Instr,
    KernelDefinition,
    Local,
    LocalArray,
    Loop,
    Op,
    Operand,
    Param,
    ParamKind,
    RangeLoop,
    Return,
    SharedArray,
    SourceLoc,
    Stmt,
    verify,
)
from ..lang.coerce import round_float

__all__ = ["KernelBuilder", "builtin", "const"]

_FILE = "<ruda-conformance>"


def const(value: int | float | bool, elem: Elem) -> Const:
    """A constant of ``elem``: for a float element, ``value`` rounded to it (an IR constant's
    value is representable in its element, as the kernel language makes them)."""
    if elem.is_float:
        value = round_float(float(value), elem)
    return Const(value, elem)


def builtin(name: str) -> Builtin:
    """A position builtin by name, e.g. ``builtin("ABSOLUTE_POS")``."""
    return Builtin(BuiltinKind[name])


class KernelBuilder:
    """Builds one :class:`KernelDefinition` statement by statement.

    :param name: the kernel's name.
    :param file: the source file the kernel claims to come from; ``None`` for no locations at all.
    :param line: ``None`` gives the definition line 1 and every statement the next line; a number
        is the definition's line and the line of every statement until :attr:`line` is set again.
    :raises TypeError: when ``line`` is given without a ``file``.
    """

    def __init__(self, name: str, *, file: str | None = _FILE, line: int | None = None) -> None:
        if file is None and line is not None:
            raise TypeError(f"kernel {name}: line={line} needs a file; pass file= or drop line")
        self.name = name
        self.file = file
        #: The line of the statement added last (counting) or of the next ones (pinned).
        self.line = 1 if line is None else line
        self.params: list[Param] = []
        self.locals: list[Local] = []
        self.shared_arrays: list[SharedArray] = []
        self.local_arrays: list[LocalArray] = []
        self._blocks: list[list[Stmt]] = [[]]
        self._counting = line is None
        self._source = None if file is None else SourceLoc(file, self.line)
        self._temps = 0

    # -- declarations ----------------------------------------------------------------------------
    def array(self, name: str, elem: Elem, read_only: bool = False) -> Param:
        """A global ``Array`` parameter."""
        p = Param(len(self.params), name, ParamKind.ARRAY, elem, read_only=read_only)
        self.params.append(p)
        return p

    def tensor(self, name: str, elem: Elem, rank: int, read_only: bool = False) -> Param:
        """A global ``Tensor`` parameter of ``rank`` axes."""
        p = Param(len(self.params), name, ParamKind.TENSOR, elem, rank, read_only)
        self.params.append(p)
        return p

    def scalar(self, name: str, elem: Elem) -> Param:
        """A by-value scalar parameter."""
        p = Param(len(self.params), name, ParamKind.SCALAR, elem)
        self.params.append(p)
        return p

    def local(self, name: str, elem: Elem, width: int = 1) -> Local:
        """A named local (declare each name once), a line of ``width`` lanes above 1."""
        v = Local(name, elem, width)
        self.locals.append(v)
        return v

    def tmp(self, elem: Elem, width: int = 1) -> Local:
        """A fresh temporary local."""
        self._temps += 1
        return self.local(f"_t{self._temps}", elem, width)

    def shared(self, name: str, elem: Elem, length: int | Param) -> SharedArray:
        """A shared array of ``length`` elements, or sized at launch by the ``u32`` scalar
        parameter ``length``."""
        s = (
            SharedArray(name, elem, 0, length)
            if isinstance(length, Param)
            else SharedArray(name, elem, length)
        )
        self.shared_arrays.append(s)
        return s

    def local_array(self, name: str, elem: Elem, length: int) -> LocalArray:
        a = LocalArray(name, elem, length)
        self.local_arrays.append(a)
        return a

    # -- statements ------------------------------------------------------------------------------
    @property
    def _loc(self) -> SourceLoc | None:
        if self.file is None:
            return None
        if self._counting:
            self.line += 1
        return SourceLoc(self.file, self.line)

    def add(self, stmt: Stmt) -> None:
        """Append a statement to the innermost open block."""
        self._blocks[-1].append(stmt)

    def do(
        self, op: Op, out: Local | None, *args: Operand | Param | SharedArray | LocalArray
    ) -> Local | None:
        """Append ``out = op(*args)`` and return ``out``."""
        self.add(Instr(op, out, tuple(args), self._loc))
        return out

    def let(
        self,
        op: Op,
        elem: Elem,
        *args: Operand | Param | SharedArray | LocalArray,
        name: str | None = None,
        width: int = 1,
    ) -> Local:
        """Append ``v = op(*args)`` for a new local ``v`` of ``elem`` (a line of ``width``
        lanes above 1) and return it: the local ``name`` when given (declared here), else a
        fresh temporary ``_tN``."""
        out = self.tmp(elem, width) if name is None else self.local(name, elem, width)
        self.do(op, out, *args)
        return out

    def assign(self, var: Local, value: Operand) -> None:
        self.do(Op.ASSIGN, var, value)

    def load(self, arr: Param | SharedArray | LocalArray, index: Operand) -> Local:
        return self.let(Op.INDEX, arr.elem, arr, index)

    def store(self, arr: Param | SharedArray | LocalArray, index: Operand, value: Operand) -> None:
        self.do(Op.INDEX_ASSIGN, None, arr, index, value)

    def sync_units(self) -> None:
        self.do(Op.SYNC_UNITS, None)

    @contextmanager
    def if_(self, cond: Operand) -> Iterator[None]:
        loc = self._loc
        self._blocks.append([])
        yield
        self.add(If(cond, tuple(self._blocks.pop()), (), loc))

    @contextmanager
    def else_(self) -> Iterator[None]:
        """The ``else`` block of the ``if_`` just closed."""
        last = self._blocks[-1].pop()
        if not isinstance(last, If) or last.orelse:
            raise TypeError("else_ must directly follow an if_ without an else")
        self._blocks.append([])
        yield
        self.add(If(last.cond, last.then, tuple(self._blocks.pop()), last.loc))

    @contextmanager
    def range_(self, var: Local, start: Operand, end: Operand, step: int = 1) -> Iterator[None]:
        loc = self._loc
        self._blocks.append([])
        yield
        body = tuple(self._blocks.pop())
        self.add(RangeLoop(var, start, end, Const(step, var.elem), body, loc))

    @contextmanager
    def loop(self) -> Iterator[None]:
        loc = self._loc
        self._blocks.append([])
        yield
        self.add(Loop(tuple(self._blocks.pop()), loc))

    def break_(self) -> None:
        self.add(Break(self._loc))

    def continue_(self) -> None:
        self.add(Continue(self._loc))

    def return_(self) -> None:
        self.add(Return(self._loc))

    def build(self) -> KernelDefinition:
        """The verified definition.

        :raises CompilationError: when the IR is ill-formed.
        :raises TypeError: when a block is still open.
        """
        if len(self._blocks) != 1:
            raise TypeError(f"{len(self._blocks) - 1} block(s) of kernel {self.name} still open")
        defn = KernelDefinition(
            self.name,
            tuple(self.params),
            tuple(self.locals),
            tuple(self.shared_arrays),
            tuple(self.local_arrays),
            tuple(self._blocks[0]),
            source=self._source,
        )
        verify(defn)
        return defn
