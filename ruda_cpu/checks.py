"""The sanitizer's calls in generated source: one statement before each checked instruction.

A kernel compiled to sanitize takes ``S``, a
:class:`~ruda_cpu.lockstep.sanitizer.BatchSanitizer`, after the batch ``g``; before each load,
store, atomic, barrier and ``fence_device`` it calls ``S`` with the instruction's *site*, a
position in the module's ``SITES`` table of ``(file:line, array)`` rows that :class:`Sites`
collects. A checked launch's guard of a whole line (``LOAD_LINE``/``STORE_LINE``, run as one
access per element) is checked before the guard for the lanes whose line is out of bounds
(``line_guards``); the elements of the others are checked where they are accessed.
Cooperative-matrix loads and stores are not checked, but a store counts as writing the whole
array (in shared or in device memory). This module only renders text.
"""

from __future__ import annotations

import os

from ruda_core.ir import (
    ATOMIC_OPS,
    SYNC_REDUCE_OPS,
    Block,
    Const,
    If,
    Instr,
    Local,
    LocalArray,
    Loop,
    Op,
    Param,
    RangeLoop,
    SharedArray,
)

from .expressions import Context, literal

__all__ = ["SANITIZER", "Sites", "bounds_guards", "check", "line_check", "line_guards"]

#: The name of the tracker argument of a sanitizing kernel.
SANITIZER = "S"

_LOADS = frozenset({Op.INDEX, Op.ATOMIC_LOAD})
#: Atomics whose result does not depend on the element's old value (a swap only returns it).
_ATOMIC_WRITES = frozenset({Op.ATOMIC_STORE, Op.ATOMIC_SWAP})
#: Plane operations that read another lane's value: checked for an inactive source lane.
_PLANE_READS = frozenset(
    {
        Op.PLANE_BROADCAST,
        Op.PLANE_SHUFFLE,
        Op.PLANE_SHUFFLE_UP,
        Op.PLANE_SHUFFLE_DOWN,
        Op.PLANE_SHUFFLE_XOR,
    }
)


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


def bounds_guards(body: Block) -> dict[int, tuple[Instr, object]]:
    """The guards that a checked launch's bounds pass put around single accesses
    (``_bN = LT(index, length)`` then ``if _bN: access``), by ``id`` of the ``If``: the access
    and the length. The sanitizer checks such an access before its guard, under the guard's
    mask, so that the lanes the guard turns away are reported out of bounds."""
    found: dict[int, tuple[Instr, object]] = {}

    def visit(block: Block) -> None:
        for before, stmt in zip((None, *block), block, strict=False):
            if isinstance(stmt, If):
                then = stmt.then
                if (
                    len(then) == 1
                    and isinstance(then[0], Instr)
                    and (then[0].op in (Op.INDEX, Op.INDEX_ASSIGN) or then[0].op in ATOMIC_OPS)
                    and isinstance(stmt.cond, Local)
                    and stmt.cond.name.startswith("_b")
                    and isinstance(before, Instr)
                    and before.op is Op.LT
                    and before.out is stmt.cond
                ):
                    found[id(stmt)] = (then[0], before.args[1])
                visit(stmt.then)
                visit(stmt.orelse)
            elif isinstance(stmt, RangeLoop | Loop):
                visit(stmt.body)

    visit(body)
    return found


def line_guards(body: Block) -> dict[int, tuple[Instr, object, int, object]]:
    """The guards that a checked launch's bounds pass put around whole-line accesses, after
    the lines were lowered to one access per element (``_bN = LT(line, lines)`` then
    ``if _bN:`` the line's first element at ``_line_at = MUL(line, width)`` and its accesses),
    by ``id`` of the ``If``: the first access, the line index, the width and the number of
    whole lines."""
    found: dict[int, tuple[Instr, object, int, object]] = {}

    def visit(block: Block) -> None:
        for before, stmt in zip((None, *block), block, strict=False):
            if isinstance(stmt, If):
                then = stmt.then
                first = then[0] if then else None
                accesses = [
                    s for s in then if isinstance(s, Instr) and s.op in (Op.INDEX, Op.INDEX_ASSIGN)
                ]
                if (
                    isinstance(first, Instr)
                    and first.op is Op.MUL
                    and first.out is not None
                    and first.out.name.startswith("_line_at")
                    and isinstance(first.args[1], Const)
                    and accesses
                    and isinstance(stmt.cond, Local)
                    and stmt.cond.name.startswith("_b")
                    and isinstance(before, Instr)
                    and before.op is Op.LT
                    and before.out is stmt.cond
                ):
                    width = int(first.args[1].value)
                    found[id(stmt)] = (accesses[0], before.args[0], width, before.args[1])
                visit(stmt.then)
                visit(stmt.orelse)
            elif isinstance(stmt, RangeLoop | Loop):
                visit(stmt.body)

    visit(body)
    return found


