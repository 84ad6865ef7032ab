"""Plane (warp / subgroup) operations: the dialect's native form where it has one, otherwise
built from its shuffles.

Reductions without a native form are butterflies over ``shuffle("xor")`` (every lane ends with
the same value; the plane width must be a power of two and the plane full), inclusive sums are
Kogge-Stone scans over ``shuffle("up")`` and exclusive sums shift the inclusive sum up one lane
(exact for floats, unlike subtracting the lane's own value). Combining uses the same expressions
as the plain operations, so integer sums wrap. This module builds expressions and helpers only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import UnsupportedFeature
from ..ir import Elem, Op
from .expr import ExprLowering
from .prelude import function

__all__ = ["PlaneLowering"]

_REDUCE = {
    Op.PLANE_SUM: Op.ADD,
    Op.PLANE_PROD: Op.MUL,
    Op.PLANE_MIN: Op.MIN,
    Op.PLANE_MAX: Op.MAX,
}


class PlaneLowering:
    """Plane operations for one emission. ``lane`` returns the C name of the unit's lane
    (``UNIT_POS_PLANE``), marking it used."""

    __slots__ = ("d", "expr", "lane")

    def __init__(self, expr: ExprLowering, lane: Callable[[], str]) -> None:
        self.expr = expr
        self.d = expr.d
        self.lane = lane

    def expression(self, op: Op, elem: Elem, args: Sequence[str]) -> str:
        """The C expression of plane ``op`` on values of ``elem``; ``args`` as text."""
        native = self.d.plane_native(op, elem)
        if native is not None:
            return native.format(v=args[0], lane=args[-1])
        if op in (Op.PLANE_BROADCAST, Op.PLANE_SHUFFLE):
            return self.d.shuffle("idx", elem, args[0], args[1])
        if op in _REDUCE:
            return f"{self._butterfly(op, elem)}({args[0]})"
        if op in (Op.PLANE_INCLUSIVE_SUM, Op.PLANE_EXCLUSIVE_SUM):
            return f"{self._scan(op, elem)}({args[0]}, {self.lane()})"
        raise UnsupportedFeature(f"{self.d.name} has no {op} on {elem}")

    def _butterfly(self, op: Op, elem: Elem) -> str:
        name = f"ruda_{op.value}_{elem}"
        if name in self.expr.prelude:
            return name
        d, lit = self.d, self.expr.literal
        u32 = d.type_name(Elem.U32)
        ctype = d.type_name(elem)
        body = [
            f"for ({u32} m = {d.plane_dim()} / {lit(2, Elem.U32)}; m > {lit(0, Elem.U32)}; "
            f"m = m / {lit(2, Elem.U32)}) {{",
            f"    {ctype} other = {d.shuffle('xor', elem, 'v', 'm')};",
            f"    v = {self.expr.apply(_REDUCE[op], elem, ['v', 'other'])};",
            "}",
            "return v;",
        ]
        text = function(d.function_prefix, ctype, name, [f"{ctype} v"], body)
        return self.expr.prelude.add(name, text)

    def _scan(self, op: Op, elem: Elem) -> str:
        name = f"ruda_{op.value}_{elem}"
        if name in self.expr.prelude:
            return name
        d, lit = self.d, self.expr.literal
        u32, ctype = d.type_name(Elem.U32), d.type_name(elem)
        one = lit(1, Elem.U32)
        if op is Op.PLANE_INCLUSIVE_SUM:
            body = [
                f"for ({u32} d = {one}; d < {d.plane_dim()}; d = d * {lit(2, Elem.U32)}) {{",
                f"    {ctype} t = {d.shuffle('up', elem, 'v', 'd')};",
                "    if (lane >= d) {",
                f"        v = {self.expr.apply(Op.ADD, elem, ['v', 't'])};",
                "    }",
                "}",
                "return v;",
            ]
        else:
            inclusive = self._scan(Op.PLANE_INCLUSIVE_SUM, elem)
            body = [
                f"{ctype} s = {inclusive}(v, lane);",
                f"{ctype} t = {d.shuffle('up', elem, 's', one)};",
                f"return lane == {lit(0, Elem.U32)} ? {lit(0, elem)} : t;",
            ]
        params = [f"{ctype} v", f"{u32} lane"]
        return self.expr.prelude.add(name, function(d.function_prefix, ctype, name, params, body))
