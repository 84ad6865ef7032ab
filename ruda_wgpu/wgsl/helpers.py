"""The WGSL helper functions of the value operations WGSL lacks or a driver gets wrong, as
text: float helpers over ``a`` (``b``, ``c``) written for a placeholder type ``T`` (see
:func:`typed`), integer helpers per (operation, signedness, width). Each says in a comment why
it is written out. Loops in them are short or unrolled: lavapipe stops a unit's loops after
65 535 turns in all. Imports no driver.
"""

from __future__ import annotations

from ruda_core.ir import Op

__all__ = ["FLOAT_HELPERS", "INT_HELPERS", "LGAMMA_POSITIVE", "POW_POSITIVE", "typed"]


def typed(text: str, ty: str) -> str:
    """A helper's text with its placeholder type ``T`` spelled ``ty``."""
    return (
        text.replace("_T(", f"_{ty}(")
        .replace("T(", f"{ty}(")
        .replace(": T)", f": {ty})")
        .replace(": T,", f": {ty},")
        .replace("-> T ", f"-> {ty} ")
        .replace("<T>", f"<{ty}>")
    )


#: The start of fmod's and remainder's long division: NaN for an infinite dividend or a zero
#: or NaN divisor, the dividend for an infinite divisor, else a loop reducing ``r = |a|``. A NaN
#: divisor is found from its bits: a compiler that assumes no NaN may fold ``y != y`` to false,
#: and the loop would then never end.
_DIVISION = """    let y = abs(b);
    let nan_b = (bitcast<u32>(b) & 0x7fffffffu) > 0x7f800000u;  // not y != y
    if ((bitcast<u32>(a) & 0x7fffffffu) >= 0x7f800000u || y == T(0.0) || nan_b) {
        return bitcast<T>(0x7fc00000u);  // NaN
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
        if (s > r) { s = s * T(0.5); }
        if (s == T(0.0)) { break; }  // a subnormal divisor flushed to zero: end, not spin
        r = r - s;
"""
#: One step of remainder's, which also notes whether the quotient is odd.
_REMAINDER_STEP = _FMOD_STEP.replace(
    "        r = r - s;", "        odd = odd || s == y;\n        r = r - s;"
)
#: erfc of ``x = |a|`` as ``r`` (Numerical Recipes' erfcc, within 1.2e-7).
_ERFC = """    let x = abs(a);
    let t = T(1.0) / (T(1.0) + T(0.5) * x);
    let r = t * exp(-x * x - T(1.26551223) + t * (T(1.00002368) + t * (T(0.37409196)
        + t * (T(0.09678418) + t * (T(-0.18628806) + t * (T(0.27886807) + t * (T(-1.13520398)
        + t * (T(1.48851587) + t * (T(-0.82215223) + t * T(0.17087277))))))))));
"""


