"""Plane (warp / subgroup) operations: the dialect's native form where it has one, otherwise
built from its shuffles.

Reductions without a native form are butterflies over ``shuffle("xor")`` (every lane ends with
the same value; the plane width must be a power of two and the plane full), inclusive sums are
Kogge-Stone scans over ``shuffle("up")`` and exclusive sums shift the inclusive sum up one lane
(exact for floats, unlike subtracting the lane's own value). Combining uses the same expressions
as the plain operations, so integer sums wrap. A ballot without a native form is the plane sum
of each lane's bit (distinct bits add like they or), an election without one is lane 0 (where
every lane of the plane reaches it, as plane operations require). The relative shuffles are
helpers that keep the lane's own value wherever the dialect's shuffle would read outside the
plane. This module builds expressions and helpers only.
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
_RELATIVE = {Op.PLANE_SHUFFLE_UP: "up", Op.PLANE_SHUFFLE_DOWN: "down", Op.PLANE_SHUFFLE_XOR: "xor"}
#: Lanes from this one up have no bit in a ballot (its result is a ``u32``).
_BALLOT_LANES = 32


class PlaneLowering:
    """Plane operations for one emission. ``lane`` returns the C name of the unit's lane
    (``UNIT_POS_PLANE``), marking it used."""

    __slots__ = ("d", "expr", "lane")

    def __init__(self, expr: ExprLowering, lane: Callable[[], str]) -> None:
        self.expr = expr
        self.d = expr.d
        self.lane = lane

    def expression(self, op: Op, elem: Elem, args: Sequence[str]) -> str:
        """The C expression of plane ``op`` on values of ``elem`` (``bool`` for
        ``PLANE_ELECT``); ``args`` as text."""
        if op in _RELATIVE:
            return f"{self._relative(op, elem)}({args[0]}, {args[1]}, {self.lane()})"
        if op is Op.PLANE_ELECT:
            args = [self.lane()]
        native = self.d.plane_native(op, elem)
        if native is not None:
            return native.format(v=args[0], lane=args[-1])
        lit = self.expr.literal
        if op is Op.PLANE_ELECT:
            return f"({args[0]} == {lit(0, Elem.U32)})"
        if op is Op.PLANE_BALLOT:
            lane = self.lane()
            low = f"{lane} < {lit(_BALLOT_LANES, Elem.U32)}"
            bit = f"(({args[0]} && {low}) ? ({lit(1, Elem.U32)} << {lane}) : {lit(0, Elem.U32)})"
            return self.expression(Op.PLANE_SUM, Elem.U32, [bit])
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

    def _relative(self, op: Op, elem: Elem) -> str:
        """``ruda_<op>_<elem>(v, delta or mask, lane)``: the shuffle, or ``v`` where its source
        lane is outside the plane."""
        name = f"ruda_{op.value}_{elem}"
        if name in self.expr.prelude:
            return name
        d, mode = self.d, _RELATIVE[op]
        u32, ctype = d.type_name(Elem.U32), d.type_name(elem)
        arg = "mask" if mode == "xor" else "delta"
        inside = {
            "up": "delta <= lane",
            "down": f"delta < {d.plane_dim()} - lane",
            "xor": f"(lane ^ mask) < {d.plane_dim()}",
        }[mode]
        body = [
            f"{ctype} other = {d.shuffle(mode, elem, 'v', arg)};",
            f"return {inside} ? other : v;",
        ]
        params = [f"{ctype} v", f"{u32} {arg}", f"{u32} lane"]
        return self.expr.prelude.add(name, function(d.function_prefix, ctype, name, params, body))