def line_check(
    access: Instr, ctx: Context, mask: str, sites: Sites, line: object, width: int, lines: object
) -> str:
    """The sanitizer's statement before a whole-line guard run under ``mask``: ``access`` is
    the line's first element access, ``line`` the line index the guard compares with ``lines``,
    the number of whole lines of ``width`` elements."""
    target = access.args[0]
    site = sites.add(access, getattr(target, "name", ctx.ref(target)))
    at, count = _value(line, ctx), _value(lines, ctx)
    return f"{SANITIZER}.line_bounds({site}, {at}, {width}, {mask}, {count})"


def _value(x: object, ctx: Context) -> str:
    return literal(x) if isinstance(x, Const) else ctx.ref(x)


def check(
    ins: Instr,
    ctx: Context,
    mask: str,
    alive: str,
    sites: Sites,
    params: tuple[Param, ...],
    length: object = None,
) -> str | None:
    """The sanitizer's statement before ``ins`` run under ``mask`` (``alive``: the mask of the
    lanes that have not returned; ``params``: the kernel's array parameters in launch order;
    ``length``: the operand a checked launch's guard compares the index with, when ``ins`` is
    guarded and the check runs before the guard), or None when ``ins`` needs no check."""
    op = ins.op
    s = SANITIZER
    bound = "" if length is None else f", length={_value(length, ctx)}"
    if op is Op.SYNC_PLANE:
        return f"{s}.plane_barrier()"
    if op in _PLANE_READS:
        source = _value(ins.args[1], ctx)
        return f"{s}.plane_read({sites.add(ins, '')}, L.{op.value}, {source}, {mask})"
    if op is Op.SYNC_UNITS or op in SYNC_REDUCE_OPS:
        return f"{s}.barrier({sites.add(ins, '')}, {mask}, {alive})"
    if op is Op.FENCE_DEVICE:
        return f"{s}.fence_device({mask})"
    if op is Op.MBAR_WAIT:
        return f"{s}.barrier_wait({mask})"
    copies = (Op.CMMA_STORE, Op.WGMMA_STORE, Op.BULK_COPY, Op.TENSOR_COPY)
    if op in copies and isinstance(ins.args[0], SharedArray):
        return f"{s}.shared_filled({ctx.ref(ins.args[0])}, {mask})"
    if op in copies and ins.args[0] in params:
        return f"{s}.global_filled({params.index(ins.args[0])}, {mask})"
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
            return f"{s}.shared_read({where}, {atomic}{bound})"
        updates = atomic and op not in _ATOMIC_WRITES
        return f"{s}.shared_write({where}, {value}, {atomic}{bound}, updates={updates})"
    if isinstance(target, LocalArray):
        return f"{s}.local_{'read' if load else 'write'}({where}{bound})"
    if target not in params:
        return f"{s}.global_bounds({where}{bound})"
    k = params.index(target)
    if length is None:  # unguarded (an unchecked launch): the launch's length, not the buffer's
        bound = f", length={ctx.ref(('len', target))}"
    if atomic:
        reads, writes = op not in _ATOMIC_WRITES, op is not Op.ATOMIC_LOAD
        return f"{s}.global_atomic({site}, {k}, {name}, {idx}, {mask}, {reads}, {writes}{bound})"
    if not ctx.is_written(target):
        return f"{s}.global_load({site}, {k}, {name}, {idx}, {mask}{bound})"
    if load:
        return f"{s}.global_read({site}, {k}, {name}, {idx}, {mask}{bound})"
    return f"{s}.global_write({site}, {k}, {name}, {idx}, {mask}, {value}{bound})"
