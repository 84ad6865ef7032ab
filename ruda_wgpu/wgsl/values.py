"""WGSL expressions: types, literals and the value operations of :mod:`ruda_core.ir.ops`.

WGSL is not C: conversions are constructor calls (``f32(x)``), there is no implicit conversion
and no ``?:`` (``select(false_value, true_value, condition)`` evaluates both, which is the IR's
``SELECT``), unsigned values cannot be negated, and integer arithmetic already wraps (division
by zero gives the dividend, ``MIN / -1`` gives ``MIN``: both "unspecified" in the IR, neither a
crash). ``f16`` is computed in ``f32`` and rounded once per operation, as the IR defines it
(to nearest even, by the bits: the helper ``ruda_round_f16``);
operations WGSL lacks (``log1p``, ``erf``, ``lgamma``, Python's floor division of signed
integers …) are helper functions registered in a :class:`~ruda_core.codegen.prelude.Prelude`.
This module builds expression text only; statements and declarations are
:mod:`ruda_wgpu.wgsl.emitter`'s.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

import numpy as np

from ruda_core.codegen.expr import OPERATORS
from ruda_core.codegen.names import words
from ruda_core.codegen.prelude import Prelude
from ruda_core.errors import UnsupportedFeature
from ruda_core.ir import COMPARE_OPS, FLOAT_TESTS, Elem, Op

from .helpers import HELPERS, call

__all__ = ["NARROW", "TYPES", "WgslValues", "literal", "wrap"]

#: The WGSL type of each element type ruda holds in WGSL (64-bit integers need the adapter's
#: ``shader-int64``, ``f16`` its ``shader-f16``). ``f64`` is not one: the driver never offers it
#: (see :func:`ruda_wgpu.server._features`), so floats are ``f16`` or ``f32``, with 32-bit bits.
TYPES = {Elem(t): t for t in words("bool i32 u32 i64 u64 f16 f32")}
TYPES |= {Elem.I8: "i32", Elem.I16: "i32", Elem.U8: "u32", Elem.U16: "u32"}
_SUFFIX = {"i32": "i", "u32": "u", "i64": "li", "u64": "lu", "f16": "h", "f32": "f"}
#: Integers WGSL lacks, held in ``i32``/``u32`` and wrapped to their width after each operation.
NARROW = frozenset({Elem.I8, Elem.I16, Elem.U8, Elem.U16})


def _magnitude(test: str) -> str:
    """A ``test`` (``"> 2139095040u"``: NaN) of the bits of the ``f32`` ``{0}`` without its sign:
    a compiler may assume no NaN or infinity and fold ``x != x`` or ``x == inf`` away."""
    return "((bitcast<u32>({0}) & 2147483647u) " + test + ")"


_NAN = _magnitude("> 2139095040u")
#: ``f32`` operations of one expression over the operands ``{0}``, ``{1}``, ``{2}``.
_FLOAT_FORMS = {
    Op(op): f"{op}({{0}})"  # WGSL's round takes ties to even, as the IR's
    for op in words(
        "exp exp2 log log2 sqrt sin cos tan sinh cosh asinh atanh floor ceil trunc abs round"
    )
} | {
    Op.FMA: "fma({0}, {1}, {2})",
    Op.NEG: "(-{0})",
    # exact where the driver's / is correctly rounded (lavapipe): WGSL allows 2.5 ulp, and a
    # residual correction is not exact either, since WGSL's fma may round twice ("inherited
    # from x * y + z")
    Op.FLOOR_DIV: "floor({0} / {1})",
    Op.MOD: "({0} - floor({0} / {1}) * {1})",
    Op.RECIP: "(1.0f / {0})",
    Op.RSQRT: "(1.0f / sqrt({0}))",
    Op.LOG10: f"(log2({{0}}) * {math.log10(2.0)!r}f)",
    Op.ISNAN: _NAN,
    Op.ISINF: _magnitude("== 2139095040u"),
    Op.ISFINITE: _magnitude("< 2139095040u"),
    Op.COPYSIGN: "select(abs({0}), -abs({0}), {1} < 0.0f || ({1} == 0.0f && 1.0f / {1} < 0.0f))",
    # C's fmin/fmax: a NaN operand gives the other one
    Op.MIN: f"select(select(min({{0}}, {{1}}), {{0}}, {_NAN.format('{1}')}), {{1}}, {_NAN})",
    Op.MAX: f"select(select(max({{0}}, {{1}}), {{0}}, {_NAN.format('{1}')}), {{1}}, {_NAN})",
}
#: Integer operations of one expression over the operands ``{0}``, ``{1}``, ``{2}``.
_INT_FORMS = {op: f"({{0}} {OPERATORS[op]} {{1}})" for op in (Op.ADD, Op.SUB, Op.MUL)} | {
    Op.BIT_AND: "({0} & {1})",
    Op.BIT_OR: "({0} | {1})",
    Op.BIT_XOR: "({0} ^ {1})",
    Op.BIT_NOT: "(~{0})",
    Op.MIN: "min({0}, {1})",
    Op.MAX: "max({0}, {1})",
    Op.CLAMP: "select(min(max({0}, {1}), {2}), {2}, {1} > {2})",
}
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
    if elem.is_float and not math.isfinite(value):  # WGSL has no literal for these: their bits
        return _special(float(value), elem)
    if elem.is_float:
        text = repr(float(np.float16(value) if elem is Elem.F16 else value)) + _SUFFIX[ty]
    elif elem.is_signed and int(value) == -(1 << (elem.bits - 1)):  # not a negated literal
        return f"({ty}({int(value) + 1}{_SUFFIX[ty]}) - 1{_SUFFIX[ty]})"
    else:
        text = f"{int(value)}{_SUFFIX[ty]}"
    return f"({text})" if text.startswith("-") else text


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


def _nan_unless_finite(value: str, x: str) -> str:
    """``value``, or NaN where ``x`` is an infinity or a NaN (both ``f32``), by its bits: what a
    compiler that assumes finite values folds to ``value`` alone."""
    test = _magnitude(">= 2139095040u").format(x)
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
            x32 = f"f32({x})" if source is Elem.F16 else x
            return _magnitude("!= 0u").format(x32)
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
            args = [f"select(0u, 1u, {x})" for x in args]
        if op is Op.NE and elem.is_float:  # naga's != is ordered: false for a NaN
            return f"(!({args[0]} == {args[1]}))"
        if op in COMPARE_OPS:
            return f"({args[0]} {OPERATORS[op]} {args[1]})"
        if elem is Elem.BOOL:
            if op is Op.NOT:
                return f"(!{args[0]})"
            if op not in (Op.AND, Op.OR, Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR):
                raise UnsupportedFeature(f"{op} is not defined on bool")
            symbol = {Op.BIT_AND: "&", Op.BIT_OR: "|", Op.BIT_XOR: "!="}.get(op, OPERATORS[op])
            return f"({args[0]} {symbol} {args[1]})"
        if elem is Elem.F16:  # computed in f32, rounded once
            value = self._float(op, [f"f32({a})" for a in args])
            return value if op in FLOAT_TESTS else self._half(value)
        if elem.is_float:
            return self._float(op, args)
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
        if elem is Elem.F32:
            return call(self.prelude, "ruda_mul_f32", [a, b])
        return self._half(call(self.prelude, "ruda_mul_f32", [f"f32({a})", f"f32({b})"]))

    def _half(self, x: str) -> str:
        """The ``f32`` ``x`` as an ``f16``, rounded to nearest even whatever the driver."""
        return f"f16({call(self.prelude, 'ruda_round_f16', [x])})"

    def _narrow(self, op: Op, elem: Elem, t: Sequence[str]) -> str:
        """An operation on an integer held in 32 bits: computed there and wrapped, with bit
        counts and reversal over its own width."""
        bits = elem.bits
        pattern = f"(u32({t[0]}) & {literal((1 << bits) - 1, Elem.U32)})"
        wide = Elem.I32 if elem.is_signed else Elem.U32
        if op is Op.POPCOUNT:
            return f"countOneBits({pattern})"
        if op is Op.LEADING_ZEROS:
            return f"(countLeadingZeros({pattern}) - {32 - bits}u)"
        if op is Op.TRAILING_ZEROS:
            return f"min(countTrailingZeros({pattern}), {bits}u)"
        if op is Op.FIND_FIRST_SET:
            return f"select(0u, countTrailingZeros({pattern}) + 1u, {pattern} != 0u)"
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
        return wrap(self._integer(op, wide, t, bits), elem)  # shifts modulo the narrow width

    def _float(self, op: Op, w: Sequence[str]) -> str:
        """``op`` on ``f32`` operands."""
        if op is Op.SUB and w[0] == w[1]:  # x - x: 0, or NaN for an infinity or a NaN
            return _nan_unless_finite("0.0f", w[0])
        if op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV):
            return f"({w[0]} {OPERATORS[op]} {w[1]})"
        if op is Op.CLAMP:
            return self._float(Op.MIN, [self._float(Op.MAX, w[:2]), w[2]])
        if op in _FLOAT_FORMS:
            return _FLOAT_FORMS[op].format(*w)
        if f"ruda_{op.value}_f32" not in HELPERS:
            raise UnsupportedFeature(f"{op} on f32 has no WGSL form")
        return call(self.prelude, f"ruda_{op.value}_f32", w)

    def _integer(self, op: Op, elem: Elem, t: Sequence[str], shifted: int = 0) -> str:
        """``op`` on ``i32``, ``u32``, ``i64`` or ``u64`` operands (shift amounts taken modulo
        ``shifted`` bits, where given, else the type's)."""
        ty, bits = TYPES[elem], elem.bits
        if op in _INT_FORMS:
            return _INT_FORMS[op].format(*t)
        if op is Op.NEG:
            return f"(-{t[0]})" if elem.is_signed else f"({literal(0, elem)} - {t[0]})"
        if op is Op.ABS:
            return f"abs({t[0]})" if elem.is_signed else t[0]
        if op in (Op.SHL, Op.SHR):
            return f"({t[0]} {'<<' if op is Op.SHL else '>>'} {_shift(t[1], shifted or bits)})"
        if op in (Op.FLOOR_DIV, Op.MOD) and not elem.is_signed:
            return f"({t[0]} {OPERATORS[op]} {t[1]})"
        if bits == 32 and op in _COUNTS_32:
            return f"u32({_COUNTS_32[op]}({t[0]}))"
        if op is Op.POPCOUNT:  # of a 64-bit value: of its halves
            low = f"u32({t[0]} & 0xffffffffl{'i' if elem.is_signed else 'u'})"
            return f"u32((countOneBits({low}) + countOneBits(u32({t[0]} >> 32u))))"
        if op is Op.REVERSE_BITS and bits == 32:
            return f"reverseBits({t[0]})"
        if bits == 32 and op is Op.FIND_FIRST_SET:
            return f"select(0u, u32(countTrailingZeros({t[0]})) + 1u, {t[0]} != {literal(0, elem)})"
        if f"ruda_{op.value}_{ty}" not in HELPERS:
            raise UnsupportedFeature(f"{op} on {elem} has no WGSL form")
        return call(self.prelude, f"ruda_{op.value}_{ty}", t)