#: Bodies of float helpers over ``a`` (``b``, ``c``) of the helper's type; ``T(`` becomes the
#: type's constructor.
FLOAT_HELPERS = {
    Op.POW: """    // C's pow, special values included (WGSL's is undefined for a <= 0)
    let inf = bitcast<f32>(0x7f800000u);
    let whole = b == trunc(b);
    let odd = whole && abs(b) < T(16777216.0) && trunc(b * T(0.5)) != b * T(0.5);
    let negative = bitcast<u32>(a) >= 0x80000000u;
    if (b == T(0.0) || a == T(1.0)) { return T(1.0); }
    if ((bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u) { return a; }
    if ((bitcast<u32>(b) & 0x7fffffffu) > 0x7f800000u) { return b; }
    if (a == T(0.0)) {
        if (b < T(0.0)) { return select(inf, select(inf, -inf, negative), odd); }
        return select(T(0.0), a, odd);
    }
    if (abs(b) == inf) {
        if (a == T(-1.0)) { return T(1.0); }
        return select(T(0.0), inf, (abs(a) < T(1.0)) == (b < T(0.0)));
    }
    if (abs(a) == inf) {
        let m = select(inf, T(0.0), b < T(0.0));
        return select(m, -m, negative && odd);
    }
    if (a < T(0.0)) {
        if (!whole) { return sqrt(a); }  // NaN
        let m = ruda_pow_positive_T(-a, b);
        return select(m, -m, odd);
    }
    return ruda_pow_positive_T(a, b);""",
    Op.LOG1P: """    let u = T(1.0) + a;
    if (u == T(1.0) || bitcast<u32>(a) == 0x7f800000u) { return a; }
    return log(u) * (a / (u - T(1.0)));""",
    Op.EXPM1: """    let u = exp(a);
    if (u == T(1.0)) { return a; }
    let m = u - T(1.0);
    if (m == T(-1.0)) { return T(-1.0); }
    if (abs(a) > T(0.5)) { return m; }
    return m * (a / log(u));""",
    Op.ACOSH: """    // log1p(t + sqrt(t * (a + 1))) with t = a - 1: exact near 1, where
    // log(a + sqrt(a * a - 1)) loses the digits
    if (a > T(1.0e18)) { return log(a) + T(0.6931471805599453); }
    let t = a - T(1.0);
    if (t < T(0.0)) { return sqrt(t); }  // NaN
    let v = t + sqrt(t * (a + T(1.0)));
    let u = T(1.0) + v;
    if (u == T(1.0)) { return v; }
    return log(u) * (v / (u - T(1.0)));""",
    Op.ATAN: """    // Cephes' atanf (within 2 ulp): drivers' atan is coarse and drops NaNs
    if ((bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u) { return a; }
    let x = abs(a);
    var base = T(0.0);
    var z = x;
    if (x > T(2.414213562373095)) {
        base = T(1.5707963267948966);
        z = T(-1.0) / x;
    } else if (x > T(0.41421356237309503)) {
        base = T(0.7853981633974483);
        z = (x - T(1.0)) / (x + T(1.0));
    }
    let zz = z * z;
    let p = (((T(0.0805374449538) * zz - T(0.138776856032)) * zz + T(0.199777106478)) * zz
        - T(0.333329491539)) * zz * z + z;
    return select(base + p, -(base + p), a < T(0.0));""",
    Op.ATAN2: """    // C's atan2 with its signed zeros and infinities, through ruda_atan
    let pi = T(3.141592653589793);
    let neg_y = bitcast<u32>(a) >= 0x80000000u;
    let neg_x = bitcast<u32>(b) >= 0x80000000u;
    if ((bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u) { return a; }
    if ((bitcast<u32>(b) & 0x7fffffffu) > 0x7f800000u) { return b; }
    let inf_y = (bitcast<u32>(a) & 0x7fffffffu) == 0x7f800000u;
    let inf_x = (bitcast<u32>(b) & 0x7fffffffu) == 0x7f800000u;
    var r = T(0.0);
    if (a == T(0.0)) {
        r = select(T(0.0), pi, neg_x);
    } else if (inf_x && inf_y) {
        r = select(pi * T(0.25), pi * T(0.75), neg_x);
    } else if (inf_x) {
        r = select(T(0.0), pi, neg_x);
    } else if (inf_y || b == T(0.0)) {
        r = pi * T(0.5);
    } else {
        r = ruda_atan_T(abs(a) / abs(b));
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
    if (r > y * T(0.5) || (r == y * T(0.5) && odd)) { r = r - y; }
    return select(r, -r, bitcast<u32>(a) >= 0x80000000u);""",
    Op.ASIN: """    // through atan: drivers' asin is coarse
    if ((bitcast<u32>(a) & 0x7fffffffu) > 0x3f800000u) { return sqrt(T(-1.0) - abs(a)); }
    if (abs(a) == T(1.0)) { return a * T(1.5707963267948966); }
    return ruda_atan_T(a / sqrt((T(1.0) - a) * (T(1.0) + a)));""",
    Op.ACOS: """    // through atan: drivers' acos is coarse
    if ((bitcast<u32>(a) & 0x7fffffffu) > 0x3f800000u) { return sqrt(T(-1.0) - abs(a)); }
    return T(2.0) * ruda_atan_T(sqrt((T(1.0) - a) / (T(1.0) + a)));""",
    Op.TANH: """    if (abs(a) > T(20.0)) { return sign(a); }
    return tanh(a);""",
    Op.CBRT: """    if (a == T(0.0) || a != a || abs(a) > T(3.0e38)) { return a; }
    var y = sign(a) * pow(abs(a), T(1.0) / T(3.0));
    y = y - (y * y * y - a) / (T(3.0) * y * y);
    return y;""",
    Op.HYPOT: """    let x = abs(a);
    let y = abs(b);
    if (bitcast<u32>(x) == 0x7f800000u || bitcast<u32>(y) == 0x7f800000u) {
        return bitcast<T>(0x7f800000u);  // inf, even with a NaN
    }
    if (bitcast<u32>(x) > 0x7f800000u || bitcast<u32>(y) > 0x7f800000u) {
        return bitcast<T>(0x7fc00000u);  // NaN
    }
    let m = max(x, y);
    if (m == T(0.0)) { return m; }
    let n = min(x, y) / m;
    return m * sqrt(T(1.0) + n * n);""",
    Op.ERF: _ERFC + "    return select(T(1.0) - r, r - T(1.0), a < T(0.0));",
    Op.ERFC: _ERFC + "    return select(r, T(2.0) - r, a < T(0.0));",
    Op.LGAMMA: """    var x = a;
    var shift = T(0.0);
    if (x <= T(0.0) && x == floor(x)) { return bitcast<T>(0x7f800000u); }  // a pole: inf
    if ((bitcast<u32>(x) & 0x7fffffffu) >= 0x7f800000u) { return abs(x); }  // inf, NaN
    if (x < T(0.5)) {
        // reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)
        let s = abs(sin(T(3.14159265358979) * x));
        return log(T(3.14159265358979) / s) - ruda_lgamma_pos_T(T(1.0) - x);
    }
    return ruda_lgamma_pos_T(x);""",
}
#: One squaring of a power's base, its bit of the exponent multiplied in.
_SQUARING = """    if ((k & 1u) == 1u) { whole = whole * base; }
    base = base * base;
    k = k >> 1u;
"""
POW_POSITIVE = (
    """fn ruda_pow_positive_T(a: T, b: T) -> T {
    // a ** b for a finite a > 0: the whole part of b by squaring and the rest through pow,
    // whose error grows with b * log2(a)
    if (abs(b) >= T(1048576.0)) { return pow(a, b); }
    let n = trunc(b);
    var k = u32(abs(n));
    var base = a;
    var whole = T(1.0);
    // 20 squarings, written out: no loop (lavapipe ends a unit's loops after 65 535 turns)
"""
    + _SQUARING * 20
    + """    let rest = pow(a, b - n);
    let r = select(whole * rest, rest / whole, n < T(0.0));
    if (whole > T(3.0e38) || r == T(0.0) || abs(r) > T(3.0e38)) { return pow(a, b); }
    return r;
}"""
)
LGAMMA_POSITIVE = """fn ruda_lgamma_pos_T(a: T) -> T {
    // Lanczos (g = 7, 9 terms) for a >= 0.5
    let x = a - T(1.0);
    var s = T(0.99999999999980993);
    s += T(676.5203681218851) / (x + T(1.0));
    s += T(-1259.1392167224028) / (x + T(2.0));
    s += T(771.32342877765313) / (x + T(3.0));
    s += T(-176.61502916214059) / (x + T(4.0));
    s += T(12.507343278686905) / (x + T(5.0));
    s += T(-0.13857109526572012) / (x + T(6.0));
    s += T(9.9843695780195716e-6) / (x + T(7.0));
    s += T(1.5056327351493116e-7) / (x + T(8.0));
    let t = x + T(7.5);
    return T(0.91893853320467274) + (x + T(0.5)) * log(t) - t + log(s);
}"""

