"""Lines in a definition: the alignment their buffers need, and their lowering to scalars.

:func:`line_alignment` gives, per array that a ``LOAD_LINE``, ``STORE_LINE`` or ``COPY_ASYNC``
reads or writes, the byte alignment its start needs: a line's size (``width * elem.nbytes``), at
most 16 bytes, the widest vector access of the C targets. The launcher requires it of a global
parameter's binding; a backend declares a shared array with it.

:func:`scalarize_lines` is the reference meaning of lines (:mod:`ruda_core.ir.ops`) as scalar
IR, for a backend without vector memory access (the NumPy device runs it): each line local
becomes one scalar local per lane, a lane-wise instruction one instruction per lane,
``LINE_LANE`` and ``LINE_BUILD`` copies, and a line access one ``INDEX``/``INDEX_ASSIGN`` per
lane at ``i * w + k`` (computed in the index's type), except the accesses a backend moves as
vectors: those stay whole, through a line local of their own. Run it after the bounds pass,
which checks line accesses as wholes. This module rewrites IR only; it must not know about any
backend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import cast

from .barriers import BULK_ALIGN_NBYTES
from .copies import copy_width
from .kernel import Instr, KernelDefinition, Stmt, rewrite, walk
from .ops import LANE_WISE_OPS, Op
from .types import Elem
from .variables import ArrayVar, Const, Local, Operand

__all__ = ["MAX_LINE_ALIGNMENT", "line_alignment", "scalarize_lines", "uses_lines"]

#: The largest alignment, in bytes, a line access requires of its buffer.
MAX_LINE_ALIGNMENT = 16


def uses_lines(defn: KernelDefinition) -> bool:
    """Whether ``defn`` has a line local."""
    return any(v.width > 1 for v in defn.locals)


def line_alignment(defn: KernelDefinition) -> dict[ArrayVar, int]:
    """The byte alignment each line-accessed array (parameter or shared array) must start at."""
    needed: dict[ArrayVar, int] = {}
    for stmt in walk(defn.body):
        if isinstance(stmt, Instr) and stmt.op in (Op.LOAD_LINE, Op.STORE_LINE):
            arr = cast(ArrayVar, stmt.args[0])
            line = cast(Local, stmt.out if stmt.op is Op.LOAD_LINE else stmt.args[2])
            nbytes = min(line.width * line.elem.nbytes, MAX_LINE_ALIGNMENT)
            needed[arr] = max(needed.get(arr, 1), nbytes)
        elif isinstance(stmt, Instr) and stmt.op is Op.COPY_ASYNC:
            width = copy_width(stmt)
            for arr in (cast(ArrayVar, stmt.args[0]), cast(ArrayVar, stmt.args[2])):
                nbytes = min(width * arr.elem.nbytes, MAX_LINE_ALIGNMENT)
                needed[arr] = max(needed.get(arr, 1), nbytes)
        elif isinstance(stmt, Instr) and stmt.op in (Op.BULK_COPY, Op.BULK_STORE):  # 16 bytes
            for arr in (cast(ArrayVar, stmt.args[0]), cast(ArrayVar, stmt.args[2])):
                needed[arr] = max(needed.get(arr, 1), BULK_ALIGN_NBYTES)
    return needed


def scalarize_lines(
    defn: KernelDefinition, whole: Callable[[Instr], bool] | None = None
) -> KernelDefinition:
    """``defn`` with scalar values only (see the module docstring); ``defn`` itself when it has
    no lines.

    :param whole: which ``LOAD_LINE``/``STORE_LINE`` stay one access (a target's vector load or
        store): such a load fills a line local of its own, then ``LINE_LANE`` copies each lane
        out; such a store is preceded by a ``LINE_BUILD`` of one. Those locals are the only
        lines left. None: every access becomes one per lane.
    """
    if not uses_lines(defn):
        return defn
    return _Scalarizer(defn, whole).run()


class _Scalarizer:
    __slots__ = ("defn", "lanes", "locals", "names", "whole")

    def __init__(self, defn: KernelDefinition, whole: Callable[[Instr], bool] | None) -> None:
        self.defn = defn
        self.whole = whole
        self.names = {p.name for p in defn.params} | {v.name for v in defn.locals}
        self.names |= {s.name for s in defn.shared} | {a.name for a in defn.local_arrays}
        self.locals: list[Local] = []
        self.lanes: dict[Local, tuple[Local, ...]] = {}
        for v in defn.locals:
            if v.width == 1:
                self.locals.append(v)
            else:
                self.lanes[v] = tuple(self._new(f"{v.name}_{k}", v) for k in range(v.width))

    def _new(self, base: str, like: Local | Operand, width: int = 1) -> Local:
        name, n = base, 0
        while name in self.names:
            n += 1
            name = f"{base}_{n}"
        self.names.add(name)
        local = Local(name, like.elem, width)
        self.locals.append(local)
        return local

    def run(self) -> KernelDefinition:
        body = rewrite(self.defn.body, self._instr)
        return replace(self.defn, locals=tuple(self.locals), body=body)

    def _lane(self, value: object, k: int) -> object:
        if isinstance(value, Local) and value.width > 1:
            return self.lanes[value][k]
        return value

    def _instr(self, ins: Instr) -> list[Stmt]:
        op, out, loc = ins.op, ins.out, ins.loc
        if op is Op.LINE_LANE:
            lane = int(cast(Const, ins.args[1]).value)
            return [Instr(Op.ASSIGN, out, (self.lanes[cast(Local, ins.args[0])][lane],), loc)]
        if op is Op.LINE_BUILD:
            lanes = self.lanes[cast(Local, out)]
            return [Instr(Op.ASSIGN, t, (a,), loc) for t, a in zip(lanes, ins.args, strict=True)]
        if op in (Op.LOAD_LINE, Op.STORE_LINE):
            return self._access(ins)
        if op in LANE_WISE_OPS and out is not None and out.width > 1:
            return [
                Instr(op, self.lanes[out][k], tuple(self._lane(a, k) for a in ins.args), loc)  # type: ignore[misc]  # lanes of operands are operands
                for k in range(out.width)
            ]
        return [ins]

    def _access(self, ins: Instr) -> list[Stmt]:
        arr, index, loc = ins.args[0], cast(Operand, ins.args[1]), ins.loc
        line = cast(Local, ins.out if ins.op is Op.LOAD_LINE else ins.args[2])
        width, elem = line.width, index.elem
        if self.whole is not None and self.whole(ins):
            vector = self._new(f"{line.name}_line", line, width)
            lanes = self.lanes[line]
            if ins.op is Op.LOAD_LINE:
                picks = (
                    Instr(Op.LINE_LANE, t, (vector, Const(k, Elem.U32)), loc)
                    for k, t in enumerate(lanes)
                )
                return [Instr(Op.LOAD_LINE, vector, ins.args, loc), *picks]
            built = Instr(Op.LINE_BUILD, vector, lanes, loc)
            return [built, Instr(Op.STORE_LINE, None, (arr, index, vector), loc)]
        stmts: list[Stmt] = []
        base: Operand
        if isinstance(index, Const):
            base = _wrapped(int(index.value) * width, index)
        else:
            base = self._new("_line_at", index)
            stmts.append(Instr(Op.MUL, base, (index, Const(width, elem)), loc))
        for k, lane in enumerate(self.lanes[line]):
            at: Operand = base
            if k and isinstance(base, Const):
                at = _wrapped(int(base.value) + k, index)
            elif k:
                at = self._new("_line_at", index)
                stmts.append(Instr(Op.ADD, at, (base, Const(k, elem)), loc))
            if ins.op is Op.LOAD_LINE:
                stmts.append(Instr(Op.INDEX, lane, (arr, at), loc))
            else:
                stmts.append(Instr(Op.INDEX_ASSIGN, None, (arr, at, lane), loc))
        return stmts


def _wrapped(value: int, like: Operand) -> Const:
    """``value`` wrapped to the integer type of ``like``, as the IR's arithmetic wraps."""
    bits = like.elem.bits
    value %= 1 << bits
    if like.elem.is_signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return Const(value, like.elem)
