"""A tiny IR builder and launcher for the NumPy compiler's tests (test-only).

``KB`` builds a verified ``KernelDefinition`` statement by statement; ``launch`` lowers it for
a mode, compiles it with ``CpuCompiler``, builds it and runs it over NumPy arrays.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

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
)
from ruda_core.ir.bounds import lower_bounds
from ruda_core.ir.verify import verify
from ruda_core.runtime.compiler import CompileOptions
from ruda_core.runtime.launch import ExecutionMode
from ruda_cpu.compiler import CpuCompiler
from ruda_cpu.executor import CpuKernel, build

__all__ = ["KB", "B", "c", "compile_kernel", "launch", "metadata_for"]


def B(kind: str) -> Builtin:
    """A builtin by name, e.g. ``B("ABSOLUTE_POS")``."""
    return Builtin(BuiltinKind[kind])


def c(value: Any, elem: Elem) -> Const:
    return Const(value, elem)


class KB:
    """Builds one kernel. Every emitting method appends to the innermost open block."""

    def __init__(self, name: str = "k") -> None:
        self.name = name
        self.params: list[Param] = []
        self.locals: list[Local] = []
        self.shared: list[SharedArray] = []
        self.local_arrays: list[LocalArray] = []
        self.blocks: list[list[Any]] = [[]]
        self.counter = 0
        self.line = 0

    # declarations
    def array(self, name: str, elem: Elem, rank: int = 0) -> Param:
        kind = ParamKind.TENSOR if rank else ParamKind.ARRAY
        p = Param(len(self.params), name, kind, elem, rank)
        self.params.append(p)
        return p

    def scalar(self, name: str, elem: Elem) -> Param:
        p = Param(len(self.params), name, ParamKind.SCALAR, elem)
        self.params.append(p)
        return p

    def var(self, name: str, elem: Elem) -> Local:
        v = Local(name, elem)
        self.locals.append(v)
        return v

    def smem(self, name: str, elem: Elem, length: int) -> SharedArray:
        s = SharedArray(name, elem, length)
        self.shared.append(s)
        return s

    def larr(self, name: str, elem: Elem, length: int) -> LocalArray:
        a = LocalArray(name, elem, length)
        self.local_arrays.append(a)
        return a

    # statements
    def _loc(self) -> SourceLoc:
        self.line += 1
        return SourceLoc("<test>", self.line)

    def _add(self, stmt: Any) -> None:
        self.blocks[-1].append(stmt)

    def op(self, op: Op, elem: Elem | Local | None, *args: Any) -> Any:
        """``out = op(*args)``; ``elem`` is a Local to assign, an Elem for a new temporary, or
        None for no result. Returns the result local."""
        out = elem
        if isinstance(elem, Elem):
            out = Local(f"_t{self.counter}", elem)
            self.counter += 1
            self.locals.append(out)
        self._add(Instr(op, out, tuple(args), self._loc()))
        return out

    def set(self, var: Local, value: Any) -> None:
        self.op(Op.ASSIGN, var, value)

    def load(self, arr: Any, i: Any) -> Local:
        return self.op(Op.INDEX, arr.elem, arr, i)

    def store(self, arr: Any, i: Any, v: Any) -> None:
        self.op(Op.INDEX_ASSIGN, None, arr, i, v)

    @contextmanager
    def if_(self, cond: Any, orelse: list[Any] | None = None) -> Iterator[list[Any]]:
        """``with kb.if_(c) as els:`` — statements of the ``else`` go in ``kb.else_(els)``."""
        self.blocks.append([])
        els: list[Any] = []
        yield els
        then = self.blocks.pop()
        self._add(("if", cond, then, els, self._loc()))

    @contextmanager
    def else_(self, els: list[Any]) -> Iterator[None]:
        self.blocks.append(els)
        yield
        self.blocks.pop()

    @contextmanager
    def range_(self, var: Local, start: Any, end: Any, step: int = 1) -> Iterator[None]:
        self.blocks.append([])
        yield
        body = self.blocks.pop()
        self._add(("range", var, start, end, step, body, self._loc()))

    @contextmanager
    def loop(self) -> Iterator[None]:
        self.blocks.append([])
        yield
        body = self.blocks.pop()
        self._add(("loop", body, self._loc()))

    def brk(self) -> None:
        self._add(Break(self._loc()))

    def cont(self) -> None:
        self._add(Continue(self._loc()))

    def ret(self) -> None:
        self._add(Return(self._loc()))

    def sync(self) -> None:
        self.op(Op.SYNC_UNITS, None)

    def build(self) -> KernelDefinition:
        def freeze(block: list[Any]) -> tuple[Any, ...]:
            out = []
            for s in block:
                if isinstance(s, tuple) and s[0] == "if":
                    out.append(If(s[1], freeze(s[2]), freeze(s[3]), s[4]))
                elif isinstance(s, tuple) and s[0] == "range":
                    _, var, start, end, step, body, loc = s
                    out.append(RangeLoop(var, start, end, Const(step, var.elem), freeze(body), loc))
                elif isinstance(s, tuple) and s[0] == "loop":
                    out.append(Loop(freeze(s[1]), s[2]))
                else:
                    out.append(s)
            return tuple(out)

        defn = KernelDefinition(
            self.name,
            tuple(self.params),
            tuple(self.locals),
            tuple(self.shared),
            tuple(self.local_arrays),
            freeze(self.blocks[0]),
            SourceLoc("<test>", 0),
        )
        verify(defn)
        return defn


def compile_kernel(
    defn: KernelDefinition,
    mode: ExecutionMode = ExecutionMode.UNCHECKED,
    plane_dim: int = 32,
) -> CpuKernel:
    lowered = lower_bounds(defn, mode)
    compiled = CpuCompiler().compile(lowered, CompileOptions(plane_dim=plane_dim), mode)
    return build(compiled)


def metadata_for(
    defn: KernelDefinition,
    buffers: Sequence[np.ndarray],
    lengths: dict[str, int] | None = None,
    tensors: dict[str, tuple[Sequence[int], Sequence[int]]] | None = None,
) -> list[int]:
    """The metadata of a launch: each buffer's length (or ``lengths[name]``), then the
    ``tensors[name] = (shape, strides)`` of tensor parameters."""
    lengths = lengths or {}
    tensors = tensors or {}
    by_param = dict(zip(defn.array_params, buffers, strict=True))
    out = []
    for what, p, axis in defn.metadata_layout():
        if what == "len":
            out.append(lengths.get(p.name, by_param[p].shape[0]))
        else:
            shape, strides = tensors[p.name]
            out.append((shape if what == "shape" else strides)[axis])
    return out


def launch(
    defn: KernelDefinition,
    count: int | tuple[int, int, int],
    dim: int | tuple[int, int, int],
    buffers: Sequence[np.ndarray],
    scalars: Sequence[Any] = (),
    mode: ExecutionMode = ExecutionMode.UNCHECKED,
    plane_dim: int = 32,
    lengths: dict[str, int] | None = None,
    tensors: dict[str, tuple[Sequence[int], Sequence[int]]] | None = None,
    kernel: CpuKernel | None = None,
) -> np.ndarray | None:
    """Compile (unless ``kernel`` is given) and run; in VALIDATE mode return the report."""
    count3 = (count, 1, 1) if isinstance(count, int) else count
    dim3 = (dim, 1, 1) if isinstance(dim, int) else dim
    k = kernel or compile_kernel(defn, mode, plane_dim)
    bufs = list(buffers)
    report = None
    lowered = lower_bounds(defn, mode)
    if len(lowered.array_params) > len(defn.array_params):
        report = np.zeros(6, np.uint32)
        bufs.append(report)
    meta = metadata_for(lowered, bufs, lengths, tensors)
    types = [p.elem.numpy.type for p in defn.scalar_params]
    k(count3, dim3, bufs, [t(s) for t, s in zip(types, scalars, strict=True)], meta)
    return report
