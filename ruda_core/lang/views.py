"""Views of arrays: ``a[lo:hi]`` of a global ``Array``, a ``SharedMemory``, a ``LocalArray`` or
another view, built from plain IR so every backend runs them.

Bounds clamp like Python's for non-negative values: ``lo`` and ``hi`` past the array's end
count as its end, and ``hi < lo`` gives an empty view (a negative compile-time bound is refused;
a negative run-time one counts as past the end). A view's index ``i`` addresses element
``lo + i`` of the array it views; an ``i`` past the view's length becomes an index past every
array (``2**32 - 1``), so a checked read gives 0 and a checked write is dropped, whatever the
array around the view holds.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..ir import Const, Elem, Op, Operand, Param, ParamKind, SharedArray
from .scope import Value, View

if TYPE_CHECKING:
    from .expressions import ExprBuilder

__all__ = ["address", "length", "tensor_index", "view"]

_OUTSIDE = Const(0xFFFFFFFF, Elem.U32)


def length(b: ExprBuilder, arr: Value) -> Operand:
    """The element count of an array or view, as a ``u32``."""
    if isinstance(arr, View):
        return arr.length
    if isinstance(arr, Param):
        return b.emit(Op.LEN, Elem.U32, arr)
    if isinstance(arr, SharedArray) and arr.size is not None:
        return arr.size
    return Const(arr.length, Elem.U32)  # type: ignore[union-attr]  # a shared or local array


def view(b: ExprBuilder, arr: Value, bounds: ast.Slice, node: ast.AST) -> View:
    """``arr[lo:hi]``."""
    if bounds.step is not None:
        b.fail("a view takes no step: a[lo:hi]", node)
    if isinstance(arr, Param) and arr.kind is ParamKind.TENSOR:
        b.fail(f"'{arr}' is a tensor; views are of arrays, shared memory and local arrays", node)
    n = length(b, arr)
    lo = _bound(b, bounds.lower, n) if bounds.lower is not None else Const(0, Elem.U32)
    hi = _bound(b, bounds.upper, n) if bounds.upper is not None else n
    size = b.emit(Op.SUB, Elem.U32, b.emit(Op.MAX, Elem.U32, hi, lo), lo)
    if isinstance(arr, View):
        return View(arr.base, b.emit(Op.ADD, Elem.U32, arr.offset, lo), size)
    return View(arr, lo, size)  # type: ignore[arg-type]  # an array, checked by the caller


def address(b: ExprBuilder, arr: Value, index: Operand) -> tuple[Value, Operand]:
    """The array and index that ``arr[index]`` reads or writes."""
    if not isinstance(arr, View):
        return arr, index
    inside, at = _below(b, index, arr.length)
    at = b.emit(Op.ADD, Elem.U32, arr.offset, at)
    return arr.base, b.emit(Op.SELECT, Elem.U32, inside, at, _OUTSIDE)


def tensor_index(b: ExprBuilder, t: Param, node: ast.Tuple) -> Operand:
    """The flat index of ``t[i0, i1, ...]`` for a tensor parameter: one index per axis, each
    scaled by that axis's stride. An index outside its axis (a negative one included) puts the
    whole index out of range, so a checked read gives 0 and a checked write is dropped."""
    if len(node.elts) != t.rank:
        b.fail(
            f"'{t}' has rank {t.rank}: give {t.rank} indices, one per axis, or one flat index",
            node,
        )
    flat: Operand | None = None
    inside: Operand | None = None
    for axis, element in enumerate(node.elts):
        d = Const(axis, Elem.U32)
        below, i = _below(b, b.index(b.expr(element), element), b.emit(Op.SHAPE, Elem.U32, t, d))
        term = b.emit(Op.MUL, Elem.U32, i, b.emit(Op.STRIDE, Elem.U32, t, d))
        flat = term if flat is None else b.emit(Op.ADD, Elem.U32, flat, term)
        inside = below if inside is None else b.emit(Op.AND, Elem.BOOL, inside, below)
    if flat is None or inside is None:
        b.fail(f"'{t}' has rank 0: index it with one flat index", node)
    return b.emit(Op.SELECT, Elem.U32, inside, flat, _OUTSIDE)


def _bound(b: ExprBuilder, node: ast.expr, n: Operand) -> Operand:
    """A slice bound clamped to ``n``."""
    inside, narrow = _below(b, b.index(b.expr(node), node, "a view's bound"), n)
    return b.emit(Op.SELECT, Elem.U32, inside, narrow, n)


def _below(b: ExprBuilder, index: Operand, n: Operand) -> tuple[Operand, Operand]:
    """Whether the integer ``index`` is below the ``u32`` ``n`` (a negative one is not), and
    ``index`` as a ``u32`` (meaningful where it is)."""
    wide = Elem.U64 if index.elem.bits == 64 else Elem.U32
    i = index if index.elem is wide else b.emit(Op.CAST, wide, index)
    limit = n if wide is Elem.U32 else b.emit(Op.CAST, wide, n)
    inside = b.emit(Op.LT, Elem.BOOL, i, limit)
    return inside, (i if wide is Elem.U32 else b.emit(Op.CAST, Elem.U32, i))
