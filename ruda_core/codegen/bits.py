"""Integer bit operations as portable C helpers: ``popcount``, ``leading_zeros``,
``trailing_zeros``, ``find_first_set``, ``reverse_bits``, ``mul_hi`` and saturating ``+ -``.

Every helper is plain C99 on the unsigned type of its width (``uint`` for 8 to 32 bits, masked to
the element's width; ``ulong`` for 64), so one definition serves every C-family dialect: counts
are SWAR bit sums, or the dialect's population count where it has one
(:meth:`.Dialect.popcount_native`); ``mul_hi`` of 64-bit operands is assembled from 32-bit
halves, and signed saturation widens (up to 32 bits) or tests the sign of the overflow (64 bits).
Counts return ``u32``; the others the operands' type. This module formats text only.
"""

from __future__ import annotations

from ..ir import BIT_COUNTS, INT_BINARY, INT_UNARY, Elem, Op
from .dialect import Dialect
from .prelude import Prelude, bare

__all__ = ["BIT_OPS", "bit_helper"]

#: The operations this module lowers.
BIT_OPS = BIT_COUNTS | INT_UNARY | INT_BINARY

_M1, _M2, _M4 = 0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F
_M8, _M16, _M32 = 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF, 0x00000000FFFFFFFF
_ONES = 0x0101010101010101
#: the swap masks of reverse_bits, by shift
_SWAPS = {1: _M1, 2: _M2, 4: _M4, 8: _M8, 16: _M16, 32: _M32}


