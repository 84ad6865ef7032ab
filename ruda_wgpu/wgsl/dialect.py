"""WGSL as a :class:`~ruda_core.codegen.Dialect` of the shared expression lowering
(:class:`~ruda_core.codegen.expr.ExprLowering`, whose integer and float semantics it reuses).

WGSL is not C: conversions are constructor calls (``f32(x)``), there is no ``?:``
(``select(false_value, true_value, condition)`` evaluates both, which every use allows), a
declaration is ``var x: T = v``, a helper's parameters are immutable, a shift amount is a ``u32``,
and there are no 8- or 16-bit integers: they are held in ``i32``/``u32`` and wrapped to their
width after each conversion (:func:`wrap`). ``f16`` is computed in ``f32`` and rounded once per
operation to nearest even, by the bits (``ruda_round_f16``), whatever the driver's conversion
does. A compiler may assume that no float is a NaN or an infinity, so NaN tests and the truth of
a float are written on the bits, and a float comparison holds only where the bits say that
neither operand is a NaN (naga's ``!=`` is ordered too). Operations WGSL lacks (``log1p``,
``erf`` …) call the helpers of :mod:`.helpers`, which the emitter adds where called. Pure;
imports no driver.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Sequence

import numpy as np

from ruda_core.codegen import Dialect, words
from ruda_core.codegen.dialect import MemSpace
from ruda_core.codegen.prelude import bare
from ruda_core.ir import ATOMIC_COMBINE, Elem, Op

from .names import RESERVED

__all__ = ["LANE", "LANES", "NARROW", "WgslDialect", "nan_unless_finite", "wrap"]

#: The WGSL type of each element type ruda holds in WGSL (64-bit integers need the adapter's
#: ``shader-int64``, ``f16`` its ``shader-f16``). ``f64`` is not one: the driver never offers it
#: (see :func:`ruda_wgpu.server._features`), so floats are ``f16`` or ``f32``, with 32-bit bits.
_TYPES = {Elem(t): t for t in words("bool i32 u32 i64 u64 f16 f32")}
_TYPES |= {Elem.I8: "i32", Elem.I16: "i32", Elem.U8: "u32", Elem.U16: "u32"}
#: Integers WGSL lacks, held in ``i32``/``u32`` and wrapped to their width.
NARROW = frozenset({Elem.I8, Elem.I16, Elem.U8, Elem.U16})
#: The high word of a 64-bit integer, all ones.
_HIGH_WORD = 0xFFFFFFFF00000000
#: The math functions (C99 names) WGSL has under another name.
_RENAMED = {"rint": "round"}  # WGSL's round takes ties to even, as rint


#: The bits of the ``f32`` ``{0}`` without its sign, and those of an infinity.
_MAGNITUDE = "(bitcast<u32>({0}) & 2147483647u)"
_INFINITY = "2139095040u"


def _magnitude(relation: str) -> str:
    """A test of the bits of the ``f32`` ``{0}`` without its sign against an infinity's by
    ``relation`` (``">"``: NaN): a compiler may assume no NaN or infinity and fold ``x != x``
    or ``x == inf`` away."""
    return f"({_MAGNITUDE} {relation} {_INFINITY})"


_NAN = _magnitude(">")
#: The ``f32`` math functions of one expression over the operands ``{0}``, ``{1}``.
_FORMS = {
    "isnan": _NAN,
    "isinf": _magnitude("=="),
    "isfinite": _magnitude("<"),
    "log10": f"(ruda_log2_f32({{0}}) * {math.log10(2.0)!r}f)",
    # on the bits: a compiler may ignore the sign of a zero it knows (abs(-0.0) gave -0.0)
    "fabs": f"bitcast<f32>{_MAGNITUDE}",
    "copysign": f"bitcast<f32>({_MAGNITUDE} | (bitcast<u32>({{1}}) & 2147483648u))",
    # C's fmin/fmax: a NaN operand gives the other one
    "fmin": f"select(select(min({{0}}, {{1}}), {{0}}, {_NAN.format('{1}')}), {{1}}, {_NAN})",
    "fmax": f"select(select(max({{0}}, {{1}}), {{0}}, {_NAN.format('{1}')}), {{1}}, {_NAN})",
}
#: The ``f32`` math functions a helper of :mod:`.helpers` computes (WGSL lacks them, or a
#: driver's is coarse or wrong at special values).
_HELPED = words(
    "pow exp log log2 log1p expm1 sinh cosh tanh asinh acosh atan atan2 fmod remainder asin acos "
    "cbrt hypot erf erfc lgamma sin cos tan"
)
#: The 32-bit bit counts WGSL has builtins for.
_COUNTS = {
    Op.POPCOUNT: "u32(countOneBits({0}))",
    Op.LEADING_ZEROS: "u32(countLeadingZeros({0}))",
    Op.TRAILING_ZEROS: "u32(countTrailingZeros({0}))",
    Op.REVERSE_BITS: "reverseBits({0})",
}
#: The subgroup builtins of the plane reductions and scans of 32-bit values.
_SUBGROUP = {
    Op.PLANE_SUM: "subgroupAdd",
    Op.PLANE_PROD: "subgroupMul",
    Op.PLANE_MIN: "subgroupMin",
    Op.PLANE_MAX: "subgroupMax",
    Op.PLANE_INCLUSIVE_SUM: "subgroupInclusiveAdd",
    Op.PLANE_EXCLUSIVE_SUM: "subgroupExclusiveAdd",
    Op.PLANE_ALL: "subgroupAll",
    Op.PLANE_ANY: "subgroupAny",
}
#: The atomic operations on ``i32`` and ``u32`` that are one WGSL builtin.
_ATOMICS = {op: "atomic" + op.value[7:].capitalize() for op in ATOMIC_COMBINE}
_ATOMICS[Op.ATOMIC_SWAP] = "atomicExchange"
#: The source lane of each shuffle mode (:meth:`Dialect.shuffle`) of the unit's lane.
_SOURCE = {
    "xor": "{lane} ^ {arg}",
    "up": "{lane} - {arg}",
    "down": "{lane} + {arg}",
    "idx": "{arg}",
}
#: Module-scope copies of the unit's lane and of the lanes of its plane, for helper functions
#: (WGSL's builtins are the entry point's parameters); the emitter sets them where used.
LANE, LANES = "ruda_lane", "ruda_lanes"
#: A module-scope zero no compiler can tell is one (the workgroup count along x, below 2**16,
#: shifted out), XORed into each integer ``min`` and ``max``: NVIDIA's compiler otherwise fuses
#: ``max(max(a, -t), b)``, or two ``min``, into one operation that drops the negation.
APART = "ruda_apart"
_ASSIGNS = re.compile(r"^\s*(\w+) = ", re.M)


def wrap(x: str, elem: Elem) -> str:
    """``x``, a value of ``elem``'s WGSL type, wrapped to ``elem``'s width (a narrow integer
    held in 32 bits); ``x`` itself for other types."""
    if elem not in NARROW:
        return x
    if elem.is_signed:
        shift = 32 - elem.bits
        return f"(({x} << {shift}u) >> {shift}u)"
    return f"({x} & {(1 << elem.bits) - 1}u)"


def _special(x: float, elem: Elem) -> str:
    """An infinity or NaN of ``f32`` or ``f16``, by its bits (WGSL has no literal for them)."""
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    value = f"bitcast<f32>({bits}u)"
    return value if elem is Elem.F32 else f"f16({value})"


def nan_unless_finite(value: str, x: str) -> str:
    """``value``, or NaN where the ``f32`` ``x`` is an infinity or a NaN, by its bits: what a
    compiler that assumes finite values would fold to ``value`` alone."""
    test = _magnitude(">=").format(x)
    return f"select({value}, {_special(math.nan, Elem.F32)}, {test})"


class WgslDialect(Dialect):
    """WGSL for an adapter whose shaders hold the element types ``elems``, with planes of
    ``plane_width`` units (1: no planes). Where its driver stops a unit's loops after
    ``loop_limit`` turns without a word (lavapipe's 65 535; 0: none), kernels check where they
    end whether it stopped them (the helper ``ruda_check_loops``) and report it."""

    name = "WGSL"
    reserved = RESERVED
    int_suffix = {e: "i" if e.is_signed else "u" for e in NARROW | {Elem.I32, Elem.U32}}
    int_suffix |= {Elem.I64: "li", Elem.U64: "lu"}
    overloaded_math = True
    bit_casts = {
        Elem.F32: ("bitcast<f32>({})", "bitcast<u32>({})"),
        Elem.F16: (
            "f16(unpack2x16float(u32({}) & 0xffffu).x)",
            "(pack2x16float(vec2<f32>(f32({}), 0.0f)) & 0xffffu)",
        ),
    }

    def __init__(self, elems: frozenset[Elem], plane_width: int = 1, loop_limit: int = 0) -> None:
        self.types = {e: t for e, t in _TYPES.items() if e in elems}
        self.plane_width = plane_width
        self.loop_limit = loop_limit
        # the plane helpers' loops count against the limit too, uncounted by the kernel
        self.unrolled_plane_width = plane_width if loop_limit else 0

    # -- syntax -----------------------------------------------------------------------------

    def convert(self, elem: Elem, expr: str, source: Elem | None = None) -> str:
        ty = self.type_name(elem)
        if source is Elem.BOOL:
            return self.select(expr, self.literal(1, elem), self.literal(0, elem))
        if source is not None and source.is_int and elem.bits == 64 and source.bits < 64:
            # widened in the source's signedness, then reinterpreted: naga's conversions
            # between 32-bit and 64-bit integers of different signedness extend wrongly; and a
            # signed value is extended by its bits: lavapipe's i64(x) of a negative i32 holds
            # the right bits but compares as not negative (abs(i64(x)) stayed negative)
            x = bare(expr)
            if source.is_signed:
                high = f"select(0lu, {_HIGH_WORD}lu, {x} < 0i)"
                value, wide = f"bitcast<i64>(u64(bitcast<u32>({x})) | {high})", Elem.I64
            else:
                value, wide = f"u64({x})", Elem.U64
            return value if wide is elem else f"bitcast<{ty}>({value})"
        return wrap(f"{ty}({bare(expr)})", elem)

    def select(self, cond: str, a: str, b: str) -> str:
        return f"select({b}, {a}, {cond})"

    def compare(self, op: Op, elem: Elem, a: str, b: str) -> str:
        if elem is Elem.BOOL and op not in (Op.EQ, Op.NE):  # WGSL orders no bools: 0 and 1
            a, b = (self.select(x, "1u", "0u") for x in (a, b))
        if elem.is_float:  # a compiler may assume no NaN and fold x == x or x <= x to true,
            # or !(a < b) to a >= b: each comparison is true only where the bits say ordered
            ordered = f"(max({_MAGNITUDE.format(a)}, {_MAGNITUDE.format(b)}) <= {_INFINITY})"
            test = super().compare(Op.EQ if op is Op.NE else op, elem, a, b)
            return f"(!({test} && {ordered}))" if op is Op.NE else f"({test} && {ordered})"
        return super().compare(op, elem, a, b)

    def nonzero(self, elem: Elem, expr: str) -> str:
        if elem.is_float:
            return f"({_MAGNITUDE.format(expr)} != 0u)"
        return super().nonzero(elem, expr)

    def shift_amount(self, elem: Elem, expr: str) -> str:
        return expr if self.type_name(elem) == "u32" else f"u32{expr}"

    def declare(self, ctype: str, *inits: tuple[str, str]) -> str:
        return "; ".join(f"var {name}: {ctype} = {value}" for name, value in inits)

    def function(
        self, ret: str, name: str, params: Sequence[tuple[str, str]], body: Sequence[str]
    ) -> str:
        assigned = set(_ASSIGNS.findall("\n".join(body)))
        renamed = {p: f"{p}_" if p in assigned else p for _, p in params}
        args = ", ".join(f"{renamed[p]}: {ty}" for ty, p in params)
        copies = [f"    var {p} = {renamed[p]};" for p in renamed if p in assigned]
        return "\n".join(
            [f"fn {name}({args}) -> {ret} {{", *copies, *(f"    {x}" for x in body), "}"]
        )

    def int_native(self, op: Op, elem: Elem) -> str | None:
        ty = self.type_name(elem)
        if op in (Op.FLOOR_DIV, Op.MOD) and elem.is_signed:  # see helpers: no % on NVIDIA
            helper = f"ruda_{op.value}_{'i64' if elem.bits == 64 else 'i32'}({{0}}, {{1}})"
            return wrap(helper, elem)
        if op in (Op.SATURATING_ADD, Op.SATURATING_SUB) and elem in NARROW:
            if op is Op.SATURATING_SUB and not elem.is_signed:
                return "select({0} - {1}, 0u, {1} > {0})"
            low = -(1 << (elem.bits - 1)) if elem.is_signed else 0
            bounds = f"{self.literal(low, elem)}, {self.literal(low + (1 << elem.bits) - 1, elem)}"
            return f"clamp({{0}} {'+' if op is Op.SATURATING_ADD else '-'} {{1}}, {bounds})"
        if op in (Op.SATURATING_ADD, Op.SATURATING_SUB):  # no 64-bit products or selects
            return f"ruda_{op.value}_{ty}({{0}}, {{1}})"
        if elem.bits == 32 and op in _COUNTS:
            return _COUNTS[op]
        if elem.bits == 32 and op is Op.FIND_FIRST_SET:
            return f"select(0u, u32(countTrailingZeros({{0}})) + 1u, {{0}} != 0{ty[0]})"
        return None

    def int_extremum(self, op: Op, elem: Elem, a: str, b: str) -> str:
        return f"({'min' if op is Op.MIN else 'max'}({a}, {b}) ^ {self.type_name(elem)}({APART}))"

    def popcount_native(self, word: Elem) -> str | None:
        if word is Elem.U32:
            return "countOneBits({v})"
        return "(countOneBits(u32({v} & 0xfffffffflu)) + countOneBits(u32({v} >> 32u)))"

    def quotient(self, elem: Elem, a: str, b: str) -> str:
        """WGSL allows a division within 2.5 ulp (NVIDIA's is not correctly rounded)."""
        return f"ruda_div_f32({bare(a)}, {bare(b)})"

    def mul_exact(self, a: str, b: str, elem: Elem) -> str:
        """WGSL lets a driver fuse a product into an add (NVIDIA's does): the helper's select
        stands between them."""
        return f"ruda_mul_f32({bare(a)}, {bare(b)})"

    def atomic_native(self, op: Op, elem: Elem, space: MemSpace) -> str | None:
        if elem in (Elem.I32, Elem.U32) and op in _ATOMICS:
            return f"{_ATOMICS[op]}({{ptr}}, {{v}})"
        return None

    def record_word(self, buffer: str, index: str, value: str | None = None) -> str:
        """The print-record and bounds-report buffers hold ``atomic<u32>`` words (a record's
        place is taken by an atomic add, a report's by an atomic exchange)."""
        if value is None:
            return f"atomicLoad(&{buffer}[{index}])"
        return f"atomicStore(&{buffer}[{index}], {value})"

    # -- literals and floats ----------------------------------------------------------------

    def literal(self, value: int | float | bool, elem: Elem) -> str:
        if elem is Elem.F16:  # its own literals, though computed in f32
            value = float(value)
            finite = math.isfinite(value)
            return self.float_literal(value, elem) if finite else _special(value, elem)
        return super().literal(value, elem)

    def float_literal(self, value: float, elem: Elem) -> str:
        if elem is Elem.F16:
            return f"{float(np.float16(value))!r}h"
        return f"{value!r}f"

    def float_special(self, value: float, elem: Elem) -> str:
        return _special(value, elem)

    def compute_elem(self, elem: Elem) -> Elem:
        return Elem.F32 if elem is Elem.F16 else elem

    def widen(self, elem: Elem, expr: str) -> str:
        return f"f32({expr})"

    def narrow(self, elem: Elem, expr: str, source: Elem) -> str:
        x = bare(expr) if source is Elem.F32 else f"f32({bare(expr)})"
        return f"f16(ruda_round_f16({x}))"

    def math_call(self, fn: str, elem: Elem, args: Sequence[str]) -> str:
        if fn in _FORMS:
            return _FORMS[fn].format(*args)
        if fn in _HELPED:
            return f"ruda_{fn}_f32({', '.join(args)})"
        return super().math_call(_RENAMED.get(fn, fn), elem, args)

    # -- planes (subgroups, formed from consecutive units as on lavapipe; of one lane on an
    # adapter without subgroups) ----------------------------------------------------------

    def plane_dim(self) -> str:
        return f"{self.plane_width}u"

    def plane_lanes(self) -> str:
        return LANES

    def plane_native(self, op: Op, elem: Elem) -> str | None:
        if self.plane_width == 1:  # an adapter without subgroups
            return self.one_lane_plane(op, elem)
        if op is Op.PLANE_ELECT:  # naga has no subgroupElect: the lowest lane that reaches it
            return "({lane} == countTrailingZeros(subgroupBallot(true).x))"
        if op is Op.PLANE_BALLOT:
            return "subgroupBallot({v}).x"
        if op in (Op.PLANE_ALL, Op.PLANE_ANY):
            return f"{_SUBGROUP[op]}({{v}})"
        if elem is Elem.BOOL or elem.bits == 64:  # shuffled as words; reduced from shuffles
            return None if op in _SUBGROUP else self.shuffle("idx", elem, "{v}", "{lane}")
        if op in _SUBGROUP:
            return wrap(f"{_SUBGROUP[op]}({{v}})", elem)
        return "subgroupShuffle({v}, {lane})"  # subgroupBroadcast wants a constant lane

    def shuffle(self, mode: str, elem: Elem, value: str, arg: str) -> str:
        if self.plane_width == 1:  # the only lane: callers keep or discard its value
            return value
        source = f"({_SOURCE[mode].format(lane=LANE, arg=arg)}) & {self.plane_width - 1}u"
        if elem is Elem.BOOL:
            return f"(subgroupShuffle(select(0u, 1u, {value}), {source}) != 0u)"
        if elem.bits == 64:
            return f"ruda_shuffle_{self.type_name(elem)}({value}, {source})"
        return f"subgroupShuffle({value}, {source})"
