"""Comparisons of a signed with an unsigned integer, exact as in Python and NumPy.

C converts both sides of ``i32 < u32`` to ``u32``, so ``-1 < 5u`` is false; arithmetic keeps
that rule (``i32 + u32`` is ``u32``, see the programming guide), but a comparison compares the
values. Below 64 bits both sides widen to a signed type that holds them both; against a ``u64``
a sign test decides for negative values (``s < u`` is ``s < 0 or u64(s) < u``). The lowering
is plain IR, so every backend computes the same answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir import Const, Elem, Op, Operand

if TYPE_CHECKING:
    from .scope import BuilderState

__all__ = ["exact_mixed_sign", "mixes_sign"]

#: ``a op b`` is ``b flipped[op] a``
_FLIPPED = {Op.LT: Op.GT, Op.LE: Op.GE, Op.GT: Op.LT, Op.GE: Op.LE, Op.EQ: Op.EQ, Op.NE: Op.NE}
#: ``s op u`` for every negative ``s`` and every unsigned ``u``
_WHEN_NEGATIVE = {Op.LT: True, Op.LE: True, Op.NE: True, Op.GT: False, Op.GE: False, Op.EQ: False}


def mixes_sign(a: Elem, b: Elem) -> bool:
    """Whether ``a`` and ``b`` are integers of opposite signedness."""
    return a.is_int and b.is_int and a.is_signed != b.is_signed


def exact_mixed_sign(b: BuilderState, op: Op, x: Operand, y: Operand) -> Operand:
    """``x op y`` (a comparison) of two integers of opposite signedness, compared as values."""
    if not x.elem.is_signed:
        x, y, op = y, x, _FLIPPED[op]
    if y.elem.bits < 64:  # a signed type twice the unsigned one's width holds both exactly
        wide = Elem.I64 if max(x.elem.bits, 2 * y.elem.bits) > 32 else Elem.I32
        return b.emit(op, Elem.BOOL, _cast(b, x, wide), _cast(b, y, wide))
    negative = b.emit(Op.LT, Elem.BOOL, x, Const(0, x.elem))
    unsigned = b.emit(op, Elem.BOOL, _cast(b, x, Elem.U64), y)
    if _WHEN_NEGATIVE[op]:
        return b.emit(Op.OR, Elem.BOOL, negative, unsigned)
    return b.emit(Op.AND, Elem.BOOL, b.emit(Op.NOT, Elem.BOOL, negative), unsigned)


def _cast(b: BuilderState, x: Operand, elem: Elem) -> Operand:
    return x if x.elem is elem else b.emit(Op.CAST, elem, x)
