"""Calls of :mod:`.mbarrier` in kernels: each handler turns one call into ``MBAR_*`` or
``BULK_COPY`` IR (see :mod:`ruda_core.ir.ops` for their meaning). Registered in
:data:`.intrinsics.HANDLERS`."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..ir import (
    BARRIER_ELEM,
    BULK_ALIGN_NBYTES,
    MAX_ARRIVALS,
    MAX_BOX_ROWS,
    TENSOR_ROW_NBYTES,
    Const,
    Elem,
    Instr,
    Op,
    Operand,
    Param,
    SharedArray,
)
from .coerce import implicit
from .scope import PyVal, Value

if TYPE_CHECKING:
    from .expressions import ExprBuilder
    from .intrinsics import Handler

__all__ = ["BARRIER_HANDLERS"]


def _count(b: ExprBuilder, name: str, args: list[Value], n: int, node: ast.AST) -> None:
    if len(args) != n:
        b.fail(f"mbarrier.{name}() takes {n} arguments, got {len(args)}", node)


def _barrier(
    b: ExprBuilder, bars: Value, i: Value, name: str, node: ast.AST
) -> tuple[SharedArray, Operand]:
    """The barrier ``bars, i`` of a call: an ``mbarrier.Barriers`` array and a ``u32`` index."""
    if not isinstance(bars, SharedArray) or bars.elem is not BARRIER_ELEM or bars.size:
        b.fail(f"mbarrier.{name}() needs the mbarrier.Barriers array, got {bars}", node)
    if isinstance(i, PyVal) and isinstance(i.value, int) and not 0 <= i.value < bars.length:
        b.fail(f"mbarrier.{name}(): barrier {i.value} of '{bars}' (it has {bars.length})", node)
    return bars, implicit(b, i, Elem.U32, node)


def _declare(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> Value:
    _count(b, "Barriers", args, 1, node)
    n = b.comptime_int(
        args[0], lambda n: n >= 1, "mbarrier.Barriers(n) needs a compile-time int n >= 1", node
    )
    bars = SharedArray(b.unique(b.name_hint or "_barriers"), BARRIER_ELEM, n)
    b.name_hint = None
    b.shared.append(bars)
    return bars


def _init(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
    _count(b, "init", args, 3, node)
    bars, i = _barrier(b, args[0], args[1], "init", node)
    count = args[2].value if isinstance(args[2], PyVal) else None
    if isinstance(count, int) and not 1 <= count <= MAX_ARRIVALS:
        b.fail(f"mbarrier.init() needs a count from 1 to {MAX_ARRIVALS}, got {count}", node)
    operands = (bars, i, implicit(b, args[2], Elem.U32, node))
    b.append(Instr(Op.MBAR_INIT, None, operands, b.loc))


def _arrive(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
    _count(b, "arrive", args, 2, node)
    b.append(Instr(Op.MBAR_ARRIVE, None, _barrier(b, args[0], args[1], "arrive", node), b.loc))


def _with_u32(op: Op, name: str) -> Handler:
    """``arrive_expect_tx`` and ``wait``: a barrier and a ``u32``."""

    def handle(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
        _count(b, name, args, 3, node)
        bars, i = _barrier(b, args[0], args[1], name, node)
        b.append(Instr(op, None, (bars, i, implicit(b, args[2], Elem.U32, node)), b.loc))

    return handle


def _arrays(
    b: ExprBuilder, shared: Value, other: Value, name: str, node: ast.AST
) -> tuple[SharedArray, Param]:
    """The ``SharedMemory`` and the global array of the copy ``name(…)``, of one element
    type."""
    if not isinstance(shared, SharedArray):
        b.fail(f"mbarrier.{name}() copies a SharedMemory, not {shared}", node)
    if not isinstance(other, Param) or not other.is_array or other.elem is not shared.elem:
        b.fail(
            f"mbarrier.{name}() copies a global array of the SharedMemory's element type "
            f"({shared.elem}), not {other}",
            node,
        )
    return shared, other


def _runs(
    b: ExprBuilder, args: list[Value], name: str, node: ast.AST
) -> tuple[SharedArray | Param, Operand, SharedArray | Param, Operand, Operand]:
    """The operands ``dst, dst_at, src, src_at, n`` of the bulk copy ``name(…)`` after checking
    its arrays (``SharedMemory`` and a global array, one element type, either way round) and a
    compile-time ``n``'s size."""
    dst, src = args[0], args[2]
    shared, other = _arrays(b, *((dst, src) if name == "bulk_copy" else (src, dst)), name, node)
    n = args[4].value if isinstance(args[4], PyVal) else None
    if isinstance(n, int) and (n < 1 or n * shared.elem.nbytes % BULK_ALIGN_NBYTES):
        b.fail(
            f"mbarrier.{name}() copies a positive multiple of {BULK_ALIGN_NBYTES} bytes; "
            f"{n} elements of {shared.elem} are {n * shared.elem.nbytes}",
            node,
        )
    dst_at, src_at, count = (implicit(b, args[k], Elem.U32, node) for k in (1, 3, 4))
    if name == "bulk_copy":
        return shared, dst_at, other, src_at, count
    return other, dst_at, shared, src_at, count