#: Bodies of integer helpers, keyed by (operation, signed, bits).
INT_HELPERS: dict[tuple[Op, bool, int], str] = {}
for _bits, _s, _u in ((32, "i", "u"), (64, "li", "lu")):
    INT_HELPERS[(Op.FLOOR_DIV, True, _bits)] = f"""    if (b == 0{_s}) {{ return 0{_s}; }}
    if (b == -1{_s}) {{ return -a; }}
    let q = a / b;  // the floor below an inexact quotient of opposite signs; no % and no
    // comparison of booleans, which NVIDIA's Vulkan gave wrong answers for
    return select(q, q - 1{_s}, q * b != a && (a ^ b) < 0{_s});"""
    INT_HELPERS[(Op.MOD, True, _bits)] = f"""    if (b == 0{_s} || b == -1{_s}) {{ return 0{_s}; }}
    let r = a - a / b * b;  // as floor division: no %
    return select(r, r + b, r != 0{_s} && (r ^ b) < 0{_s});"""
    # the carry (borrow) out of the top bit from the operands' and the result's top bits, and
    # a mask of it: no comparison or select of 64-bit values, which gave NVIDIA's Vulkan wrong
    # sums for 424 of 425 u64 pairs as select(s, max, s < a)
    INT_HELPERS[(Op.SATURATING_ADD, False, _bits)] = f"""    let s = a + b;
    let carry = ((a & b) | ((a | b) & ~s)) >> {_bits - 1}u;
    return s | (0{_u} - carry);"""
    INT_HELPERS[(Op.SATURATING_SUB, False, _bits)] = f"""    let d = a - b;
    let borrow = ((~a & b) | (~(a ^ b) & d)) >> {_bits - 1}u;
    return d & (borrow - 1{_u});"""
    _high = (1 << (_bits - 1)) - 1
    _clamped = f"select({_high}{_s}, -{_high}{_s} - 1{_s}, a < 0{_s})"
    for _op, _sign, _overflow in (
        (Op.SATURATING_ADD, "+", "(a ^ s) & (b ^ s)"),
        (Op.SATURATING_SUB, "-", "(a ^ b) & (a ^ s)"),
    ):
        _body = f"    let s = a {_sign} b;\n    if (({_overflow}) < 0{_s}) {{ return {_clamped}; }}"
        INT_HELPERS[(_op, True, _bits)] = _body + "\n    return s;"
