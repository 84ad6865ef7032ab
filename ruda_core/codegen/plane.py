"""Plane (warp / subgroup) operations: the dialect's native form where it has one, otherwise
built from its shuffles.

A plane has :meth:`~.dialect.Dialect.plane_lanes` lanes that exist: ``PLANE_DIM``, fewer in the
last plane of a cube whose unit count is not a multiple of it. Reductions without a native form
are butterflies over ``shuffle("xor")`` on a whole plane (every lane ends with the same value; the
plane width must be a power of two) and, on a partial plane, a tree over ``shuffle("down")`` into
lane 0 that skips partners past the last lane, then a read of lane 0 (a butterfly that skipped
missing partners would leave some lanes without the values of others). Inclusive sums are
Kogge-Stone scans over ``shuffle("up")``, whose sources are lower lanes and so always exist;
exclusive sums shift the inclusive sum up one lane (exact for floats, unlike subtracting the
lane's own value). Combining uses the same expressions as the plain operations, so integer sums
wrap. A ballot without a native form is the plane sum of each lane's bit (distinct bits add like
they or), an election without one is lane 0 (where every lane of the plane reaches it, as plane
operations require). Broadcasts and shuffles read a lane that exists (lane 0 in place of any
other) and give 0 where the source lane does not; the relative shuffles keep the lane's own
value there. This module builds expressions and helpers only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import UnsupportedFeature
from ..ir import Elem, Op
from .expr import ExprLowering
from .prelude import bare

__all__ = ["PlaneLowering"]

_REDUCE = {
    Op.PLANE_SUM: Op.ADD,
    Op.PLANE_PROD: Op.MUL,
    Op.PLANE_MIN: Op.MIN,
    Op.PLANE_MAX: Op.MAX,
}
_RELATIVE = {Op.PLANE_SHUFFLE_UP: "up", Op.PLANE_SHUFFLE_DOWN: "down", Op.PLANE_SHUFFLE_XOR: "xor"}
_READS = (Op.PLANE_BROADCAST, Op.PLANE_SHUFFLE)
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
        if op in _READS:
            return f"{self._read(op, elem)}({args[0]}, {args[1]})"
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
            one = f"({lit(1, Elem.U32)} << {lane})"
            bit = self.d.select(f"({args[0]} && {low})", one, lit(0, Elem.U32))
            return self.expression(Op.PLANE_SUM, Elem.U32, [bit])
        if op in _REDUCE:
            return f"{self._reduce(op, elem)}({args[0]}, {self.lane()})"
        if op in (Op.PLANE_INCLUSIVE_SUM, Op.PLANE_EXCLUSIVE_SUM):
            return f"{self._scan(op, elem)}({args[0]}, {self.lane()})"
        raise UnsupportedFeature(f"{self.d.name} has no {op} on {elem}")

    def _read(self, op: Op, elem: Elem) -> str:
        """``ruda_<op>_<elem>(v, src)``: ``v`` of lane ``src``, or 0 where that lane does not
        exist (the dialect's read is only ever asked for a lane that does)."""
        name = f"ruda_{op.value}_{elem}"
        if name in self.expr.prelude:
            return name
        d, lit = self.d, self.expr.literal
        u32, ctype = d.type_name(Elem.U32), d.type_name(elem)
        native = d.plane_native(op, elem)
        source = bare(d.select("inside", "src", lit(0, Elem.U32)))
        zero = lit(False if elem is Elem.BOOL else 0, elem)
        read = (
            native.format(v="v", lane=source)
            if native is not None
            else d.shuffle("idx", elem, "v", source)
        )
        body = [
            f"{d.declare(d.type_name(Elem.BOOL), ('inside', f'src < {d.plane_lanes()}'))};",
            f"{d.declare(ctype, ('other', read))};",
            f"return {bare(d.select('inside', 'other', zero))};",
        ]
        params = [(ctype, "v"), (u32, "src")]
        return self.expr.prelude.add(name, d.function(ctype, name, params, body))

    def _reduce(self, op: Op, elem: Elem) -> str:
        """``ruda_<op>_<elem>(v, lane)``: a butterfly on a whole plane, a tree into lane 0 and a
        read of it on a partial one."""
        name = f"ruda_{op.value}_{elem}"
        if name in self.expr.prelude:
            return name
        d, lit = self.d, self.expr.literal
        u32, ctype = d.type_name(Elem.U32), d.type_name(elem)
        zero, two = lit(0, Elem.U32), lit(2, Elem.U32)
        combined = self.expr.apply(_REDUCE[op], elem, ["v", "other"])
        first = d.declare(u32, ("m", f"{d.plane_dim()} / {two}"))
        halves = f"for ({first}; m > {zero}; m = m / {two}) {{"
        width = d.unrolled_plane_width
        halvings = [width >> k for k in range(1, width.bit_length())]
        butterfly = [f"{d.declare(ctype, ('other', d.shuffle('xor', elem, 'v', 'm')))};"]
        butterfly.append(f"v = {combined};")
        tree = [f"{d.declare(ctype, ('other', d.shuffle('down', elem, 'v', 'm')))};"]
        tree += ["if (lane + m < lanes) {", f"    v = {combined};", "}"]
        body = [
            f"{d.declare(u32, ('lanes', d.plane_lanes()))};",
            f"if (lanes == {d.plane_dim()}) {{",
            *(f"    {x}" for x in self._steps(halves, "m", halvings, butterfly)),
            "    return v;",
            "}",
            *self._steps(halves, "m", halvings, tree),
            f"return {d.shuffle('idx', elem, 'v', zero)};",
        ]
        params = [(ctype, "v"), (u32, "lane")]
        return self.expr.prelude.add(name, d.function(ctype, name, params, body))

    def _scan(self, op: Op, elem: Elem) -> str:
        name = f"ruda_{op.value}_{elem}"
        if name in self.expr.prelude:
            return name
        d, lit = self.d, self.expr.literal
        u32, ctype = d.type_name(Elem.U32), d.type_name(elem)
        one, two = lit(1, Elem.U32), lit(2, Elem.U32)
        if op is Op.PLANE_INCLUSIVE_SUM:
            head = f"for ({d.declare(u32, ('d', one))}; d < {d.plane_dim()}; d = d * {two}) {{"
            step = [f"{d.declare(ctype, ('t', d.shuffle('up', elem, 'v', 'd')))};"]
            step += ["if (lane >= d) {", f"    v = {self.expr.apply(Op.ADD, elem, ['v', 't'])};"]
            doublings = [1 << k for k in range(d.unrolled_plane_width.bit_length() - 1)]
            body = [*self._steps(head, "d", doublings, [*step, "}"]), "return v;"]
        else:
            inclusive = self._scan(Op.PLANE_INCLUSIVE_SUM, elem)
            body = [
                f"{d.declare(ctype, ('s', f'{inclusive}(v, lane)'))};",
                f"{d.declare(ctype, ('t', d.shuffle('up', elem, 's', one)))};",
                f"return {bare(d.select(f'lane == {lit(0, Elem.U32)}', lit(0, elem), 't'))};",
            ]
        params = [(ctype, "v"), (u32, "lane")]
        return self.expr.prelude.add(name, d.function(ctype, name, params, body))

    def _steps(self, head: str, var: str, values: list[int], lines: list[str]) -> list[str]:
        """``lines`` (which read the ``u32`` ``var``) in the loop ``head``, or, where the
        dialect writes plane loops out (:attr:`~.dialect.Dialect.unrolled_plane_width`), once
        for each of ``values`` in a block of its own."""
        if not self.d.unrolled_plane_width:
            return [head, *(f"    {x}" for x in lines), "}"]
        out: list[str] = []
        u32 = Elem.U32
        for value in values:
            declared = self.d.declare(self.d.type_name(u32), (var, self.expr.literal(value, u32)))
            out += ["{", f"    {declared};", *(f"    {x}" for x in lines), "}"]
        return out

    def _relative(self, op: Op, elem: Elem) -> str:
        """``ruda_<op>_<elem>(v, delta or mask, lane)``: the shuffle, or ``v`` where its source
        lane does not exist."""
        name = f"ruda_{op.value}_{elem}"
        if name in self.expr.prelude:
            return name
        d, mode = self.d, _RELATIVE[op]
        u32, ctype = d.type_name(Elem.U32), d.type_name(elem)
        arg = "mask" if mode == "xor" else "delta"
        inside = {
            "up": "delta <= lane",
            "down": f"delta < {d.plane_lanes()} - lane",
            "xor": f"(lane ^ mask) < {d.plane_lanes()}",
        }[mode]
        body = [
            f"{d.declare(ctype, ('other', d.shuffle(mode, elem, 'v', arg)))};",
            f"return {bare(d.select(inside, 'other', 'v'))};",
        ]
        params = [(ctype, "v"), (u32, arg), (u32, "lane")]
        return self.expr.prelude.add(name, d.function(ctype, name, params, body))
