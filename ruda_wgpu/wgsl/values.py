"""WGSL expressions: types, literals and the value operations of :mod:`ruda_core.ir.ops`.

WGSL is not C: conversions are constructor calls (``f32(x)``), there is no implicit conversion
and no ``?:`` (``select(false_value, true_value, condition)`` evaluates both, which is the IR's
``SELECT``), unsigned values cannot be negated, and integer arithmetic already wraps (division
by zero gives the dividend, ``MIN / -1`` gives ``MIN``: both "unspecified" in the IR, neither a
crash). ``f16`` is computed in ``f32`` and rounded once per operation, as the IR defines it
(to nearest even, by the bits: ``helpers.ROUND_F16``);
operations WGSL lacks (``log1p``, ``erf``, ``lgamma``, Python's floor division of signed
integers …) are helper functions registered in a :class:`~ruda_core.codegen.prelude.Prelude`.
This module builds expression text only; statements and declarations are
:mod:`ruda_wgpu.wgsl.emitter`'s.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

from ruda_core.codegen.expr import OPERATORS
from ruda_core.codegen.prelude import Prelude
from ruda_core.errors import UnsupportedFeature
from ruda_core.ir import COMPARE_OPS, FLOAT_TESTS, Elem, Op

from .helpers import (
    FLOAT_HELPERS,
    INT_HELPERS,
    LGAMMA_POSITIVE,
    POW_POSITIVE,
    ROUND_F16,
    ZERO_SAFE_PRODUCT,
)

__all__ = ["NARROW", "TYPES", "WgslValues", "literal", "wrap"]

#: The WGSL type of each element type ruda holds in WGSL (64-bit integers need the adapter's
#: ``shader-int64``, ``f16`` its ``shader-f16``). ``f64`` is not one: the driver never offers it
#: (see :func:`ruda_wgpu.server._features`), so floats are ``f16`` or ``f32``, with 32-bit bits.
TYPES: dict[Elem, str] = {e: e.value for e in (Elem.BOOL, Elem.I32, Elem.U32, Elem.I64, Elem.U64)}
TYPES |= {Elem.F16: "f16", Elem.F32: "f32", Elem.I8: "i32", Elem.I16: "i32", Elem.U8: "u32"}
TYPES[Elem.U16] = "u32"
_SUFFIX = {Elem.I32: "i", Elem.U32: "u", Elem.I64: "li", Elem.U64: "lu", Elem.F16: "h"}
_SUFFIX |= {Elem.I8: "i", Elem.I16: "i", Elem.U8: "u", Elem.U16: "u"}
#: Integers WGSL lacks, held in ``i32``/``u32`` and wrapped to their width after each operation.
NARROW = frozenset({Elem.I8, Elem.I16, Elem.U8, Elem.U16})
#: Float operations that are one WGSL builtin call, of the operation's name.
_BUILTIN = frozenset(
    {Op.EXP, Op.EXP2, Op.LOG, Op.LOG2, Op.SQRT, Op.SIN, Op.COS, Op.TAN, Op.SINH, Op.COSH}
    | {Op.ASINH, Op.ATANH, Op.FLOOR, Op.CEIL, Op.TRUNC, Op.ABS, Op.FMA}
    | {Op.ROUND}  # half to even in WGSL
)
#: The bit counts of 32-bit integers that are one WGSL builtin.
_COUNTS_32 = {Op.POPCOUNT: "countOneBits", Op.LEADING_ZEROS: "countLeadingZeros"}
_COUNTS_32[Op.TRAILING_ZEROS] = "countTrailingZeros"


def literal(value: int | float | bool, elem: Elem) -> str:
    """``value`` as a WGSL expression of ``elem`` (parenthesised where it is not an atom)."""
    if elem is Elem.BOOL:
        return "true" if value else "false"
    ty = TYPES.get(elem)
    if ty is None:
        raise UnsupportedFeature(f"WGSL has no {elem} type")
    if elem.is_float:
        x = float(value)
        if math.isnan(x) or math.isinf(x):  # WGSL has no literal for these: their bits
            return _special(x, elem)
        text = (
            repr(x)
            if elem is not Elem.F16
            else repr(float(struct.unpack("<e", struct.pack("<e", x))[0]))
        )
        if "e" not in text and "." not in text:
            text += ".0"
        text += "h" if elem is Elem.F16 else "f"
        return f"({text})" if x < 0 or text.startswith("-") else text
    n = int(value)
    low = -(1 << (elem.bits - 1)) if elem.is_signed else 0
    if elem.is_signed and n == low:  # the most negative value is not a negated literal
        return f"({ty}({n + 1}{_SUFFIX[elem]}) - 1{_SUFFIX[elem]})"
    text = f"{n}{_SUFFIX[elem]}"
    return f"({text})" if n < 0 else text


def wrap(x: str, elem: Elem) -> str:
    """``x``, a value of ``elem``'s WGSL type, wrapped to ``elem``'s width (a narrow integer
    held in 32 bits); ``x`` itself for other types."""
    if elem not in NARROW:
        return x
    if elem.is_signed:
        shift = literal(32 - elem.bits, Elem.U32)
        return f"(({x} << {shift}) >> {shift})"
    return f"({x} & {literal((1 << elem.bits) - 1, Elem.U32)})"


def _shift(amount: str, bits: int) -> str:
    """A shift amount taken modulo ``bits``, as a ``u32``; a ``u32`` literal (the emitter's
    constant amounts, already reduced) as it is: naga does not fold a conversion of a 64-bit
    literal."""
    if amount.endswith("u") and amount[:-1].isdigit():
        return amount
    return f"(u32({amount}) & {bits - 1}u)"


def _magnitude_test(x: str, elem: Elem, test: str) -> str:
    """``test`` (``"> 2139095040u"``: NaN) of the ``f32`` bits of ``x`` without its sign: a
    compiler may assume no NaN or infinity and fold ``x != x`` or ``x == inf`` away."""
    x = f"f32({x})" if elem is Elem.F16 else x
    return f"((bitcast<u32>({x}) & 2147483647u) {test})"


def _isnan(x: str, elem: Elem) -> str:
    """Whether ``x`` is a NaN, by its bits."""
    return _magnitude_test(x, elem, "> 2139095040u")


def _nan_unless_finite(value: str, x: str) -> str:
    """``value``, or NaN where ``x`` is an infinity or a NaN (both ``f32``), by its bits: what a
    compiler that assumes finite values folds to ``value`` alone."""
    test = _magnitude_test(x, Elem.F32, ">= 2139095040u")
    return f"select({value}, {_special(math.nan, Elem.F32)}, {test})"


def _special(x: float, elem: Elem) -> str:
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    value = f"bitcast<f32>({bits}u)"
    return value if elem is Elem.F32 else f"f16({value})"


class WgslValues:
    """Value operations as WGSL expressions; helpers they call go to ``prelude``."""

    __slots__ = ("prelude",)

    def __init__(self, prelude: Prelude) -> None:
        self.prelude = prelude

    # -- conversions ------------------------------------------------------------------------

    def cast(self, x: str, source: Elem, target: Elem) -> str:
        """``x`` (of ``source``) converted with the IR's ``CAST`` rules."""
        if source is target:
            return x
        if target is Elem.BOOL and source.is_float:  # by the bits: NaN is true too
            return _magnitude_test(x, source, "!= 0u")
        if target is Elem.BOOL:
            return f"({x} != {literal(0, source)})"
        if source is Elem.BOOL:
            return f"select({literal(0, target)}, {literal(1, target)}, {x})"
        if target is Elem.F16:  # through f32 (WGSL converts no 64-bit int to f16), rounded once
            return self._half(x if source is Elem.F32 else f"f32({x})")
        if source is Elem.F16 and target.is_int:
            x = f"f32({x})"  # through f32: no direct conversion between f16 and 64-bit ints
        elif source.is_int and target.is_int and target.bits == 64 and source.bits < 64:
            # widened in the source's signedness, then reinterpreted: naga's conversions
            # between 32-bit and 64-bit integers of different signedness extend wrongly
            wide = Elem.I64 if source.is_signed else Elem.U64
            x = f"{TYPES[wide]}({x})"
            return x if wide is target else f"bitcast<{TYPES[target]}>({x})"
        return wrap(f"{TYPES[target]}({x})", target)

    def bitcast(self, x: str, source: Elem, target: Elem) -> str:
        if source is target:
            return x
        if source is Elem.F16:  # the half's bits, through the 32-bit packing builtins
            bits = f"(pack2x16float(vec2<f32>(f32({x}), 0.0f)) & 0xffffu)"
            return wrap(f"{TYPES[target]}({bits})", target)
        if target is Elem.F16:
            return f"f16(unpack2x16float(u32({x}) & 0xffffu).x)"
        if target in NARROW:
            return wrap(f"{TYPES[target]}({x})", target)
        return f"bitcast<{TYPES[target]}>({x})"

    # -- operations -------------------------------------------------------------------------

    def apply(self, op: Op, elem: Elem, args: Sequence[str]) -> str:
        """``op`` on operands of ``elem`` (for SELECT: the values' element)."""
        if op is Op.ASSIGN:
            return args[0]
        if op is Op.SELECT:
            return f"select({args[2]}, {args[1]}, {args[0]})"
        if op in COMPARE_OPS and elem is Elem.BOOL:  # WGSL orders no bools: as 0 and 1
            a, b = (f"select(0u, 1u, {x})" for x in args[:2])
            return f"({a} {OPERATORS[op]} {b})"
        if op is Op.NE and elem.is_float:  # naga's != is ordered: false for a NaN
            return f"(!({args[0]} == {args[1]}))"
        if op in COMPARE_OPS:
            return f"({args[0]} {OPERATORS[op]} {args[1]})"
        if elem is Elem.BOOL:
            if op is Op.NOT:
                return f"(!{args[0]})"
            if op in (Op.AND, Op.OR, Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR):
                symbol = {Op.BIT_AND: "&", Op.BIT_OR: "|", Op.BIT_XOR: "!="}.get(op, OPERATORS[op])
                return f"({args[0]} {symbol} {args[1]})"
            raise UnsupportedFeature(f"{op} is not defined on bool")
        if elem.is_float:
            if elem is Elem.F16:  # computed in f32, rounded once
                wide = [f"f32({a})" for a in args]
                value = self._float(op, Elem.F32, wide)
                return value if op in FLOAT_TESTS else self._half(value)
            return self._float(op, elem, args)
        if elem in NARROW:
            return self._narrow(op, elem, args)
        return self._integer(op, elem, args)

    def zero_product(self, x: str, negative: bool, elem: Elem) -> str:
        """``0.0 * x`` (``-0.0 * x`` where ``negative``) for an ``f16`` or ``f32`` ``x``: a zero
        of ``x``'s sign (flipped for ``-0.0``), or NaN for an infinity or a NaN, which a
        compiler that assumes finite values would fold to a plain zero."""
        x32 = f"f32({x})" if elem is Elem.F16 else x
        sign = f"(bitcast<u32>({x32}) & 2147483648u){' ^ 2147483648u' if negative else ''}"
        value = _nan_unless_finite(f"bitcast<f32>({sign})", x32)
        return value if elem is Elem.F32 else self._half(value)

    def zero_safe_product(self, a: str, b: str, elem: Elem) -> str:
        """``a * b`` for ``f16`` or ``f32`` factors either of which a compiler may know to be a
        zero: IEEE's zero or NaN whatever it folds."""
        self.prelude.add("ruda_mul_f32", ZERO_SAFE_PRODUCT)
        if elem is Elem.F32:
            return f"ruda_mul_f32({a}, {b})"
        return self._half(f"ruda_mul_f32(f32({a}), f32({b}))")

    def _half(self, x: str) -> str:
        """The ``f32`` ``x`` as an ``f16``, rounded to nearest even whatever the driver."""
        self.prelude.add("ruda_round_f16", ROUND_F16)
        return f"f16(ruda_round_f16({x}))"

    def _narrow(self, op: Op, elem: Elem, t: Sequence[str]) -> str:
        """An operation on an integer held in 32 bits: computed there and wrapped, with bit
        counts and reversal over its own width."""
        bits = elem.bits
        mask = literal((1 << bits) - 1, Elem.U32)
        pattern = f"(u32({t[0]}) & {mask})"
        if op is Op.POPCOUNT:
            return f"countOneBits({pattern})"
        if op is Op.LEADING_ZEROS:
            return f"(countLeadingZeros({pattern}) - {32 - bits}u)"
        if op is Op.TRAILING_ZEROS:
            return f"min(countTrailingZeros({pattern}), {bits}u)"
        if op is Op.FIND_FIRST_SET:
            return f"select(0u, countTrailingZeros({pattern}) + 1u, {pattern} != 0u)"
        wide = Elem.I32 if elem.is_signed else Elem.U32
        if op is Op.REVERSE_BITS:
            return wrap(f"{TYPES[wide]}(reverseBits({pattern}) >> {32 - bits}u)", elem)
        if op is Op.MUL_HI:
            return wrap(f"(({t[0]} * {t[1]}) >> {bits}u)", elem)
        if op is Op.SATURATING_SUB and not elem.is_signed:
            return f"select({t[0]} - {t[1]}, 0u, {t[1]} > {t[0]})"
        if op in (Op.SATURATING_ADD, Op.SATURATING_SUB):  # exact in 32 bits, then clamped
            low = -(1 << (bits - 1)) if elem.is_signed else 0
            value = f"({t[0]} {'+' if op is Op.SATURATING_ADD else '-'} {t[1]})"
            return f"clamp({value}, {literal(low, wide)}, {literal(low + (1 << bits) - 1, wide)})"
        if op in (Op.SHL, Op.SHR):
            amount = _shift(t[1], bits)
            return wrap(f"({t[0]} {'<<' if op is Op.SHL else '>>'} {amount})", elem)
        return wrap(self._integer(op, wide, t), elem)

    # -- floats -----------------------------------------------------------------------------

    def _float(self, op: Op, elem: Elem, w: Sequence[str]) -> str:
        ty, one, zero = TYPES[elem], literal(1.0, elem), literal(0.0, elem)
        if op is Op.SUB and w[0] == w[1] and elem is Elem.F32:  # x - x: 0, or NaN for an
            # infinity or a NaN
            return _nan_unless_finite(zero, w[0])
        if op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV):
            return f"({w[0]} {OPERATORS[op]} {w[1]})"
        if op in _BUILTIN:
            return f"{op.value}({', '.join(w)})"
        if op is Op.NEG:
            return f"(-{w[0]})"
        if op is Op.FLOOR_DIV:  # exact where the driver's / is correctly rounded (lavapipe):
            # WGSL allows 2.5 ulp, and a residual correction is not exact either, since WGSL's
            # fma may round twice ("inherited from x * y + z")
            return f"floor({w[0]} / {w[1]})"
        if op is Op.MOD:
            return f"({w[0]} - floor({w[0]} / {w[1]}) * {w[1]})"
        if op is Op.RECIP:
            return f"({one} / {w[0]})"
        if op is Op.RSQRT:
            return f"({one} / sqrt({w[0]}))"
        if op in (Op.MIN, Op.MAX):  # C's fmin/fmax: a NaN operand gives the other one
            f = "min" if op is Op.MIN else "max"
            a, b = w
            return f"select(select({f}({a}, {b}), {a}, {_isnan(b, elem)}), {b}, {_isnan(a, elem)})"
        if op is Op.CLAMP:
            low = self._float(Op.MAX, elem, w[:2])
            return self._float(Op.MIN, elem, [low, w[2]])
        if op is Op.ISNAN:
            return _isnan(w[0], elem)
        if op in (Op.ISINF, Op.ISFINITE):
            return _magnitude_test(w[0], elem, f"{'==' if op is Op.ISINF else '<'} 2139095040u")
        if op is Op.LOG10:
            return f"(log2({w[0]}) * {literal(math.log10(2.0), elem)})"
        if op is Op.COPYSIGN:
            negative = f"({w[1]} < {zero} || ({w[1]} == {zero} && {one} / {w[1]} < {zero}))"
            return f"select(abs({w[0]}), -abs({w[0]}), {negative})"
        helper = FLOAT_HELPERS.get(op)
        if helper is None:
            raise UnsupportedFeature(f"{op} on {elem} has no WGSL form")
        name = f"ruda_{op.value}_{ty}"
        params = ", ".join(f"{p}: {ty}" for p in "abc"[: len(w)])
        if op is Op.LGAMMA:
            self.prelude.add(f"ruda_lgamma_pos_{ty}", LGAMMA_POSITIVE)
        if op is Op.POW:
            self.prelude.add(f"ruda_pow_positive_{ty}", POW_POSITIVE)
        if op in (Op.ASIN, Op.ACOS, Op.ATAN2):
            self._float(Op.ATAN, elem, ["a"])
        self.prelude.add(name, f"fn {name}({params}) -> {ty} {{\n{helper}\n}}")
        return f"{name}({', '.join(w)})"

    # -- integers ---------------------------------------------------------------------------

    def _integer(self, op: Op, elem: Elem, t: Sequence[str]) -> str:
        ty, zero = TYPES[elem], literal(0, elem)
        bits = elem.bits
        if op in (Op.ADD, Op.SUB, Op.MUL, Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR):
            return f"({t[0]} {OPERATORS[op]} {t[1]})"
        if op is Op.NEG:
            return f"(-{t[0]})" if elem.is_signed else f"({zero} - {t[0]})"
        if op is Op.ABS:
            return f"abs({t[0]})" if elem.is_signed else t[0]
        if op is Op.BIT_NOT:
            return f"(~{t[0]})"
        if op in (Op.SHL, Op.SHR):
            return f"({t[0]} {'<<' if op is Op.SHL else '>>'} {_shift(t[1], bits)})"
        if op in (Op.MIN, Op.MAX):
            return f"{op.value}({t[0]}, {t[1]})"
        if op is Op.CLAMP:
            return f"select(min(max({t[0]}, {t[1]}), {t[2]}), {t[2]}, {t[1]} > {t[2]})"
        if op in (Op.FLOOR_DIV, Op.MOD) and not elem.is_signed:
            return f"({t[0]} {'/' if op is Op.FLOOR_DIV else '%'} {t[1]})"
        if bits == 32 and op in _COUNTS_32:
            return f"u32({_COUNTS_32[op]}({t[0]}))"
        if op is Op.POPCOUNT:  # of a 64-bit value: of its halves
            low = f"u32({t[0]} & 0xffffffffl{'i' if elem.is_signed else 'u'})"
            return f"u32((countOneBits({low}) + countOneBits(u32({t[0]} >> 32u))))"
        if op is Op.REVERSE_BITS and bits == 32:
            return f"reverseBits({t[0]})"
        if bits == 32 and op is Op.FIND_FIRST_SET:
            return f"select(0u, u32(countTrailingZeros({t[0]})) + 1u, {t[0]} != {zero})"
        helper = INT_HELPERS.get((op, elem.is_signed, bits))
        if helper is None:
            raise UnsupportedFeature(f"{op} on {elem} has no WGSL form")
        if elem is Elem.I64 and op in (Op.REVERSE_BITS, Op.MUL_HI):
            self._integer(op, Elem.U64, ["a", "b"][: len(t)])
        name = f"ruda_{op.value}_{ty}"
        ret = "u32" if op in (Op.LEADING_ZEROS, Op.TRAILING_ZEROS, Op.FIND_FIRST_SET) else ty
        params = ", ".join(f"{p}: {ty}" for p in "ab"[: len(t)])
        self.prelude.add(name, f"fn {name}({params}) -> {ret} {{\n{helper}\n}}")
        return f"{name}({', '.join(t)})"
