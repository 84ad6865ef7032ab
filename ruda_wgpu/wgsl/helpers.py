"""The WGSL helper functions of the value operations WGSL lacks or a driver gets wrong, as
text, by name (:data:`HELPERS`): ``ruda_<op>_f32`` over ``f32`` operands ``a`` (``b``; ``f16``
is computed in ``f32``), ``ruda_<op>_<type>`` for integers, and the helpers those call.
:func:`referenced` finds those a module calls (WGSL declares functions in any order). Each
says in a comment why it is written out.
Loops in them are short or unrolled: lavapipe stops a unit's loops after 65 535 turns in all.
Imports no driver.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ruda_core.ir import FLOAT_BINARY, Op

__all__ = ["HELPERS", "referenced"]


#: The start of fmod's and remainder's long division: NaN for an infinite dividend or a zero
#: or NaN divisor, the dividend for an infinite divisor, else a loop reducing ``r = |a|``. A NaN
#: divisor is found from its bits: a compiler that assumes no NaN may fold ``y != y`` to false,
#: and the loop would then never end.
_DIVISION = """    let y = abs(b);
    let nan_b = (bitcast<u32>(b) & 0x7fffffffu) > 0x7f800000u;  // not y != y
    if ((bitcast<u32>(a) & 0x7fffffffu) >= 0x7f800000u || y == f32(0.0) || nan_b) {
        return bitcast<f32>(0x7fc00000u);  // NaN
    }
    if ((bitcast<u32>(b) & 0x7fffffffu) == 0x7f800000u) { return a; }
    var r = abs(a);
    let ey = frexp(y).exp;
    var s = y;
    loop {  // eight steps a turn: lavapipe ends a unit's loops after 65 535 turns in all
"""
#: One step of fmod's long division: the divisor scaled to the remainder's exponent, taken off.
_FMOD_STEP = """        if (r < y) { break; }
        s = ldexp(y, frexp(r).exp - ey);
        if (s > r) { s = s * f32(0.5); }
        if (s == f32(0.0)) { break; }  // a subnormal divisor flushed to zero: end, not spin
        r = r - s;
"""
#: One step of remainder's, which also notes whether the quotient is odd.
_REMAINDER_STEP = _FMOD_STEP.replace(
    "        r = r - s;", "        odd = odd || s == y;\n        r = r - s;"
)
#: erfc of ``x = |a|`` as ``r`` (Numerical Recipes' erfcc, within 1.2e-7).
_ERFC = """    let x = abs(a);
    let t = f32(1.0) / (f32(1.0) + f32(0.5) * x);
    let r = t * exp(-x * x - f32(1.26551223) + t * (f32(1.00002368) + t * (f32(0.37409196)
        + t * (f32(0.09678418) + t * (f32(-0.18628806) + t * (f32(0.27886807)
        + t * (f32(-1.13520398) + t * (f32(1.48851587) + t * (f32(-0.82215223)
        + t * f32(0.17087277))))))))));
"""


#: Bodies of the ``f32`` helpers over ``a`` (``b``).
_FLOAT = {
    Op.POW: """    // C's pow, special values included (WGSL's is undefined for a <= 0)
    let inf = bitcast<f32>(0x7f800000u);
    let whole = b == trunc(b);
    let odd = whole && abs(b) < f32(16777216.0) && trunc(b * f32(0.5)) != b * f32(0.5);
    let negative = bitcast<u32>(a) >= 0x80000000u;
    if (b == f32(0.0) || a == f32(1.0)) { return f32(1.0); }
    if ((bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u) { return a; }
    if ((bitcast<u32>(b) & 0x7fffffffu) > 0x7f800000u) { return b; }
    if (a == f32(0.0)) {
        if (b < f32(0.0)) { return select(inf, select(inf, -inf, negative), odd); }
        return select(f32(0.0), a, odd);
    }
    if (abs(b) == inf) {
        if (a == f32(-1.0)) { return f32(1.0); }
        return select(f32(0.0), inf, (abs(a) < f32(1.0)) == (b < f32(0.0)));
    }
    if (abs(a) == inf) {
        let m = select(inf, f32(0.0), b < f32(0.0));
        return select(m, -m, negative && odd);
    }
    if (a < f32(0.0)) {
        if (!whole) { return sqrt(a); }  // NaN
        let m = ruda_pow_positive_f32(-a, b);
        return select(m, -m, odd);
    }
    return ruda_pow_positive_f32(a, b);""",
    Op.LOG1P: """    let u = f32(1.0) + a;
    if (u == f32(1.0) || bitcast<u32>(a) == 0x7f800000u) { return a; }
    return log(u) * (a / (u - f32(1.0)));""",
    Op.EXPM1: """    let u = exp(a);
    if (u == f32(1.0)) { return a; }
    let m = u - f32(1.0);
    if (m == f32(-1.0)) { return f32(-1.0); }
    if (abs(a) > f32(0.5)) { return m; }
    return m * (a / log(u));""",
    Op.ACOSH: """    // log1p(t + sqrt(t * (a + 1))) with t = a - 1: exact near 1, where
    // log(a + sqrt(a * a - 1)) loses the digits
    if (a > f32(1.0e18)) { return log(a) + f32(0.6931471805599453); }
    let t = a - f32(1.0);
    if (t < f32(0.0)) { return sqrt(t); }  // NaN
    let v = t + sqrt(t * (a + f32(1.0)));
    let u = f32(1.0) + v;
    if (u == f32(1.0)) { return v; }
    return log(u) * (v / (u - f32(1.0)));""",
    Op.ATAN: """    // Cephes' atanf (within 2 ulp): drivers' atan is coarse and drops NaNs
    if ((bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u) { return a; }
    let x = abs(a);
    var base = f32(0.0);
    var z = x;
    if (x > f32(2.414213562373095)) {
        base = f32(1.5707963267948966);
        z = f32(-1.0) / x;
    } else if (x > f32(0.41421356237309503)) {
        base = f32(0.7853981633974483);
        z = (x - f32(1.0)) / (x + f32(1.0));
    }
    let zz = z * z;
    let p = (((f32(0.0805374449538) * zz - f32(0.138776856032)) * zz + f32(0.199777106478)) * zz
        - f32(0.333329491539)) * zz * z + z;
    return select(base + p, -(base + p), a < f32(0.0));""",
    Op.ATAN2: """    // C's atan2 with its signed zeros and infinities, through ruda_atan
    let pi = f32(3.141592653589793);
    let neg_y = bitcast<u32>(a) >= 0x80000000u;
    let neg_x = bitcast<u32>(b) >= 0x80000000u;
    if ((bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u) { return a; }
    if ((bitcast<u32>(b) & 0x7fffffffu) > 0x7f800000u) { return b; }
    let inf_y = (bitcast<u32>(a) & 0x7fffffffu) == 0x7f800000u;
    let inf_x = (bitcast<u32>(b) & 0x7fffffffu) == 0x7f800000u;
    var r = f32(0.0);
    if (a == f32(0.0)) {
        r = select(f32(0.0), pi, neg_x);
    } else if (inf_x && inf_y) {
        r = select(pi * f32(0.25), pi * f32(0.75), neg_x);
    } else if (inf_x) {
        r = select(f32(0.0), pi, neg_x);
    } else if (inf_y || b == f32(0.0)) {
        r = pi * f32(0.5);
    } else {
        r = ruda_atan_f32(abs(a) / abs(b));
        r = select(r, pi - r, neg_x);
    }
    return select(r, -r, neg_y);""",
    Op.FMOD: """    // exact, as C's fmod: the divisor scaled to the remainder's exponent is taken
    // off while it fits (each difference is exact)
"""
    + _DIVISION
    + _FMOD_STEP * 8
    + """    }
    return select(r, -r, bitcast<u32>(a) >= 0x80000000u);""",
    Op.REMAINDER: """    // exact, as IEEE's: fmod's long division, then the nearest multiple (an
    // even one on a tie)
    var odd = false;
"""
    + _DIVISION
    + _REMAINDER_STEP * 8
    + """    }
    if (r > y * f32(0.5) || (r == y * f32(0.5) && odd)) { r = r - y; }
    return select(r, -r, bitcast<u32>(a) >= 0x80000000u);""",
    Op.ASIN: """    // through atan: drivers' asin is coarse
    if ((bitcast<u32>(a) & 0x7fffffffu) > 0x3f800000u) { return sqrt(f32(-1.0) - abs(a)); }
    if (abs(a) == f32(1.0)) { return a * f32(1.5707963267948966); }
    return ruda_atan_f32(a / sqrt((f32(1.0) - a) * (f32(1.0) + a)));""",
    Op.ACOS: """    // through atan: drivers' acos is coarse
    if ((bitcast<u32>(a) & 0x7fffffffu) > 0x3f800000u) { return sqrt(f32(-1.0) - abs(a)); }
    return f32(2.0) * ruda_atan_f32(sqrt((f32(1.0) - a) / (f32(1.0) + a)));""",
    Op.TANH: """    if (abs(a) > f32(20.0)) { return sign(a); }
    return tanh(a);""",
    Op.CBRT: """    if (a == f32(0.0) || a != a || abs(a) > f32(3.0e38)) { return a; }
    var y = sign(a) * pow(abs(a), f32(1.0) / f32(3.0));
    y = y - (y * y * y - a) / (f32(3.0) * y * y);
    return y;""",
    Op.HYPOT: """    let x = abs(a);
    let y = abs(b);
    if (bitcast<u32>(x) == 0x7f800000u || bitcast<u32>(y) == 0x7f800000u) {
        return bitcast<f32>(0x7f800000u);  // inf, even with a NaN
    }
    if (bitcast<u32>(x) > 0x7f800000u || bitcast<u32>(y) > 0x7f800000u) {
        return bitcast<f32>(0x7fc00000u);  // NaN
    }
    let m = max(x, y);
    if (m == f32(0.0)) { return m; }
    let n = min(x, y) / m;
    return m * sqrt(f32(1.0) + n * n);""",
    Op.ERF: _ERFC + "    return select(f32(1.0) - r, r - f32(1.0), a < f32(0.0));",
    Op.ERFC: _ERFC + "    return select(r, f32(2.0) - r, a < f32(0.0));",
    Op.LGAMMA: """    var x = a;
    var shift = f32(0.0);
    if (x <= f32(0.0) && x == floor(x)) { return bitcast<f32>(0x7f800000u); }  // a pole: inf
    if ((bitcast<u32>(x) & 0x7fffffffu) >= 0x7f800000u) { return abs(x); }  // inf, NaN
    if (x < f32(0.5)) {
        // reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)
        let s = abs(sin(f32(3.14159265358979) * x));
        return log(f32(3.14159265358979) / s) - ruda_lgamma_pos_f32(f32(1.0) - x);
    }
    return ruda_lgamma_pos_f32(x);""",
}
#: One squaring of a power's base, its bit of the exponent multiplied in.
_SQUARING = """    if ((k & 1u) == 1u) { whole = whole * base; }
    base = base * base;
    k = k >> 1u;
"""
_POW_POSITIVE = (
    """fn ruda_pow_positive_f32(a: f32, b: f32) -> f32 {
    // a ** b for a finite a > 0: the whole part of b by squaring and the rest through pow,
    // whose error grows with b * log2(a)
    if (abs(b) >= f32(1048576.0)) { return pow(a, b); }
    let n = trunc(b);
    var k = u32(abs(n));
    var base = a;
    var whole = f32(1.0);
    // 20 squarings, written out: no loop (lavapipe ends a unit's loops after 65 535 turns)
"""
    + _SQUARING * 20
    + """    let rest = pow(a, b - n);
    let r = select(whole * rest, rest / whole, n < f32(0.0));
    if (whole > f32(3.0e38) || r == f32(0.0) || abs(r) > f32(3.0e38)) { return pow(a, b); }
    return r;
}"""
)
_LGAMMA_POSITIVE = """fn ruda_lgamma_pos_f32(a: f32) -> f32 {
    // Lanczos (g = 7, 9 terms) for a >= 0.5
    let x = a - f32(1.0);
    var s = f32(0.99999999999980993);
    s += f32(676.5203681218851) / (x + f32(1.0));
    s += f32(-1259.1392167224028) / (x + f32(2.0));
    s += f32(771.32342877765313) / (x + f32(3.0));
    s += f32(-176.61502916214059) / (x + f32(4.0));
    s += f32(12.507343278686905) / (x + f32(5.0));
    s += f32(-0.13857109526572012) / (x + f32(6.0));
    s += f32(9.9843695780195716e-6) / (x + f32(7.0));
    s += f32(1.5056327351493116e-7) / (x + f32(8.0));
    let t = x + f32(7.5);
    return f32(0.91893853320467274) + (x + f32(0.5)) * log(t) - t + log(s);
}"""

#: Bodies of the integer helpers over ``a`` and ``b``, keyed by (operation, WGSL type): the forms
#: of the shared lowering (:mod:`ruda_core.codegen.expr`) that NVIDIA's Vulkan computed wrongly,
#: and saturation without the 64-bit integers an adapter may lack.
_INT: dict[tuple[Op, str], str] = {}
for _bits, _s, _u in ((32, "i", "u"), (64, "li", "lu")):
    _INT[(Op.FLOOR_DIV, f"i{_bits}")] = f"""    if (b == 0{_s}) {{ return 0{_s}; }}
    if (b == -1{_s}) {{ return -a; }}
    let q = a / b;  // the floor below an inexact quotient of opposite signs; no % and no
    // comparison of booleans, which NVIDIA's Vulkan gave wrong answers for
    return select(q, q - 1{_s}, q * b != a && (a ^ b) < 0{_s});"""
    _INT[(Op.MOD, f"i{_bits}")] = f"""    if (b == 0{_s} || b == -1{_s}) {{ return 0{_s}; }}
    let r = a - a / b * b;  // as floor division: no %
    return select(r, r + b, r != 0{_s} && (r ^ b) < 0{_s});"""
    # the carry (borrow) out of the top bit from the operands' and the result's top bits, and
    # a mask of it: no comparison or select of 64-bit values, which gave NVIDIA's Vulkan wrong
    # sums for 424 of 425 u64 pairs as select(s, max, s < a)
    _INT[(Op.SATURATING_ADD, f"u{_bits}")] = f"""    let s = a + b;
    let carry = ((a & b) | ((a | b) & ~s)) >> {_bits - 1}u;
    return s | (0{_u} - carry);"""
    _INT[(Op.SATURATING_SUB, f"u{_bits}")] = f"""    let d = a - b;
    let borrow = ((~a & b) | (~(a ^ b) & d)) >> {_bits - 1}u;
    return d & (borrow - 1{_u});"""
    _high = (1 << (_bits - 1)) - 1
    _clamped = f"select({_high}{_s}, -{_high}{_s} - 1{_s}, a < 0{_s})"
    for _op, _sign, _overflow in (
        (Op.SATURATING_ADD, "+", "(a ^ s) & (b ^ s)"),
        (Op.SATURATING_SUB, "-", "(a ^ b) & (a ^ s)"),
    ):
        _body = f"    let s = a {_sign} b;\n    if (({_overflow}) < 0{_s}) {{ return {_clamped}; }}"
        _INT[(_op, f"i{_bits}")] = _body + "\n    return s;"


#: ``ruda_round_f16(x)``: the ``f32`` ``x`` rounded to the nearest ``f16`` value, ties to even,
#: by its bits. WGSL lets a conversion to ``f16`` round either way, and NVIDIA's Vulkan compiler
#: computes ``f16(y)``, and even ``unpack2x16float(pack2x16float(y))``, as ``y`` where the next
#: operation reads it in ``f32``: the value left here is exact in ``f16``, so no conversion after
#: it can change it.
_ROUND_F16 = """fn ruda_round_f16(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    let sign = b & 0x80000000u;
    let a = b ^ sign;
    // a normal f16 keeps 10 bits of mantissa, the 13 others rounded; a subnormal one is a
    // whole number of 2**-24 (WGSL's round() takes ties to even); from 65520 it is infinite
    let normal = bitcast<f32>((a + 0xfffu + ((a >> 13u) & 1u)) & 0xffffe000u);
    let small = round(bitcast<f32>(a) * 16777216.0f) * 5.9604644775390625e-8f;
    var r = select(normal, small, a < 0x38800000u);
    r = select(r, bitcast<f32>(0x7f800000u), a >= 0x477ff000u);
    return select(bitcast<f32>(sign | bitcast<u32>(r)), x, a >= 0x7f800000u);  // inf, NaN
}"""


#: ``ruda_mul_f32(a, b)``: ``a * b`` with IEEE's answer where a factor is a zero, found by its
#: bits: a zero of the factors' signs' product, or NaN where the other factor is an infinity or a
#: NaN. For products a compiler may see a constant zero in (:mod:`.folds`).
_ZERO_SAFE_PRODUCT = """fn ruda_mul_f32(a: f32, b: f32) -> f32 {
    let x = bitcast<u32>(a);
    let y = bitcast<u32>(b);
    let zero = min(x & 0x7fffffffu, y & 0x7fffffffu) == 0u;
    let special = max(x & 0x7fffffffu, y & 0x7fffffffu) >= 0x7f800000u;
    let signed_zero = bitcast<f32>((x ^ y) & 0x80000000u);
    return select(a * b, select(signed_zero, bitcast<f32>(0x7fc00000u), special), zero);
}"""


#: A 64-bit value of another lane, as two words (subgroup operations take 32-bit values).
_SHUFFLE_64 = """fn ruda_shuffle_u64(v: u64, lane: u32) -> u64 {
    let lo = subgroupShuffle(u32(v & 0xfffffffflu), lane);
    let hi = subgroupShuffle(u32(v >> 32u), lane);
    return u64(lo) | (u64(hi) << 32u);
}"""
_SHUFFLE_I64 = """fn ruda_shuffle_i64(v: i64, lane: u32) -> i64 {
    return bitcast<i64>(ruda_shuffle_u64(bitcast<u64>(v), lane));
}"""


def _fn(name: str, arity: int, ty: str, ret: str, body: str) -> tuple[str, str]:
    params = ", ".join(f"{p}: {ty}" for p in "ab"[:arity])
    return name, f"fn {name}({params}) -> {ret} {{\n{body}\n}}"


#: Every helper's definition, by its name.
HELPERS = dict(
    _fn(f"ruda_{op.value}_f32", 1 + (op in FLOAT_BINARY or op is Op.POW), "f32", "f32", body)
    for op, body in _FLOAT.items()
)
HELPERS.update(_fn(f"ruda_{op.value}_{ty}", 2, ty, ty, body) for (op, ty), body in _INT.items())
for _text in (
    _POW_POSITIVE,
    _LGAMMA_POSITIVE,
    _ROUND_F16,
    _ZERO_SAFE_PRODUCT,
    _SHUFFLE_64,
    _SHUFFLE_I64,
):
    HELPERS[_text[3 : _text.index("(")]] = _text
_CALLED = re.compile(r"\b(ruda_\w+)\(")


def referenced(texts: Iterable[str]) -> list[str]:
    """The definitions of the helpers that ``texts`` call, and of those they call."""
    found: dict[str, str] = {}
    pending = [name for text in texts for name in _CALLED.findall(text)]
    while pending:
        name = pending.pop()
        if name in HELPERS and name not in found:
            found[name] = HELPERS[name]
            pending += _CALLED.findall(HELPERS[name])
    return sorted(found.values())
