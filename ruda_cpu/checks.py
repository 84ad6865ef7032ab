"""The sanitizer's calls in generated source: one statement before each checked instruction.

A kernel compiled to sanitize takes ``S``, a
:class:`~ruda_cpu.lockstep.sanitizer.BatchSanitizer`, after the batch ``g``; before each load,
store, atomic, barrier and ``fence_device`` it calls ``S`` with the instruction's *site*, a
position in the module's ``SITES`` table of ``(file:line, array)`` rows that :class:`Sites`
collects. Cooperative-matrix loads and stores are not checked. This module only renders text.
"""

from __future__ import annotations

import os

from ruda_core.ir import (
    ATOMIC_OPS,
    SYNC_REDUCE_OPS,
    Const,
    Instr,
    LocalArray,
    Op,
    Param,
    SharedArray,
)

from .expressions import Context, literal

__all__ = ["SANITIZER", "Sites", "check"]

#: The name of the tracker argument of a sanitizing kernel.
SANITIZER = "S"

_LOADS = frozenset({Op.INDEX, Op.ATOMIC_LOAD})


class Sites:
    """The ``(file:line, array)`` rows of a kernel's checked instructions, in source order."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str]] = []

    def add(self, ins: Instr, array: str) -> int:
        loc = ins.loc
        line = f"{os.path.basename(loc.file)}:{loc.line}" if loc is not None else "<generated>"
        self.rows.append((line, array))
        return len(self.rows) - 1

    def table(self) -> str:
        """The module-level assignment of the table."""
        return f"SITES = {tuple(self.rows)!r}"


def _value(x: object, ctx: Context) -> str:
    return literal(x) if isinstance(x, Const) else ctx.ref(x)


def check(
    ins: Instr, ctx: Context, mask: str, alive: str, sites: Sites, params: tuple[Param, ...]
) -> str | None:
    """The sanitizer's statement before ``ins`` run under ``mask`` (``alive``: the mask of the
    lanes that have not returned; ``params``: the kernel's array parameters in launch order),
    or None when ``ins`` needs no check."""
    op = ins.op
    s = SANITIZER
    if op is Op.SYNC_UNITS or op in SYNC_REDUCE_OPS:
        return f"{s}.barrier({sites.add(ins, '')}, {mask}, {alive})"
    if op is Op.FENCE_DEVICE:
        return f"{s}.fence_device({mask})"
    if op not in (Op.INDEX, Op.INDEX_ASSIGN) and op not in ATOMIC_OPS:
        return None
    target = ins.args[0]
    name = ctx.ref(target)
    site = sites.add(ins, getattr(target, "name", name))
    idx = _value(ins.args[1], ctx)
    atomic = op in ATOMIC_OPS
    load = op in _LOADS
    where = f"{site}, {name}, {idx}, {mask}"
    value = "None" if load or atomic else _value(ins.args[2], ctx)
    if isinstance(target, SharedArray):
        if load:
            return f"{s}.shared_read({where}, {atomic})"
        return f"{s}.shared_write({where}, {value}, {atomic})"
    if isinstance(target, LocalArray):
        return f"{s}.local_{'read' if load else 'write'}({where})"
    if atomic or target not in params or not ctx.is_written(target):
        return f"{s}.global_bounds({where})"
    k = params.index(target)
    if load:
        return f"{s}.global_read({site}, {k}, {name}, {idx}, {mask})"
    return f"{s}.global_write({site}, {k}, {name}, {idx}, {mask}, {value})"
