"""A small builder of hand-written IR kernels for the code generation tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ruda_core.ir import (
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
    Param,
    ParamKind,
    RangeLoop,
    Return,
    SharedArray,
    SourceLoc,
    Stmt,
)
from ruda_core.ir.verify import verify

FILE = "/src/kernels.py"


def c(value: int | float | bool, elem: Elem) -> Const:
    return Const(value, elem)


def b(kind: BuiltinKind) -> Builtin:
    return Builtin(kind)


class KernelBuilder:
    """Builds a KernelDefinition statement by statement; ``line`` sets the source line given to
    the statements that follow (``None``: no location)."""

    def __init__(self, name: str, line: int | None = 1) -> None:
        self.name = name
        self.params: list[Param] = []
        self.locals: list[Local] = []
        self.shared_arrays: list[SharedArray] = []
        self.local_arrays: list[LocalArray] = []
        self.blocks: list[list[Stmt]] = [[]]
        self.line = line
        self.source = SourceLoc(FILE, line) if line is not None else None
        self._temps = 0

    @property
    def loc(self) -> SourceLoc | None:
        return SourceLoc(FILE, self.line) if self.line is not None else None

    # declarations
    def array(self, name: str, elem: Elem, read_only: bool = False) -> Param:
        p = Param(len(self.params), name, ParamKind.ARRAY, elem, read_only=read_only)
        self.params.append(p)
        return p

    def tensor(self, name: str, elem: Elem, rank: int, read_only: bool = False) -> Param:
        p = Param(len(self.params), name, ParamKind.TENSOR, elem, rank, read_only)
        self.params.append(p)
        return p

    def scalar(self, name: str, elem: Elem) -> Param:
        p = Param(len(self.params), name, ParamKind.SCALAR, elem)
        self.params.append(p)
        return p

    def local(self, name: str, elem: Elem) -> Local:
        v = Local(name, elem)
        self.locals.append(v)
        return v

    def tmp(self, elem: Elem) -> Local:
        self._temps += 1
        return self.local(f"_t{self._temps}", elem)

    def shared(self, name: str, elem: Elem, length: int) -> SharedArray:
        s = SharedArray(name, elem, length)
        self.shared_arrays.append(s)
        return s

    def local_array(self, name: str, elem: Elem, length: int) -> LocalArray:
        a = LocalArray(name, elem, length)
        self.local_arrays.append(a)
        return a

    # statements
    def add(self, stmt: Stmt) -> None:
        self.blocks[-1].append(stmt)

    def do(self, op: Op, out: Local | None, *args: object) -> Local | None:
        self.add(Instr(op, out, tuple(args), self.loc))  # type: ignore[arg-type]
        return out

    def let(self, op: Op, elem: Elem, *args: object, name: str | None = None) -> Local:
        out = self.local(name, elem) if name is not None else self.tmp(elem)
        self.do(op, out, *args)
        return out

    @contextmanager
    def if_(self, cond: object) -> Iterator[None]:
        loc = self.loc
        self.blocks.append([])
        yield
        then = tuple(self.blocks.pop())
        self.add(If(cond, then, (), loc))  # type: ignore[arg-type]

    @contextmanager
    def else_(self) -> Iterator[None]:
        last = self.blocks[-1].pop()
        if not isinstance(last, If):
            raise TypeError("else_ must follow if_")
        self.blocks.append([])
        yield
        orelse = tuple(self.blocks.pop())
        self.add(If(last.cond, last.then, orelse, last.loc))

    @contextmanager
    def range_(self, var: Local, start: object, end: object, step: int) -> Iterator[None]:
        loc = self.loc
        self.blocks.append([])
        yield
        body = tuple(self.blocks.pop())
        self.add(RangeLoop(var, start, end, Const(step, var.elem), body, loc))  # type: ignore[arg-type]

    @contextmanager
    def loop(self) -> Iterator[None]:
        loc = self.loc
        self.blocks.append([])
        yield
        self.add(Loop(tuple(self.blocks.pop()), loc))

    def break_(self) -> None:
        self.add(Break(self.loc))

    def continue_(self) -> None:
        self.add(Continue(self.loc))

    def return_(self) -> None:
        self.add(Return(self.loc))

    def build(self) -> KernelDefinition:
        defn = KernelDefinition(
            self.name,
            tuple(self.params),
            tuple(self.locals),
            tuple(self.shared_arrays),
            tuple(self.local_arrays),
            tuple(self.blocks[0]),
            self.source,
        )
        verify(defn)
        return defn