INT_HELPERS[(Op.MUL_HI, False, 32)] = """    return u32((u64(a) * u64(b)) >> 32u);"""
INT_HELPERS[(Op.MUL_HI, True, 32)] = """    return i32((i64(a) * i64(b)) >> 32u);"""
INT_HELPERS[(Op.LEADING_ZEROS, False, 64)] = """    let hi = u32(a >> 32u);
    if (hi != 0u) { return countLeadingZeros(hi); }
    return 32u + countLeadingZeros(u32(a));"""
INT_HELPERS[(Op.TRAILING_ZEROS, False, 64)] = """    let lo = u32(a & 0xfffffffflu);
    if (lo != 0u) { return countTrailingZeros(lo); }
    return 32u + countTrailingZeros(u32(a >> 32u));"""
INT_HELPERS[(Op.FIND_FIRST_SET, False, 64)] = """    if (a == 0lu) { return 0u; }
    let lo = u32(a & 0xfffffffflu);
    if (lo != 0u) { return countTrailingZeros(lo) + 1u; }
    return 33u + countTrailingZeros(u32(a >> 32u));"""
INT_HELPERS[(Op.REVERSE_BITS, False, 64)] = """    let hi = u64(reverseBits(u32(a)));
    return (hi << 32u) | u64(reverseBits(u32(a >> 32u)));"""
INT_HELPERS[(Op.MUL_HI, False, 64)] = """    let m = 0xfffffffflu;
    let p0 = (a & m) * (b & m);
    let p1 = (a & m) * (b >> 32u);
    let p2 = (a >> 32u) * (b & m);
    let mid = (p0 >> 32u) + (p1 & m) + (p2 & m);
    return (a >> 32u) * (b >> 32u) + (p1 >> 32u) + (p2 >> 32u) + (mid >> 32u);"""
INT_HELPERS[(Op.MUL_HI, True, 64)] = """    let ua = bitcast<u64>(a);
    let ub = bitcast<u64>(b);
    var hi = ruda_mul_hi_u64(ua, ub);
    if (a < 0li) { hi = hi - ub; }
    if (b < 0li) { hi = hi - ua; }
    return bitcast<i64>(hi);"""
for _op in (Op.LEADING_ZEROS, Op.TRAILING_ZEROS, Op.FIND_FIRST_SET):
    INT_HELPERS[(_op, True, 64)] = INT_HELPERS[(_op, False, 64)].replace("(a", "(u64(a)")
INT_HELPERS[(Op.REVERSE_BITS, True, 64)] = (
    "    return bitcast<i64>(ruda_reverse_bits_u64(bitcast<u64>(a)));"
)