class _Writer:
    """Helpers of one element type registered in one prelude."""

    def __init__(self, d: Dialect, prelude: Prelude, elem: Elem) -> None:
        self.d, self.prelude, self.elem = d, prelude, elem
        self.wide = elem.bits == 64
        self.u = Elem.U64 if self.wide else Elem.U32
        self.ut, self.ct = d.type_name(self.u), d.type_name(elem)

    def lit(self, value: int, elem: Elem | None = None) -> str:
        target = elem or self.u
        return self.d.int_literal(value & ((1 << target.bits) - 1), target)

    def unsigned(self, x: str) -> str:
        """``x`` as the unsigned computation type, its bits above the element's width clear."""
        if self.elem.bits in (32, 64):
            return self.d.convert(self.u, x)
        return f"({self.d.convert(self.u, x)} & {self.lit((1 << self.elem.bits) - 1)})"

    def add(self, name: str, ret: str, params: list[tuple[str, str]], body: list[str]) -> str:
        return self.prelude.add(name, self.d.function(ret, name, params, body))

    # -- counts ---------------------------------------------------------------------------------
    def popcount_word(self) -> str:
        """Set bits of an unsigned word of the computation type."""
        name = f"ruda_popcount_word{self.u.bits}"
        if name in self.prelude:
            return name
        native = self.d.popcount_native(self.u)
        if native is not None:
            body = [f"return {self.d.convert(Elem.U32, native.format(v='v'))};"]
            return self.add(name, self.d.type_name(Elem.U32), [(self.ut, "v")], body)
        top = self.u.bits - 8
        body = [
            f"v = v - ((v >> 1) & {self.lit(_M1)});",
            f"v = (v & {self.lit(_M2)}) + ((v >> 2) & {self.lit(_M2)});",
            f"v = (v + (v >> 4)) & {self.lit(_M4)};",
            f"return {self.d.convert(Elem.U32, f'((v * {self.lit(_ONES)}) >> {top})')};",
        ]
        return self.add(name, self.d.type_name(Elem.U32), [(self.ut, "v")], body)

    def count(self, op: Op) -> str:
        name = f"ruda_{op.value}_{self.elem}"
        if name in self.prelude:
            return name
        pop, bits, u32 = self.popcount_word(), self.elem.bits, self.d.type_name(Elem.U32)
        body = [f"{self.d.declare(self.ut, ('v', self.unsigned('x')))};"]
        if op is Op.POPCOUNT:
            body.append(f"return {pop}(v);")
        elif op is Op.LEADING_ZEROS:
            shifts = [1, 2, 4, 8, 16, 32][: 6 if self.wide else 5]
            body += [f"v = v | (v >> {s});" for s in shifts]
            body.append(f"return {bits}u - {pop}(v);")
        else:
            trailing = f"{pop}((v & ({self.lit(0)} - v)) - {self.lit(1)})"
            miss = f"{bits}u" if op is Op.TRAILING_ZEROS else "0u"
            hit = trailing if op is Op.TRAILING_ZEROS else f"{trailing} + 1u"
            body.append(f"return {bare(self.d.select(f'v == {self.lit(0)}', miss, hit))};")
        return self.add(name, u32, [(self.ct, "x")], body)

    # -- same-type results ----------------------------------------------------------------------
    def reverse(self) -> str:
        name = f"ruda_reverse_bits_{self.elem}"
        if name in self.prelude:
            return name
        body = [f"{self.d.declare(self.ut, ('v', self.unsigned('x')))};"]
        for s, mask in list(_SWAPS.items())[: 6 if self.wide else 5]:
            m = self.lit(mask)
            body.append(f"v = ((v >> {s}) & {m}) | ((v & {m}) << {s});")
        if self.elem.bits < 32:
            body.append(f"v = v >> {32 - self.elem.bits};")
        body.append(f"return {self.d.convert(self.elem, 'v')};")
        return self.add(name, self.ct, [(self.ct, "x")], body)

    def mul_hi(self) -> str:
        name = f"ruda_mul_hi_{self.elem}"
        if name in self.prelude:
            return name
        d, e, ct = self.d, self.elem, self.ct
        if e.bits <= 32:
            wide = Elem.I64 if e.is_signed else Elem.U64
            product = f"({d.convert(wide, 'a')} * {d.convert(wide, 'b')})"
            body = [f"return {d.convert(e, f'({product} >> {e.bits})')};"]
        else:
            ut, low = self.ut, self.lit(_M32)
            declared = [
                [("x", d.convert(self.u, "a")), ("y", d.convert(self.u, "b"))],
                [("x0", f"x & {low}"), ("x1", "x >> 32"), ("y0", f"y & {low}"), ("y1", "y >> 32")],
                [("p0", "x0 * y0"), ("p1", "x0 * y1"), ("p2", "x1 * y0"), ("p3", "x1 * y1")],
                [("mid", f"(p0 >> 32) + (p1 & {low}) + (p2 & {low})")],
                [("hi", "p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32)")],
            ]
            body = [f"{d.declare(ut, *inits)};" for inits in declared]
            if e.is_signed:  # the unsigned product, less b * 2**64 (a < 0) and a * 2**64 (b < 0)
                zero = self.lit(0)
                less = f"{d.select('a < 0', 'y', zero)} - {d.select('b < 0', 'x', zero)}"
                body.append(f"hi = hi - {less};")
            body.append(f"return {d.convert(e, 'hi')};")
        return self.add(name, ct, [(ct, "a"), (ct, "b")], body)

    def saturating(self, op: Op) -> str:
        name = f"ruda_{op.value}_{self.elem}"
        if name in self.prelude:
            return name
        e, ct = self.elem, self.ct
        sign = "+" if op is Op.SATURATING_ADD else "-"
        lo = self.d.int_literal(-(1 << (e.bits - 1)) if e.is_signed else 0, e)
        hi = self.d.int_literal((1 << (e.bits - 1)) - 1 if e.is_signed else (1 << e.bits) - 1, e)
        if not e.is_signed:
            body = (
                [f"{ct} r = ({ct})(a + b);", f"return r < a ? {hi} : r;"]
                if op is Op.SATURATING_ADD
                else [f"return a < b ? {lo} : ({ct})(a - b);"]
            )
        elif e.bits <= 32:
            i64 = self.d.type_name(Elem.I64)
            body = [
                f"{i64} r = ({i64})a {sign} ({i64})b;",
                f"return ({ct})(r < {lo} ? {lo} : r > {hi} ? {hi} : r);",
            ]
        else:
            ut = self.ut
            overflow = "((a ^ s) & (b ^ s)) < 0" if sign == "+" else "((a ^ b) & (a ^ s)) < 0"
            body = [
                f"{ct} s = ({ct})(({ut})a {sign} ({ut})b);",
                f"return {overflow} ? (a < 0 ? {lo} : {hi}) : s;",
            ]
        return self.add(name, ct, [(ct, "a"), (ct, "b")], body)


def bit_helper(d: Dialect, prelude: Prelude, op: Op, elem: Elem) -> str:
    """The name of the helper computing ``op`` on ``elem``, registered in ``prelude``."""
    w = _Writer(d, prelude, elem)
    if op in BIT_COUNTS:
        return w.count(op)
    if op is Op.REVERSE_BITS:
        return w.reverse()
    if op is Op.MUL_HI:
        return w.mul_hi()
    return w.saturating(op)
