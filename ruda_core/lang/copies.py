"""Calls of :mod:`.pipeline` in kernels: each handler turns one call into ``COPY_ASYNC``,
``ASYNC_COMMIT`` or ``ASYNC_WAIT`` IR (see :mod:`ruda_core.ir.ops` for their meaning).
Registered in :data:`.intrinsics.HANDLERS`."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..ir import Const, Elem, Instr, Op, Param, SharedArray
from .lines import line_width
from .scope import Value

if TYPE_CHECKING:
    from .expressions import ExprBuilder
    from .intrinsics import Handler

__all__ = ["COPY_HANDLERS"]


def _count(b: ExprBuilder, name: str, args: list[Value], n: int, node: ast.AST) -> None:
    if len(args) != n:
        b.fail(f"pipeline.{name}() takes {n} arguments, got {len(args)}", node)


def _copy_async(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
    _count(b, "copy_async", args, 5, node)
    dst, src = args[0], args[2]
    if not isinstance(dst, SharedArray):
        b.fail(f"pipeline.copy_async(dst, i, src, j, N) writes a SharedMemory, not {dst}", node)
    if not isinstance(src, Param) or not src.is_array:
        b.fail(f"pipeline.copy_async(dst, i, src, j, N) reads a global array, not {src}", node)
    if src.elem is not dst.elem:
        b.fail(
            f"pipeline.copy_async() copies between arrays of one element type; '{src}' is "
            f"{src.elem} and '{dst}' is {dst.elem}",
            node,
        )
    width = line_width(b, args[4], "pipeline.copy_async(dst, i, src, j, N)", node)
    if width * dst.elem.nbytes not in (4, 8, 16):
        b.fail(
            f"pipeline.copy_async() moves lines of 4, 8 or 16 bytes; {width} elements of "
            f"{dst.elem} are {width * dst.elem.nbytes}",
            node,
        )
    i, j = b.index(args[1], node), b.index(args[3], node)
    b.append(Instr(Op.COPY_ASYNC, None, (dst, i, src, j, Const(width, Elem.U32)), b.loc))


def _commit(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
    _count(b, "commit", args, 0, node)
    b.append(Instr(Op.ASYNC_COMMIT, None, (), b.loc))


def _wait(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
    _count(b, "wait", args, 1, node)
    need = "pipeline.wait(n) needs a compile-time int n >= 0"
    n = b.comptime_int(args[0], lambda n: 0 <= n < 1 << 32, need, node)
    b.append(Instr(Op.ASYNC_WAIT, None, (Const(n, Elem.U32),), b.loc))


#: Handlers by intrinsic name.
COPY_HANDLERS: dict[str, Handler] = {
    "pipeline.copy_async": _copy_async,
    "pipeline.commit": _commit,
    "pipeline.wait": _wait,
}