def _bulk_copy(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
    _count(b, "bulk_copy", args, 7, node)
    runs = _runs(b, args, "bulk_copy", node)
    bars, i = _barrier(b, args[5], args[6], "bulk_copy", node)
    b.append(Instr(Op.BULK_COPY, None, (*runs, bars, i), b.loc))


def _tensor_copy(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
    _count(b, "tensor_copy", args, 11, node)
    dst, dst_at, src, rows, cols, row, col = args[:7]
    shared, other = _arrays(b, dst, src, "tensor_copy", node)
    dims = []
    for dim in (rows, cols):
        if not isinstance(dim, Param) or dim.is_array or dim.elem is not Elem.U32:
            b.fail(
                "mbarrier.tensor_copy() takes the matrix's rows and cols as u32 scalar "
                f"parameters of the kernel (the host builds its tensor map from them), not {dim}",
                node,
            )
        dims.append(dim)
    nbytes = shared.elem.nbytes
    box_rows = b.comptime_int(
        args[7],
        lambda n: 1 <= n <= MAX_BOX_ROWS,
        f"mbarrier.tensor_copy() needs a compile-time box of 1 to {MAX_BOX_ROWS} rows",
        node,
    )
    box_cols = b.comptime_int(
        args[8],
        lambda n: n * nbytes == TENSOR_ROW_NBYTES,
        f"mbarrier.tensor_copy() needs a compile-time box of {TENSOR_ROW_NBYTES} bytes a row: "
        f"{TENSOR_ROW_NBYTES // nbytes} columns of {shared.elem}",
        node,
    )
    bars, i = _barrier(b, args[9], args[10], "tensor_copy", node)
    at, r, c = (implicit(b, x, Elem.U32, node) for x in (dst_at, row, col))
    box = (Const(box_rows, Elem.U32), Const(box_cols, Elem.U32))
    operands = (shared, at, other, *dims, r, c, *box, bars, i)
    b.append(Instr(Op.TENSOR_COPY, None, operands, b.loc))


def _bulk_store(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
    _count(b, "bulk_store", args, 5, node)
    b.append(Instr(Op.BULK_STORE, None, _runs(b, args, "bulk_store", node), b.loc))


def _no_operands(op: Op, name: str) -> Handler:
    def handle(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
        _count(b, name, args, 0, node)
        b.append(Instr(op, None, (), b.loc))

    return handle


def _bulk_wait(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
    _count(b, "bulk_wait", args, 1, node)
    need = "mbarrier.bulk_wait(n) needs a compile-time int n from 0 to 7"
    n = b.comptime_int(args[0], lambda n: 0 <= n <= 7, need, node)
    b.append(Instr(Op.BULK_WAIT, None, (Const(n, Elem.U32),), b.loc))


#: Handlers by intrinsic name.
BARRIER_HANDLERS: dict[str, Handler] = {
    "mbarrier.Barriers": _declare,
    "mbarrier.init": _init,
    "mbarrier.arrive": _arrive,
    "mbarrier.arrive_expect_tx": _with_u32(Op.MBAR_EXPECT_TX, "arrive_expect_tx"),
    "mbarrier.wait": _with_u32(Op.MBAR_WAIT, "wait"),
    "mbarrier.bulk_copy": _bulk_copy,
    "mbarrier.tensor_copy": _tensor_copy,
    "mbarrier.fence_shared": _no_operands(Op.BULK_FENCE, "fence_shared"),
    "mbarrier.bulk_store": _bulk_store,
    "mbarrier.bulk_commit": _no_operands(Op.BULK_COMMIT, "bulk_commit"),
    "mbarrier.bulk_wait": _bulk_wait,
}
