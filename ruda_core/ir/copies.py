"""Asynchronous copies in a definition: their lowering to plain line copies.

:func:`lower_async_copies` is the reference meaning of ``COPY_ASYNC``, ``ASYNC_COMMIT`` and
``ASYNC_WAIT`` (:mod:`ruda_core.ir.ops`) for a target without asynchronous copies: each copy
becomes ``LOAD_LINE`` of its source line into a temporary line and ``STORE_LINE`` of it to its
destination line, done when it is issued (one of the behaviours the semantics allow), and the
commits and waits disappear. The bounds pass runs it first in ``CHECKED`` and ``VALIDATE``
modes, so that each side of a copy is checked as a line access. This module rewrites IR only;
it must not know about any backend.
"""

from __future__ import annotations

from dataclasses import replace
from typing import cast

from .kernel import Instr, KernelDefinition, Stmt, rewrite, walk
from .ops import ASYNC_COPY_OPS, Op
from .types import Elem
from .variables import ArrayVar, Const, Local, Operand

__all__ = ["copy_width", "lower_async_copies", "uses_async_copies"]


def uses_async_copies(defn: KernelDefinition) -> bool:
    """Whether ``defn`` has an asynchronous-copy operation."""
    return any(isinstance(s, Instr) and s.op in ASYNC_COPY_OPS for s in walk(defn.body))


def copy_width(ins: Instr) -> int:
    """The line width ``w`` of a verified ``COPY_ASYNC``."""
    return int(cast(Const, ins.args[4]).value)


def lower_async_copies(defn: KernelDefinition) -> KernelDefinition:
    """``defn`` with every asynchronous copy done when issued (see the module docstring);
    ``defn`` itself when it has none. A verified input gives a verified output."""
    if not uses_async_copies(defn):
        return defn
    names = {p.name for p in defn.params} | {v.name for v in defn.locals}
    names |= {s.name for s in defn.shared} | {a.name for a in defn.local_arrays}
    temps: dict[tuple[Elem, int], Local] = {}

    def temp(elem: Elem, width: int) -> Local:
        local = temps.get((elem, width))
        if local is None:
            base = name = f"_copy_{elem.value}x{width}"
            n = 0
            while name in names:
                n += 1
                name = f"{base}_{n}"
            names.add(name)
            local = temps[(elem, width)] = Local(name, elem, width)
        return local

    def instr(ins: Instr) -> list[Stmt]:
        if ins.op in (Op.ASYNC_COMMIT, Op.ASYNC_WAIT):
            return []
        if ins.op is not Op.COPY_ASYNC:
            return [ins]
        dst, i, src, j = cast(tuple[ArrayVar, Operand, ArrayVar, Operand], ins.args[:4])
        line = temp(src.elem, copy_width(ins))
        return [
            Instr(Op.LOAD_LINE, line, (src, j), ins.loc),
            Instr(Op.STORE_LINE, None, (dst, i, line), ins.loc),
        ]

    body = rewrite(defn.body, instr)
    return replace(defn, locals=(*defn.locals, *temps.values()), body=body)
