"""Calls of :mod:`.wgmma` in kernels: each handler turns one call into ``WGMMA_*`` IR (see
:mod:`ruda_core.ir.ops` for their meaning). Registered in :data:`.intrinsics.HANDLERS`."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..ir import (
    SWIZZLE_ATOM,
    WARPGROUP_ELEMS,
    WARPGROUP_K,
    WARPGROUP_M,
    WARPGROUP_NS,
    Const,
    Elem,
    Fragment,
    Instr,
    MatrixRole,
    Op,
    Param,
    SharedArray,
)
from .coerce import convert, implicit
from .scope import PyVal, Value

if TYPE_CHECKING:
    from .expressions import ExprBuilder
    from .intrinsics import Handler

__all__ = ["WARPGROUP_HANDLERS"]


def _count(b: ExprBuilder, name: str, args: list[Value], n: int, node: ast.AST) -> None:
    if len(args) != n:
        b.fail(f"wgmma.{name}() takes {n} arguments, got {len(args)}", node)


def _static_int(b: ExprBuilder, value: Value, what: str, node: ast.AST) -> int:
    n = value.value if isinstance(value, PyVal) else None
    if not isinstance(n, int) or isinstance(n, bool):
        shown = n if isinstance(value, PyVal) else "a run-time value"
        b.fail(f"{what} must be a compile-time int, got {shown}", node)
    return n


def _accumulator(b: ExprBuilder, value: Value, name: str, node: ast.AST) -> Fragment:
    if not isinstance(value, Fragment) or value.role is not MatrixRole.WARPGROUP:
        b.fail(f"wgmma.{name}() needs a wgmma.Accumulator, got {value}", node)
    return value


def _declare(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> Value:
    _count(b, "Accumulator", args, 1, node)
    n = _static_int(b, args[0], "wgmma.Accumulator(N)'s N", node)
    if n not in WARPGROUP_NS:
        b.fail(f"wgmma.Accumulator(N) needs N a multiple of 8 from 8 to 256, got {n}", node)
    name = b.unique(b.name_hint or "_accumulator")
    b.name_hint = None
    frag = Fragment(name, MatrixRole.WARPGROUP, WARPGROUP_M, n, WARPGROUP_K, Elem.F32)
    b.fragments.append(frag)
    return frag


def _fill(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
    _count(b, "fill", args, 2, node)
    acc = _accumulator(b, args[0], "fill", node)
    value = convert(b, args[1], Elem.F32, node, f"an element of '{acc.name}'")
    b.append(Instr(Op.WGMMA_FILL, None, (acc, value), b.loc))


def _no_operands(op: Op, name: str) -> Handler:
    def handle(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
        _count(b, name, args, 0, node)
        b.append(Instr(op, None, (), b.loc))

    return handle


def _mma_async(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
    _count(b, "mma_async", args, 6, node)
    acc = _accumulator(b, args[0], "mma_async", node)
    a, bb = args[1], args[3]
    if not isinstance(a, SharedArray) or not isinstance(bb, SharedArray):
        b.fail(f"wgmma.mma_async() reads A and B from SharedMemory, got {a} and {bb}", node)
    if a.elem not in WARPGROUP_ELEMS or bb.elem is not a.elem:
        b.fail(
            f"wgmma.mma_async() multiplies bf16 or f16 operands of one type, got '{a}' of "
            f"{a.elem} and '{bb}' of {bb.elem}",
            node,
        )
    block = _static_int(b, args[5], "wgmma.mma_async()'s block stride", node)
    if block < 0 or block % SWIZZLE_ATOM:
        b.fail(f"wgmma.mma_async()'s block stride must be a multiple of 512, got {block}", node)
    a_at = implicit(b, args[2], Elem.U32, node)
    b_at = implicit(b, args[4], Elem.U32, node)
    operands = (acc, a, a_at, bb, b_at, Const(block, Elem.U32))
    b.append(Instr(Op.WGMMA_MMA, None, operands, b.loc))


def _wait(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
    _count(b, "wait", args, 1, node)
    n = _static_int(b, args[0], "wgmma.wait(n)'s n", node)
    if not 0 <= n <= 7:
        b.fail(f"wgmma.wait(n) needs n from 0 to 7, got {n}", node)
    b.append(Instr(Op.WGMMA_WAIT, None, (Const(n, Elem.U32),), b.loc))


def _store(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
    _count(b, "store", args, 6, node)
    out = args[0]
    is_array = isinstance(out, SharedArray) or (isinstance(out, Param) and out.is_array)
    if not isinstance(out, SharedArray | Param) or not is_array or out.elem is not Elem.F32:
        b.fail(f"wgmma.store() writes a global array or SharedMemory of f32, not {out}", node)
    acc = _accumulator(b, args[2], "store", node)
    offset, stride, rows, cols = (implicit(b, args[k], Elem.U32, node) for k in (1, 3, 4, 5))
    b.append(Instr(Op.WGMMA_STORE, None, (out, offset, acc, stride, rows, cols), b.loc))


def _swizzle_line(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> Value:
    _count(b, "swizzle_line", args, 1, node)
    line = implicit(b, args[0], Elem.U32, node)
    row = b.emit(Op.SHR, Elem.U32, line, Const(3, Elem.U32))
    phase = b.emit(Op.BIT_AND, Elem.U32, row, Const(7, Elem.U32))
    return b.emit(Op.BIT_XOR, Elem.U32, line, phase)


#: Handlers by intrinsic name.
WARPGROUP_HANDLERS: dict[str, Handler] = {
    "wgmma.Accumulator": _declare,
    "wgmma.fill": _fill,
    "wgmma.fence": _no_operands(Op.WGMMA_FENCE, "fence"),
    "wgmma.mma_async": _mma_async,
    "wgmma.commit": _no_operands(Op.WGMMA_COMMIT, "commit"),
    "wgmma.wait": _wait,
    "wgmma.store": _store,
    "wgmma.swizzle_line": _swizzle_line,
}
