"""The bounds pass: rewrites array accesses of a kernel for an :class:`ExecutionMode`.

``UNCHECKED`` leaves the definition as it is. ``CHECKED`` guards every ``INDEX``,
``INDEX_ASSIGN`` and atomic on a global array parameter, a shared array or a local array: an
out-of-bounds read (or atomic) yields 0 and an out-of-bounds write (or atomic) is dropped::

    out = INDEX(arr, i)        _b1 = CAST(i) : u32          (only when i is not u32 already)
                        ->     _b2 = LT(_b1, _b0)           (_b0 = LEN(arr), at the kernel's start)
                               if _b2: out = INDEX(arr, i)
                               else:   out = ASSIGN(0)

The index is compared as an unsigned integer of its own width, at least 32 bits (a signed index is
cast to the unsigned type of its width, so a negative one is huge; 64-bit indices compare in
``u64``). The length is ``LEN(arr)`` for parameters, the size parameter for a dynamic shared array
and the constant length for other shared and local arrays; an access whose constant index is known
to be in bounds is left alone. A line access (``LOAD_LINE``/``STORE_LINE`` of width ``w``) compares
its line index with the number of whole lines, ``length // w`` (computed once at the kernel's
start, or a constant for a shared array of constant length), so a partial last line is out of
bounds as a whole: a load gives a line of zeros, a store is dropped. A matrix tile
(``CMMA_LOAD``/``CMMA_STORE``) is one access too: it is in bounds when
``offset + (outer - 1) * stride + inner <= length``, computed in ``u64`` (``outer`` the tile's
rows in row-major layout, its columns in column-major; ``inner`` the other); out of bounds, a
load fills the fragment with zeros and a store is dropped, and Validate reports the tile's last
element.
An asynchronous copy (``COPY_ASYNC``) is first lowered to its ``LOAD_LINE`` and ``STORE_LINE``
(:func:`~ruda_core.ir.copies.lower_async_copies`), done when issued, and those are checked.
Temporaries are named ``_b0``, ``_b1`` … in traversal order (skipping names in use), so the output
is deterministic.

``VALIDATE`` is ``CHECKED`` plus, in every out-of-bounds branch,
``REPORT_OOB(Const(buffer_no, u32), index as u64, length as u64)``, and a hidden last parameter
``Param(n, REPORT_PARAM, ARRAY, u32)``. ``buffer_no`` indexes :func:`report_names` of the original
definition; the index reported is the unsigned value compared (an ``i32`` index of -1 is
reported as 4294967295). For a line access the report gives elements, not lines: the index of
the line's last element, ``i * w + w - 1``, and the array's length.

**REPORT_OOB for backends.** The report parameter is a buffer of 6 ``u32``
``[flag, buffer_no, index_lo, index_hi, length_lo, length_hi]``, zeroed by the server before the
launch. The first report (the atomic exchange of ``flag`` for 1 that finds 0 there) writes the other
five words; every later report does nothing (:mod:`ruda_core.codegen.reports` writes it for a
dialect). Being an ARRAY parameter, the report
buffer is the last binding and its length (6) is the last of the metadata's length slots, before
any tensor shapes and strides (see :meth:`KernelDefinition.metadata_layout`). The server turns a
set flag into a ``ValidationError`` naming the kernel, ``report_names(defn)[buffer_no]``, the
index and the length.

This module rewrites IR only; it must not know about any backend.
"""

from __future__ import annotations

from dataclasses import replace
from typing import cast

from .copies import lower_async_copies
from .kernel import Block, If, Instr, KernelDefinition, Stmt, rewrite
from .matrix import Fragment, MatrixLayout
from .modes import ExecutionMode
from .ops import ATOMIC_OPS, Op
from .types import Elem
from .variables import (
    ArrayVar,
    Const,
    Local,
    Operand,
    Param,
    ParamKind,
    SharedArray,
    SourceLoc,
)

__all__ = ["REPORT_PARAM", "lower_bounds", "report_names"]

#: Name of the hidden report parameter that ``VALIDATE`` appends.
REPORT_PARAM = "_ruda_report"

_LINE_ACCESS = frozenset({Op.LOAD_LINE, Op.STORE_LINE})
_CHECKED_OPS = ATOMIC_OPS | _LINE_ACCESS | {Op.INDEX, Op.INDEX_ASSIGN}
_TILE_ACCESS = frozenset({Op.CMMA_LOAD, Op.CMMA_STORE})


def report_names(defn: KernelDefinition) -> tuple[str, ...]:
    """The buffers ``REPORT_OOB`` numbers, in order: array parameters, then shared arrays, then
    local arrays (of the definition before the pass)."""
    return (
        *(p.name for p in defn.array_params),
        *(s.name for s in defn.shared),
        *(a.name for a in defn.local_arrays),
    )


