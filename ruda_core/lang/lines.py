"""Lines in the kernel language: vectors of 2, 4 or 8 lanes of one element type, after
CubeCL's ``Line<T>``.

* ``v = x.load_line(i, N)`` reads line ``i`` of the global array (or tensor) or shared array
  ``x``: elements ``i*N .. i*N+N-1``; ``N`` is a compile-time 2, 4 or 8. ``x.store_line(i, v)``
  writes it. A line is one vector access (16 bytes at most) where the target has them: a
  kernel's shared arrays start aligned for the lines it accesses them by. Under ``launch``'s
  checks a line is in bounds when all of it is (``i < x.len() // N``): the partial last line of
  an array whose length is not a multiple of ``N`` reads as zeros and its store is dropped, so
  handle a tail with scalar accesses.
* Operators, comparisons (giving ``bool`` lines), casts (``f16(v)``) and the math intrinsics
  apply lane by lane; a scalar operand is used in every lane, and the usual typing rules apply
  to the elements. ``select(c, a, b)`` picks per lane.
* ``v[k]`` is lane ``k`` (a compile-time int); ``len(v)`` is the width; ``v.sum()``,
  ``v.min()``, ``v.max()`` reduce the lanes in order (lane 0 first), ``v.any()`` and
  ``v.all()`` reduce a ``bool`` line.

A line is never a condition, an index or an array element: reduce it or pick a lane first.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..ir import LINE_WIDTHS, Const, Elem, Local, Op, Operand, Param, SharedArray
from .scope import PyVal, Value, is_line

if TYPE_CHECKING:
    from .expressions import ExprBuilder

__all__ = ["array_line_method", "lane", "line_method", "line_width"]

_REDUCTIONS = {"sum": Op.ADD, "min": Op.MIN, "max": Op.MAX, "any": Op.OR, "all": Op.AND}


def line_width(b: ExprBuilder, value: Value, what: str, node: ast.AST) -> int:
    """A compile-time line width (2, 4 or 8)."""
    need = f"{what} needs a compile-time line width in {LINE_WIDTHS}"
    return b.comptime_int(value, lambda n: n in LINE_WIDTHS, need, node)


def array_line_method(
    b: ExprBuilder, arr: Param | SharedArray, name: str, args: list[Value], node: ast.Call
) -> Value | None:
    """``arr.load_line(i, N)`` and ``arr.store_line(i, v)`` of a global array or tensor, or of
    a shared array."""
    if len(args) != 2:
        b.fail(f"{arr}.{name}() takes 2 arguments, got {len(args)}", node)
    index = b.index(args[0], node)
    if name == "load_line":
        width = line_width(b, args[1], f"{arr}.load_line(i, N)", node)
        return b.emit(Op.LOAD_LINE, arr.elem, arr, index, width=width)
    value = args[1]
    if not isinstance(value, Local) or not is_line(value):
        b.fail(f"{arr}.store_line(i, v) stores a line; {value} is not one", node)
    if value.elem is not arr.elem:
        b.fail(
            f"cannot store the line {value.type_text} into '{arr}' of {arr.elem}; cast it with "
            f"{arr.elem}(v)",
            node,
        )
    b.emit_to(None, Op.STORE_LINE, arr, index, value)
    return None


def lane(b: ExprBuilder, line: Local, index: Value, node: ast.AST) -> Operand:
    """``line[k]`` for a compile-time ``k``."""
    k = index.value if isinstance(index, PyVal) else None
    if not isinstance(k, int) or isinstance(k, bool):
        b.fail(f"a lane of the line '{line.name}' needs a compile-time int index", node)
    if not 0 <= k < line.width:
        b.fail(f"lane {k} is outside the line '{line.name}' of {line.width} lanes", node)
    return b.emit(Op.LINE_LANE, line.elem, line, Const(k, Elem.U32))


def line_method(b: ExprBuilder, line: Local, name: str, args: list[Value], node: ast.Call) -> Value:
    """The reductions ``v.sum()``, ``v.min()``, ``v.max()``, ``v.any()``, ``v.all()``."""
    op = _REDUCTIONS.get(name)
    if op is None or args:
        b.fail(f"a line has the methods {', '.join(f'{m}()' for m in _REDUCTIONS)}", node)
    logical = op in (Op.AND, Op.OR)
    if logical != (line.elem is Elem.BOOL):
        kind = "a bool line" if logical else "a line of numbers"
        b.fail(f"{name}() reduces {kind}; '{line.name}' is {line.type_text}", node)
    result: Operand = lane(b, line, PyVal(0), node)
    for k in range(1, line.width):
        result = b.emit(op, line.elem, result, lane(b, line, PyVal(k), node))
    return result