def lower_bounds(defn: KernelDefinition, mode: ExecutionMode) -> KernelDefinition:
    """``defn`` rewritten for ``mode`` (see the module docstring); ``defn`` itself for
    ``UNCHECKED``. A verified input gives a verified output."""
    if mode is ExecutionMode.UNCHECKED:
        return defn
    defn = lower_async_copies(defn)  # each side of a copy is a line access to check
    return _BoundsLowering(defn, validate=mode is ExecutionMode.VALIDATE).run()


def _zero(elem: Elem) -> Const:
    if elem is Elem.BOOL:
        return Const(False, elem)
    return Const(0.0 if elem.is_float else 0, elem)


class _BoundsLowering:
    __slots__ = (
        "buffer_no",
        "counter",
        "defn",
        "hoisted",
        "lengths",
        "line_counts",
        "names",
        "temps",
        "validate",
    )

    def __init__(self, defn: KernelDefinition, validate: bool) -> None:
        self.defn = defn
        self.validate = validate
        arrays: list[ArrayVar] = [*defn.array_params, *defn.shared, *defn.local_arrays]
        self.buffer_no = {arr: i for i, arr in enumerate(arrays)}
        self.names = {p.name for p in defn.params} | {v.name for v in defn.locals}
        self.names |= {s.name for s in defn.shared} | {a.name for a in defn.local_arrays}
        self.counter = 0
        self.temps: list[Local] = []
        self.hoisted: list[Stmt] = []
        self.lengths: dict[Param, Local] = {}
        self.line_counts: dict[tuple[ArrayVar, int, Elem], Local] = {}

    def run(self) -> KernelDefinition:
        body = rewrite(self.defn.body, self._instr)
        params = self.defn.params
        if self.validate:
            report = Param(len(params), REPORT_PARAM, ParamKind.ARRAY, Elem.U32)
            params = (*params, report)
        return replace(
            self.defn,
            params=params,
            locals=(*self.defn.locals, *self.temps),
            body=(*self.hoisted, *body),
        )

    def _temp(self, elem: Elem) -> Local:
        name = f"_b{self.counter}"
        while name in self.names:
            self.counter += 1
            name = f"_b{self.counter}"
        self.counter += 1
        self.names.add(name)
        local = Local(name, elem)
        self.temps.append(local)
        return local

    def _instr(self, ins: Instr) -> list[Stmt]:
        if ins.op in _CHECKED_OPS:
            return self._guard(ins)
        if ins.op in _TILE_ACCESS:
            return self._guard_tile(ins)
        return [ins]

    def _length(self, param: Param) -> Local:
        """``LEN(param)``, computed once at the kernel's start."""
        local = self.lengths.get(param)
        if local is None:
            local = self.lengths[param] = self._temp(Elem.U32)
            self.hoisted.append(Instr(Op.LEN, local, (param,)))
        return local

    def _elements(self, arr: ArrayVar) -> Operand:
        """The length of an array: ``LEN(arr)`` of a parameter (computed once), the size
        parameter of a dynamic shared array, else the constant length."""
        if isinstance(arr, Param):
            return self._length(arr)
        if isinstance(arr, SharedArray) and arr.size is not None:
            return arr.size
        return Const(arr.length, Elem.U32)

    def _line_count(self, arr: ArrayVar, width: int, elem: Elem) -> Operand:
        """The number of whole lines of ``width`` in ``arr`` as ``elem``: a constant for a
        shared array of constant length, else computed once at the kernel's start."""
        length = self._elements(arr)
        if isinstance(length, Const):
            return Const(int(length.value) // width, elem)
        key = (arr, width, elem)
        local = self.line_counts.get(key)
        if local is None:
            wide = self._widen(length, elem, self.hoisted, None)
            local = self.line_counts[key] = self._temp(elem)
            self.hoisted.append(Instr(Op.FLOOR_DIV, local, (wide, Const(width, elem))))
        return local

    def _widen(
        self, value: Operand, elem: Elem, into: list[Stmt], loc: SourceLoc | None
    ) -> Operand:
        """``value`` as ``elem``: a constant converted here, else a CAST appended to ``into``."""
        if value.elem is elem:
            return value
        if isinstance(value, Const):
            return Const(int(value.value) % (1 << elem.bits), elem)
        temp = self._temp(elem)
        into.append(Instr(Op.CAST, temp, (value,), loc))
        return temp

    def _guard(self, ins: Instr) -> list[Stmt]:
        arr = cast(ArrayVar, ins.args[0])  # the input is verified: an array, then an index
        index = cast(Operand, ins.args[1])
        loc = ins.loc
        cmp_elem = Elem.U64 if index.elem.bits == 64 else Elem.U32
        stmts: list[Stmt] = []
        length: Operand
        if ins.op in _LINE_ACCESS:
            unsigned = self._widen(index, cmp_elem, stmts, loc)
            length = self._line_count(arr, _line_width(ins), cmp_elem)
        else:
            elements = self._elements(arr)
            unsigned = self._widen(index, cmp_elem, stmts, loc)
            length = self._widen(elements, cmp_elem, stmts, loc)
        if isinstance(unsigned, Const) and isinstance(length, Const):  # decided here
            in_bounds = int(unsigned.value) < int(length.value)
            return [ins] if in_bounds else list(self._out_of_bounds(ins, unsigned, length))
        cond = self._temp(Elem.BOOL)
        stmts.append(Instr(Op.LT, cond, (unsigned, length), loc))
        stmts.append(If(cond, (ins,), self._out_of_bounds(ins, unsigned, length), loc))
        return stmts

    def _guard_tile(self, ins: Instr) -> list[Stmt]:
        load = ins.op is Op.CMMA_LOAD
        frag = cast(Fragment, ins.args[0] if load else ins.args[2])
        arr = cast(ArrayVar, ins.args[1] if load else ins.args[0])
        offset = cast(Operand, ins.args[2] if load else ins.args[1])
        stride = cast(Operand, ins.args[3])
        layout = MatrixLayout(cast(Const, ins.args[4]).value)
        rows, cols = frag.rows, frag.cols
        outer, inner = (rows, cols) if layout is MatrixLayout.ROW_MAJOR else (cols, rows)
        loc, u64 = ins.loc, Elem.U64
        stmts: list[Stmt] = []
        span, end = self._temp(u64), self._temp(u64)
        stmts.append(
            Instr(Op.MUL, span, (self._widen(stride, u64, stmts, loc), Const(outer - 1, u64)), loc)
        )
        stmts.append(Instr(Op.ADD, end, (span, self._widen(offset, u64, stmts, loc)), loc))
        stmts.append(Instr(Op.ADD, end, (end, Const(inner, u64)), loc))
        length: Operand
        if isinstance(arr, Param):
            length = self._widen(self._length(arr), u64, stmts, loc)
        elif isinstance(arr, SharedArray) and arr.size is not None:
            length = self._widen(arr.size, u64, stmts, loc)
        else:
            length = Const(arr.length, u64)
        cond = self._temp(Elem.BOOL)
        stmts.append(Instr(Op.LE, cond, (end, length), loc))
        outside: list[Stmt] = []
        if load:
            outside.append(Instr(Op.CMMA_FILL, None, (frag, _zero(frag.elem)), loc))
        if self.validate:
            last = self._temp(u64)
            outside.append(Instr(Op.SUB, last, (end, Const(1, u64)), loc))
            buffer_no = Const(self.buffer_no[arr], Elem.U32)
            outside.append(Instr(Op.REPORT_OOB, None, (buffer_no, last, length), loc))
        stmts.append(If(cond, (ins,), tuple(outside), loc))
        return stmts

    def _out_of_bounds(self, ins: Instr, index: Operand, length: Operand) -> Block:
        """What replaces ``ins`` out of bounds: 0 for its result, and a report in VALIDATE."""
        loc = ins.loc
        body: list[Stmt] = []
        if ins.out is not None:
            body.append(Instr(Op.ASSIGN, ins.out, (_zero(ins.out.elem),), loc))
        if self.validate:
            arr = cast(ArrayVar, ins.args[0])
            buffer_no = Const(self.buffer_no[arr], Elem.U32)
            index64 = self._widen(index, Elem.U64, body, loc)
            if ins.op in _LINE_ACCESS:  # report elements: the line's last one, the length
                width = Const(_line_width(ins), Elem.U64)
                first = self._temp(Elem.U64)
                last = self._temp(Elem.U64)
                body.append(Instr(Op.MUL, first, (index64, width), loc))
                body.append(Instr(Op.ADD, last, (first, Const(width.value - 1, Elem.U64)), loc))
                index64, length = last, self._elements(arr)
            length64 = self._widen(length, Elem.U64, body, loc)
            body.append(Instr(Op.REPORT_OOB, None, (buffer_no, index64, length64), loc))
        return tuple(body)


def _line_width(ins: Instr) -> int:
    """The width of a verified ``LOAD_LINE`` (its result) or ``STORE_LINE`` (its value)."""
    line = ins.out if ins.op is Op.LOAD_LINE else ins.args[2]
    return cast(Local, line).width
