// The WGSL helper functions of ruda's value operations that WGSL lacks or a driver gets
// wrong. ruda's WGSL emitter copies into a module the functions it calls, and those they
// call (a function runs from its `fn` line to the next line that is a lone `}`, with the
// module-scope `var` declared on the line before it, if any; other text between functions is
// not copied). `ruda_<op>_f32` computes an operation over f32 operands `a` (`b`)
// (f16 is computed in f32); `ruda_<op>_<type>` over integers. Each says why it is written out.
//
// Loops in them are short or written out: lavapipe stops a unit's loops after 65 535 turns in
// all, without an error. A block between `// repeat N` and `// end repeat` is written out N
// times when the module is made (as written here, one copy, it is valid WGSL too).

// --- f32 math: C's and IEEE's special values, and accuracy drivers' builtins lack ---------

fn ruda_pow_f32(a: f32, b: f32) -> f32 {
    // C's pow, special values included (WGSL's is undefined for a <= 0)
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
    return ruda_pow_positive_f32(a, b);
}

fn ruda_pow_positive_f32(a: f32, b: f32) -> f32 {
    // a ** b for a finite a > 0 as 2 ** (b log2(a)), log2(a) and the product each to about 40
    // bits as a pair hi + lo (drivers' pow is exp2(b * log2(a)), whose error grows with the
    // product: 15 ulp at 1.9e-19 ** -0.68 on lavapipe)
    let l = ruda_log2_pair_f32(a);
    let y = ruda_two_product_f32(b, l.x);
    if (abs(y.x) > f32(300.0)) {  // far past overflow or underflow
        return select(f32(0.0), bitcast<f32>(0x7f800000u), y.x > f32(0.0));
    }
    let n = round(y.x);
    let r = ruda_opaque_f32(y.x - n) + (y.y + b * l.y);  // y.x - n is exact, added to y.y last
    return ruda_exp_scaled_f32(r * f32(0.6931471805599453), i32(n));
}

fn ruda_log2_pair_f32(a: f32) -> vec2<f32> {
    // log2(a) of a finite a > 0 (a subnormal too, from its bits) as (hi, lo), to about 40 bits:
    // a = 2**e m with m in [sqrt(1/2), sqrt(2)) and log(m) = 2 atanh(t), t = (m - 1) / (m + 1)
    // as th + tl, the series' tail t**3 (2/3 + 2 t**2/5 + ...) in f32 (under 1% of log(m)).
    // Each value whose rounding error is taken goes through ruda_opaque_f32: a compiler that
    // reassociates folds (m + 1) - m to 1 (lavapipe does) and (f - p) - err to f - (p + err)
    let u = ruda_unpack_f32(bitcast<u32>(a));
    var m = f32(u.x) * f32(1.1920928955078125e-7);  // in [1, 2)
    var e = u.y - 127;
    if (m > f32(1.4142135623730951)) { m = m * f32(0.5); e = e + 1; }
    let f = m - f32(1.0);  // exact
    // m + 1 = sh + sl exactly: m's last bit cleared, plus 1, is exact
    let mh = bitcast<f32>(bitcast<u32>(m) & 0xfffffffeu);
    let sh = ruda_opaque_f32(mh + f32(1.0));
    let sl = ruda_opaque_f32(m - mh);
    let th = f / sh;
    let q = ruda_two_product_f32(th, sh);
    let tl = ((ruda_opaque_f32(f - q.x) - q.y) - th * sl) / sh;
    let z = th * th;
    let tail = th * z * ((((((f32(0.15384615384615385) * z + f32(0.18181818181818182)) * z
        + f32(0.2222222222222222)) * z + f32(0.2857142857142857)) * z + f32(0.4)) * z)
        + f32(0.6666666666666666));
    // log(m) times 1 / ln 2 = ih + il
    let ih = f32(1.4426950216293335);
    let g = ruda_two_product_f32(f32(2.0) * th, ih);
    let gl = g.y + f32(2.0) * th * f32(1.925963033500011e-8) + (f32(2.0) * tl + tail) * ih;
    let hi = ruda_opaque_f32(f32(e) + g.x);
    return vec2<f32>(hi, (g.x - ruda_opaque_f32(hi - f32(e))) + gl);  // |e| >= |g.x| unless e is 0
}

fn ruda_two_product_f32(a: f32, b: f32) -> vec2<f32> {
    // (p, err) with p = a * b rounded and p + err = a * b exactly (Dekker's), for products
    // that neither overflow nor underflow: the halves are taken by the bits (12 significant
    // bits each), so every partial product is exact and a driver that fuses one into an add
    // cannot change it; p and each partial sum of err go through ruda_opaque_f32, so that no
    // compiler regroups the sum (NVIDIA's Vulkan compiler did: pow was 24 ulp off near 1)
    let p = ruda_opaque_f32(a * b);
    let ah = bitcast<f32>(bitcast<u32>(a) & 0xfffff000u);
    let bh = bitcast<f32>(bitcast<u32>(b) & 0xfffff000u);
    let al = ruda_opaque_f32(a - ah);
    let bl = ruda_opaque_f32(b - bh);
    var err = ruda_opaque_f32(ah * bh - p);
    err = ruda_opaque_f32(err + ah * bl);
    err = ruda_opaque_f32(err + al * bh);
    return vec2<f32>(p, err + al * bl);
}

// exp and its kin (expm1, sinh, cosh, tanh, pow) from Cody and Waite's reduction a = k ln 2 + r,
// |r| <= ln 2 / 2, with ln 2 in two parts, the first of 9 bits, so that k times it is exact,
// and expm1(r) by its Taylor series (within 1 ulp): drivers' exp may be off by 3 + 2 |a| ulp
// (Vulkan's bound; lavapipe's was 25 ulp off at 86.8), and a power of two is applied in two
// halves made from the bits (WGSL's ldexp is undefined past 2**128 and may flush), so that a
// result near overflow or in the subnormal range is rounded once.

fn ruda_exp_f32(a: f32) -> f32 {
    if ((bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u) { return a; }  // NaN
    return ruda_exp_scaled_f32(a, 0);
}

fn ruda_exp_scaled_f32(a: f32, s: i32) -> f32 {
    // exp(a) * 2**s for an a that is not a NaN, |s| <= 300: finite up to its overflow
    let x = clamp(a, f32(-104.0), f32(90.0));
    let k = round(x * f32(1.4426950408889634));
    let r = (x - k * f32(0.693359375)) - k * f32(-2.12194440e-4);
    let p = f32(1.0) + ruda_expm1_kernel_f32(r);
    let n = clamp(i32(k) + s, -152, 130);
    let h = n / 2;
    return p * ruda_pow2_f32(h) * ruda_pow2_f32(n - h);
}

fn ruda_pow2_f32(n: i32) -> f32 {
    // 2**n for n in [-126, 127], by its bits
    return bitcast<f32>(u32(n + 127) << 23u);
}

fn ruda_expm1_kernel_f32(r: f32) -> f32 {
    // expm1(r) for |r| <= 0.35: the Taylor series to r**8 / 8!; r itself where r * r is 0, so
    // that a zero keeps its sign
    let p = (((((f32(2.48015873015873e-5) * r + f32(1.984126984126984e-4)) * r
        + f32(1.388888888888889e-3)) * r + f32(8.333333333333333e-3)) * r
        + f32(4.1666666666666664e-2)) * r + f32(0.16666666666666666)) * r + f32(0.5);
    let z = r * r;
    return select(r + z * p, r, z == f32(0.0));
}

fn ruda_expm1_f32(a: f32) -> f32 {
    // 2**k (1 + expm1(r)) - 1 as 2**k expm1(r) + (2**k - 1), exact but for the last rounding
    // where k is small; exp(a) from 88 on, where the 1 is lost in rounding, -1 below -87
    if ((bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u || a > f32(88.0)) {
        return ruda_exp_f32(a);  // NaN, or exp(a)
    }
    let x = max(a, f32(-87.0));
    let k = round(x * f32(1.4426950408889634));
    let r = (x - k * f32(0.693359375)) - k * f32(-2.12194440e-4);
    let e = ruda_expm1_kernel_f32(r);
    if (k == f32(0.0)) { return e; }
    let t = ruda_pow2_f32(i32(k));
    return t * e + (t - f32(1.0));
}

fn ruda_sinh_f32(a: f32) -> f32 {
    // sinh(|a|) as (E + E / (E + 1)) / 2 with E = expm1(|a|), exact near 0, and from 12 on as
    // exp(|a|) / 2, halved in the scaling so that it is finite up to ln(2 FLT_MAX) (drivers'
    // sinh overflowed from 88.7); a's sign set by its bits
    let bits = bitcast<u32>(a);
    if ((bits & 0x7fffffffu) > 0x7f800000u) { return a; }  // NaN
    let y = bitcast<f32>(bits & 0x7fffffffu);
    var m = ruda_exp_scaled_f32(y, -1);
    if (y < f32(12.0)) {
        let e = ruda_expm1_f32(y);
        m = f32(0.5) * (e + e / (e + f32(1.0)));
    }
    return bitcast<f32>(bitcast<u32>(m) | (bits & 0x80000000u));
}

fn ruda_cosh_f32(a: f32) -> f32 {
    // exp(|a|) / 2 + exp(-|a|) / 2, each halved in its scaling, so that it is finite up to
    // ln(2 FLT_MAX) (drivers' cosh overflowed from 88.7)
    let bits = bitcast<u32>(a) & 0x7fffffffu;
    if (bits > 0x7f800000u) { return a; }  // NaN
    let y = bitcast<f32>(bits);
    return ruda_exp_scaled_f32(y, -1) + ruda_exp_scaled_f32(-y, -1);
}

fn ruda_tanh_f32(a: f32) -> f32 {
    // tanh(|a|) as E / (E + 2) with E = expm1(2 |a|), exact near 0 (drivers' tanh may be an
    // approximation good to 11 bits), 1 from 9.1 on; a's sign set by its bits
    let bits = bitcast<u32>(a);
    if ((bits & 0x7fffffffu) > 0x7f800000u) { return a; }  // NaN
    let y = bitcast<f32>(bits & 0x7fffffffu);
    var t = f32(1.0);
    if (y < f32(9.1)) {
        let e = ruda_expm1_f32(f32(2.0) * y);
        t = e / (e + f32(2.0));
    }
    return bitcast<f32>(bitcast<u32>(t) | (bits & 0x80000000u));
}

fn ruda_asinh_f32(a: f32) -> f32 {
    // log1p(y + y * y / (1 + sqrt(1 + y * y))) for y = |a|, exact near 0, and from 2**12 on
    // log(y) + ln 2, where the rest is below an ulp (drivers' asinh squares a, and lavapipe's
    // was infinite from 1.8e19); a's sign set by its bits
    let bits = bitcast<u32>(a);
    if ((bits & 0x7fffffffu) > 0x7f800000u) { return a; }  // NaN
    let y = bitcast<f32>(bits & 0x7fffffffu);
    var r = log(y) + f32(0.6931471805599453);
    if (y < f32(4096.0)) {
        let z = y * y;
        r = ruda_log1p_f32(y + z / (f32(1.0) + sqrt(f32(1.0) + z)));
    }
    return bitcast<f32>(bitcast<u32>(r) | (bits & 0x80000000u));
}

// log and log2 of a subnormal a from its bits, normalised: drivers' are neither right nor
// those of 0 there (lavapipe's log(4.9e-41) was -88.0, not -92.8)

fn ruda_log_f32(a: f32) -> f32 {
    let bits = bitcast<u32>(a);
    if (bits == 0u || bits >= 0x00800000u) { return log(a); }
    let u = ruda_unpack_f32(bits);
    let m = bitcast<f32>((u32(u.x) & 0x7fffffu) | 0x3f800000u);
    return log(m) + f32(u.y - 127) * f32(0.6931471805599453);
}

fn ruda_log2_f32(a: f32) -> f32 {
    let bits = bitcast<u32>(a);
    if (bits == 0u || bits >= 0x00800000u) { return log2(a); }
    let u = ruda_unpack_f32(bits);
    return log2(bitcast<f32>((u32(u.x) & 0x7fffffu) | 0x3f800000u)) + f32(u.y - 127);
}

fn ruda_log1p_f32(a: f32) -> f32 {
    let u = f32(1.0) + a;
    if (u == f32(1.0) || bitcast<u32>(a) == 0x7f800000u) { return a; }
    return log(u) * (a / (u - f32(1.0)));
}

fn ruda_acosh_f32(a: f32) -> f32 {
    // log1p(t + sqrt(t * (a + 1))) with t = a - 1: exact near 1, where
    // log(a + sqrt(a * a - 1)) loses the digits
    if (a > f32(1.0e18)) { return log(a) + f32(0.6931471805599453); }
    let t = a - f32(1.0);
    if (t < f32(0.0)) { return sqrt(t); }  // NaN
    let v = t + sqrt(t * (a + f32(1.0)));
    let u = f32(1.0) + v;
    if (u == f32(1.0)) { return v; }
    return log(u) * (v / (u - f32(1.0)));
}

fn ruda_atan_f32(a: f32) -> f32 {
    // Cephes' atanf (within 2 ulp): drivers' atan is coarse and drops NaNs
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
    return select(base + p, -(base + p), a < f32(0.0));
}

fn ruda_atan2_f32(a: f32, b: f32) -> f32 {
    // C's atan2 with its signed zeros and infinities, through ruda_atan
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
    return select(r, -r, neg_y);
}

fn ruda_asin_f32(a: f32) -> f32 {
    // through atan: drivers' asin is coarse
    if ((bitcast<u32>(a) & 0x7fffffffu) > 0x3f800000u) { return sqrt(f32(-1.0) - abs(a)); }
    if (abs(a) == f32(1.0)) { return a * f32(1.5707963267948966); }
    return ruda_atan_f32(a / sqrt((f32(1.0) - a) * (f32(1.0) + a)));
}

// sin, cos and tan of the argument reduced here to r in [-pi/4, pi/4] and a quadrant (see
// ruda_reduce_pi2_f32), then Cephes' sinf and cosf polynomials of r: drivers reduce large
// arguments coarsely (cos(1e10) is 1.0 on lavapipe, not 0.873; NVIDIA's tan(765) -45.16, not
// -45.06), and WGSL promises their accuracy only within [-pi, pi].

fn ruda_sin_f32(a: f32) -> f32 {
    let r = ruda_reduce_pi2_f32(a);
    let q = u32(r.y);
    let v = select(ruda_sin_kernel_f32(r.x), ruda_cos_kernel_f32(r.x), (q & 1u) == 1u);
    return select(v, -v, (q & 2u) != 0u);
}

fn ruda_cos_f32(a: f32) -> f32 {
    let r = ruda_reduce_pi2_f32(a);
    let q = u32(r.y);
    let v = select(ruda_cos_kernel_f32(r.x), ruda_sin_kernel_f32(r.x), (q & 1u) == 1u);
    return select(v, -v, ((q + 1u) & 2u) != 0u);
}

fn ruda_tan_f32(a: f32) -> f32 {
    let r = ruda_reduce_pi2_f32(a);
    let s = ruda_sin_kernel_f32(r.x);
    let c = ruda_cos_kernel_f32(r.x);
    return select(s / c, -c / s, (u32(r.y) & 1u) == 1u);
}

fn ruda_sin_kernel_f32(x: f32) -> f32 {
    // sin(x) for |x| <= pi/4; x itself where x * x is 0, so that a zero keeps its sign
    let z = x * x;
    let p = (-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f;
    return select(x + x * z * p, x, z == f32(0.0));
}

fn ruda_cos_kernel_f32(x: f32) -> f32 {
    // cos(x) for |x| <= pi/4
    let z = x * x;
    let p = (2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f;
    return f32(1.0) - f32(0.5) * z + z * z * p;
}

fn ruda_reduce_pi2_f32(a: f32) -> vec2<f32> {
    // (r, q) with a = r + q pi/2 (mod 2 pi), |r| <= pi/4 (a little more near a boundary), q in
    // 0 .. 3 (NaN for an infinity or NaN). Up to 256 pi/2, Cody and Waite's reduction by pi/2
    // in four parts of 15 bits, so that each product by q is exact (within 2 ulp of r over
    // every f32 there); beyond, Payne and Hanek's: the significand times the bits of 2/pi
    // that matter modulo 4 at its exponent, in 32-bit words, 64 bits of fraction kept
    let bits = bitcast<u32>(a) & 0x7fffffffu;
    if (bits >= 0x7f800000u) { return vec2<f32>(bitcast<f32>(bits | 0x7fc00000u), f32(0.0)); }
    var r = bitcast<f32>(bits);
    var q = 0u;
    if (bits > 0x3f490fdau && bits <= 0x43c90fdbu) {
        let k = floor(r * 0.63661975f + f32(0.5));
        r = (((r - k * 1.5707397f) - k * 5.657971e-5f) - k * 9.920882e-10f) - k * 5.3902195e-15f;
        q = u32(k) & 3u;
    } else if (bits > 0x43c90fdbu) {
        let m = (bits & 0x7fffffu) | 0x800000u;
        let e = i32(bits >> 23u) - 150;  // |a| = m * 2**e
        // the first word of 2/pi holding a bit that matters: the bits before it give multiples
        // of 4; the 128 bits from it on leave an error under 2**-70
        let k = u32(select(0, (e - 2) >> 5u, e >= 2));
        var w = array<u32, 7>(0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u,
            0x3c439041u, 0xfe5163abu);
        var p = array<u32, 6>(0u, 0u, 0u, 0u, 0u, 0u);  // m times words k .. k + 3, lowest first
        var carry = 0u;
        var j = 0u;
        // repeat 4
        {
            let wide = ruda_mul_wide_u32(m, w[k + 3u - j]);
            p[j] = wide.x + carry;
            carry = wide.y + select(0u, 1u, p[j] < wide.x);
            j = j + 1u;
        }
        // end repeat
        p[4] = carry;
        // the fraction's 64 bits and the quadrant's 2 start s bits up the product
        let s = u32(32 * i32(k) + 64 - e);
        let sh = s & 31u;
        var f = array<u32, 3>(0u, 0u, 0u);
        var i = 0u;
        // repeat 3
        {
            let at = (s >> 5u) + i;
            f[i] = (p[at] >> sh) | select(0u, p[at + 1u] << (32u - sh), sh != 0u);
            i = i + 1u;
        }
        // end repeat
        var lo = f[0];
        var hi = f[1];
        q = f[2] & 3u;
        let negative = (hi & 0x80000000u) != 0u;  // past one half: the next quadrant, r < 0
        if (negative) {
            q = (q + 1u) & 3u;
            lo = ~lo + 1u;
            hi = ~hi + select(0u, 1u, lo == 0u);
        }
        var scale = -32;
        if (hi == 0u) { hi = lo; lo = 0u; scale = -64; }
        let z = countLeadingZeros(hi);
        hi = (hi << z) | select(0u, lo >> (32u - z), z != 0u);
        r = ldexp(f32(hi), scale - i32(z)) * 1.5707963267948966f;
        r = select(r, -r, negative);
    }
    if ((bitcast<u32>(a) & 0x80000000u) != 0u) {
        r = -r;
        q = (4u - q) & 3u;
    }
    return vec2<f32>(r, f32(q));
}

fn ruda_mul_wide_u32(a: u32, b: u32) -> vec2<u32> {
    // (low, high) words of a * b
    let al = a & 0xffffu;
    let ah = a >> 16u;
    let bl = b & 0xffffu;
    let bh = b >> 16u;
    let low = al * bl;
    let mid1 = ah * bl;
    let mid2 = al * bh;
    let t = (low >> 16u) + (mid1 & 0xffffu) + (mid2 & 0xffffu);
    let high = ah * bh + (mid1 >> 16u) + (mid2 >> 16u) + (t >> 16u);
    return vec2<u32>((t << 16u) | (low & 0xffffu), high);
}

fn ruda_acos_f32(a: f32) -> f32 {
    // through atan: drivers' acos is coarse
    if ((bitcast<u32>(a) & 0x7fffffffu) > 0x3f800000u) { return sqrt(f32(-1.0) - abs(a)); }
    return f32(2.0) * ruda_atan_f32(sqrt((f32(1.0) - a) / (f32(1.0) + a)));
}

fn ruda_cbrt_f32(a: f32) -> f32 {
    // one Newton step from the driver's pow, in a form whose cube cannot overflow
    if (a == f32(0.0) || (bitcast<u32>(a) & 0x7fffffffu) >= 0x7f800000u) { return a; }
    let y = sign(a) * pow(abs(a), f32(1.0) / f32(3.0));
    return y - (y - a / (y * y)) / f32(3.0);
}

fn ruda_hypot_f32(a: f32, b: f32) -> f32 {
    // magnitudes from the bits: lavapipe folds abs(-0.0) to -0.0, whose bits read as a NaN's
    let x = bitcast<f32>(bitcast<u32>(a) & 0x7fffffffu);
    let y = bitcast<f32>(bitcast<u32>(b) & 0x7fffffffu);
    if (bitcast<u32>(x) == 0x7f800000u || bitcast<u32>(y) == 0x7f800000u) {
        return bitcast<f32>(0x7f800000u);  // inf, even with a NaN
    }
    if (bitcast<u32>(x) > 0x7f800000u || bitcast<u32>(y) > 0x7f800000u) {
        return bitcast<f32>(0x7fc00000u);  // NaN
    }
    let m = max(x, y);
    if (m == f32(0.0)) { return m; }
    let n = min(x, y) / m;
    return m * sqrt(f32(1.0) + n * n);
}

// fmod and remainder: exact long division of the significands as integers, eight bits of the
// quotient a step, with no loop and no float arithmetic: a driver that flushes subnormal
// floats cannot change it, and lavapipe, which ends a unit's loops after 65 535 turns in all
// (counting the turns of lanes together), cannot cut it short. (A float loop taking off the
// divisor scaled to the remainder's exponent spun where a driver flushed a subnormal divisor
// in some operations and not in others, and lavapipe then cut short the loops of the other
// lanes.) NaN for an infinite or NaN dividend or a zero or NaN divisor, the dividend for an
// infinite divisor; all found from the bits, which a compiler that assumes no NaN cannot fold
// away.

fn ruda_fmod_f32(a: f32, b: f32) -> f32 {
    // exact, as C's fmod
    let x = bitcast<u32>(a) & 0x7fffffffu;
    let y = bitcast<u32>(b) & 0x7fffffffu;
    if (x >= 0x7f800000u || y == 0u || y > 0x7f800000u) { return bitcast<f32>(0x7fc00000u); }
    if (y == 0x7f800000u) { return a; }
    return bitcast<f32>(ruda_division_f32(x, y, false) | (bitcast<u32>(a) & 0x80000000u));
}

fn ruda_remainder_f32(a: f32, b: f32) -> f32 {
    // exact, as IEEE's: |a| less the nearest multiple of |b|, an even one on a tie
    let x = bitcast<u32>(a) & 0x7fffffffu;
    let y = bitcast<u32>(b) & 0x7fffffffu;
    if (x >= 0x7f800000u || y == 0u || y > 0x7f800000u) { return bitcast<f32>(0x7fc00000u); }
    if (y == 0x7f800000u) { return a; }
    return bitcast<f32>(ruda_division_f32(x, y, true) ^ (bitcast<u32>(a) & 0x80000000u));
}

fn ruda_division_f32(x: u32, y: u32, nearest: bool) -> u32 {
    // the bits of the f32 of bits x mod the f32 of bits y (both finite and positive, y not 0);
    // with nearest, of x less the nearest multiple of y, an even one on a tie, its sign bit
    // set where that is negative
    if (x == 0u) { return 0u; }
    let xs = ruda_unpack_f32(x);
    let ys = ruda_unpack_f32(y);
    var m = u32(xs.x);
    var e = xs.y;
    let n = u32(ys.x);
    var odd = false;
    if (e >= ys.y) {
        // eight bits of the quotient a step while more are left (at most 276: 35 steps), then
        // the last ones, whose lowest tells whether the quotient is odd
        // repeat 35
        if (e - ys.y > 8) { m = (m << 8u) % n; e = e - 8; }
        // end repeat
        let t = m << u32(e - ys.y);
        odd = ((t / n) & 1u) == 1u;
        m = t % n;
        e = ys.y;
    }
    // the remainder is m * 2**(e - 150); twice it against y at y's exponent: 2r's significand
    // is m << (e - ey + 1), and where that shift is negative 2r < y
    let d = e - ys.y + 1;
    if (nearest && d >= 0) {
        let twice = m << u32(d);
        if (twice > n || (twice == n && odd)) {  // y - r, at r's exponent
            return ruda_pack_f32((n << u32(1 - d)) - m, e) | 0x80000000u;
        }
    }
    return ruda_pack_f32(m, e);
}

fn ruda_unpack_f32(bits: u32) -> vec2<i32> {
    // the significand of the positive finite f32 of bits bits with its leading bit moved to
    // bit 23 (a subnormal's too), and the exponent field that goes with it: the value is
    // significand * 2**(exponent - 150)
    let e = i32(bits >> 23u);
    if (e != 0) { return vec2<i32>(i32((bits & 0x7fffffu) | 0x800000u), e); }
    let s = countLeadingZeros(bits) - 8u;
    return vec2<i32>(i32(bits << s), 1 - i32(s));
}

fn ruda_pack_f32(m: u32, e: i32) -> u32 {
    // the bits of m * 2**(e - 150), for m < 2**25 and a value an f32 holds exactly
    if (m == 0u) { return 0u; }
    let lead = 31 - i32(countLeadingZeros(m));
    var n = m;
    if (lead > 23) { n = m >> u32(lead - 23); } else { n = m << u32(23 - lead); }
    let f = e + lead - 23;
    if (f > 0) { return (u32(f) << 23u) | (n & 0x7fffffu); }
    return n >> u32(1 - f);
}

// erf and erfc from erfc of |a| (Numerical Recipes' erfcc, within 1.2e-7); lgamma as Cephes'
// lgamf.

fn ruda_erf_f32(a: f32) -> f32 {
    let r = ruda_erfc_magnitude_f32(abs(a));
    return select(f32(1.0) - r, r - f32(1.0), a < f32(0.0));
}

fn ruda_erfc_f32(a: f32) -> f32 {
    let r = ruda_erfc_magnitude_f32(abs(a));
    return select(r, f32(2.0) - r, a < f32(0.0));
}

fn ruda_erfc_magnitude_f32(x: f32) -> f32 {
    // erfc(x) for x >= 0
    let t = f32(1.0) / (f32(1.0) + f32(0.5) * x);
    return t * ruda_exp_f32(-x * x - f32(1.26551223) + t * (f32(1.00002368) + t * (f32(0.37409196)
        + t * (f32(0.09678418) + t * (f32(-0.18628806) + t * (f32(0.27886807)
        + t * (f32(-1.13520398) + t * (f32(1.48851587) + t * (f32(-0.82215223)
        + t * f32(0.17087277))))))))));
}

fn ruda_lgamma_f32(a: f32) -> f32 {
    // Cephes' lgamf
    if (a <= f32(0.0) && a == floor(a)) { return bitcast<f32>(0x7f800000u); }  // a pole: inf
    if ((bitcast<u32>(a) & 0x7fffffffu) >= 0x7f800000u) { return abs(a); }  // inf, NaN
    if (a >= f32(0.0)) { return ruda_lgamma_pos_f32(a); }
    // reflection, lgamma(-q) = log(pi / (q |sin(pi q)|)) - lgamma(q), with sin(pi z) taken of
    // the distance z of q to the nearest integer by its series: drivers' sin is coarse for
    // large arguments, and NVIDIA's for small ones (1e-3 off in relative terms at 4e-4)
    let q = -a;
    let z = min(q - floor(q), ceil(q) - q);
    let x = f32(3.14159265358979) * z;
    let s = x * ruda_polynomial_f32(x * x, array<f32, 8>(  // sin(x) / x, |x| <= pi / 2
        -7.647163731819816e-13f, 1.605904383682161e-10f, -2.505210838544172e-8f,
        2.755731922398589e-6f, -1.984126984126984e-4f, 8.333333333333333e-3f,
        -1.666666666666667e-1f, 1.0f));
    if (q < f32(1.0e-6)) {  // q s underflows from 1e-19 down: its log in two parts
        let l = ruda_log_f32(q) + ruda_log_f32(f32(0.318309886183790671538) * s);
        return -l - ruda_lgamma_pos_f32(q);
    }
    return -log(f32(0.318309886183790671538) * (q * s)) - ruda_lgamma_pos_f32(q);
}

fn ruda_lgamma_pos_f32(a: f32) -> f32 {
    // lgamma of a > 0: Stirling's series from 6.5; below, lgamma(1 + x) or lgamma(2 + x) as x
    // times a polynomial in x (exact in relative terms at lgamma's zeros 1 and 2), the argument
    // moved there by the recurrence lgamma(a + 1) = lgamma(a) + log(a)
    if (a >= f32(6.5)) {
        var q = f32(0.91893853320467274) - a + (a - f32(0.5)) * log(a);
        if (a <= f32(1.0e4)) {
            let z = f32(1.0) / a;
            let p = z * z;
            q += ((f32(6.789774945028216e-4) * p - f32(2.769887652139868e-3)) * p
                + f32(8.333316229807355e-2)) * z;
        }
        return q;
    }
    if (a >= f32(0.75) && a < f32(1.25)) {
        let x = a - f32(1.0);
        return x * ruda_polynomial_f32(x, array<f32, 8>(  // lgamma(1 + x) / x, |x| < 0.25
            1.369488127325832e-1f, -1.590086327657347e-1f, 1.692415923504637e-1f,
            -2.067882815621965e-1f, 2.705806208275915e-1f, -4.006931650563372e-1f,
            8.224670749082976e-1f, -5.772156501719101e-1f));
    }
    // a moved into [1.5, 2.5]: the product z of the factors taken off or put on
    var x = a;
    var z = f32(1.0);
    var sign = f32(1.0);
    if (a >= f32(1.5)) {
        // repeat 4
        if (x > f32(2.5)) { x = x - f32(1.0); z = z * x; }
        // end repeat
    } else if (a >= f32(1.25)) {
        z = a;
        x = a + f32(1.0);
        sign = f32(-1.0);
    } else {
        // repeat 2
        if (x < f32(1.5)) { z = z * x; x = x + f32(1.0); }
        // end repeat
        sign = f32(-1.0);
    }
    let t = x - f32(2.0);
    let b = array<f32, 8>(  // lgamma(2 + t) / t, |t| < 0.5 (Cephes)
        6.055172732649237e-4f, -1.311620815545743e-3f, 2.863437556468661e-3f,
        -7.366775108654962e-3f, 2.058355474821512e-2f, -6.735323259371034e-2f,
        3.224669577325661e-1f, 4.227843421859038e-1f);
    return t * ruda_polynomial_f32(t, b) + sign * ruda_log_f32(z);
}

fn ruda_polynomial_f32(x: f32, c: array<f32, 8>) -> f32 {
    // c[0] x^7 + c[1] x^6 + ... + c[7], by Horner's rule
    var p = c[0];
    p = p * x + c[1];
    p = p * x + c[2];
    p = p * x + c[3];
    p = p * x + c[4];
    p = p * x + c[5];
    p = p * x + c[6];
    return p * x + c[7];
}

// Integer operations: the forms of ruda's shared lowering that NVIDIA's Vulkan computed
// wrongly (floor division and modulo without % and without comparisons of booleans), and
// saturation without 64-bit integers. Unsigned saturation finds the carry (borrow) out of
// the top bit from the operands' and the result's top bits, with no comparison or select of
// 64-bit values, which gave NVIDIA's Vulkan wrong sums for 424 of 425 u64 pairs as
// select(s, max, s < a).

fn ruda_floor_div_i32(a: i32, b: i32) -> i32 {
    if (b == 0i) { return 0i; }
    if (b == -1i) { return -a; }
    let q = a / b;  // the floor below an inexact quotient of opposite signs; no % and no
    // comparison of booleans, which NVIDIA's Vulkan gave wrong answers for
    return select(q, q - 1i, q * b != a && (a ^ b) < 0i);
}

fn ruda_floor_div_i64(a: i64, b: i64) -> i64 {
    if (b == 0li) { return 0li; }
    if (b == -1li) { return -a; }
    let q = a / b;  // the floor below an inexact quotient of opposite signs; no % and no
    // comparison of booleans, which NVIDIA's Vulkan gave wrong answers for
    return select(q, q - 1li, q * b != a && (a ^ b) < 0li);
}

fn ruda_mod_i32(a: i32, b: i32) -> i32 {
    if (b == 0i || b == -1i) { return 0i; }
    let r = a - a / b * b;  // as floor division: no %
    return select(r, r + b, r != 0i && (r ^ b) < 0i);
}

fn ruda_mod_i64(a: i64, b: i64) -> i64 {
    if (b == 0li || b == -1li) { return 0li; }
    let r = a - a / b * b;  // as floor division: no %
    return select(r, r + b, r != 0li && (r ^ b) < 0li);
}

fn ruda_saturating_add_u32(a: u32, b: u32) -> u32 {
    let s = a + b;
    let carry = ((a & b) | ((a | b) & ~s)) >> 31u;
    return s | (0u - carry);
}

fn ruda_saturating_add_u64(a: u64, b: u64) -> u64 {
    let s = a + b;
    let carry = ((a & b) | ((a | b) & ~s)) >> 63u;
    return s | (0lu - carry);
}

fn ruda_saturating_sub_u32(a: u32, b: u32) -> u32 {
    let d = a - b;
    let borrow = ((~a & b) | (~(a ^ b) & d)) >> 31u;
    return d & (borrow - 1u);
}

fn ruda_saturating_sub_u64(a: u64, b: u64) -> u64 {
    let d = a - b;
    let borrow = ((~a & b) | (~(a ^ b) & d)) >> 63u;
    return d & (borrow - 1lu);
}

fn ruda_saturating_add_i32(a: i32, b: i32) -> i32 {
    let s = a + b;
    if (((a ^ s) & (b ^ s)) < 0i) { return select(2147483647i, -2147483647i - 1i, a < 0i); }
    return s;
}

fn ruda_saturating_add_i64(a: i64, b: i64) -> i64 {
    let s = a + b;
    if (((a ^ s) & (b ^ s)) < 0li) { return select(9223372036854775807li, -9223372036854775807li - 1li, a < 0li); }
    return s;
}

fn ruda_saturating_sub_i32(a: i32, b: i32) -> i32 {
    let s = a - b;
    if (((a ^ b) & (a ^ s)) < 0i) { return select(2147483647i, -2147483647i - 1i, a < 0i); }
    return s;
}

fn ruda_saturating_sub_i64(a: i64, b: i64) -> i64 {
    let s = a - b;
    if (((a ^ b) & (a ^ s)) < 0li) { return select(9223372036854775807li, -9223372036854775807li - 1li, a < 0li); }
    return s;
}

// ruda_round_f16(x): the f32 x rounded to the nearest f16 value, ties to even, by its bits.
// WGSL lets a conversion to f16 round either way, and NVIDIA's Vulkan compiler computes f16(y),
// and even unpack2x16float(pack2x16float(y)), as y where the next operation reads it in f32:
// the value left here is exact in f16, so no conversion after it can change it.

fn ruda_round_f16(x: f32) -> f32 {
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
}

// ruda_div_f32(a, b): a / b rounded to nearest even, the quotient float floor division and
// modulo take, by the long division of the significands: WGSL allows a division within 2.5
// ulp, and NVIDIA's is not correctly rounded (floor(1e10 / 3.0) came out one ulp high); its
// fma need not be fused either, so a residual cannot correct it. Where an operand is a zero,
// an infinity or a NaN, ruda_quotient_f32 answers; where the quotient is not a normal f32, the
// driver's division.

fn ruda_div_f32(a: f32, b: f32) -> f32 {
    let x = bitcast<u32>(a) & 0x7fffffffu;
    let y = bitcast<u32>(b) & 0x7fffffffu;
    if (x == 0u || y == 0u || max(x, y) >= 0x7f800000u) { return ruda_quotient_f32(a, b); }
    let q = a / b;
    let z = bitcast<u32>(q) & 0x7fffffffu;
    if (z < 0x01000000u || z >= 0x7f000000u) { return q; }
    let xs = ruda_unpack_f32(x);
    let ys = ruda_unpack_f32(y);
    var r = u32(xs.x);
    let d = u32(ys.x);
    var e = xs.y - ys.y + 127;  // the quotient's exponent field
    if (r < d) { r = r << 1u; e = e - 1; }  // r / d in [1, 2)
    // 25 bits of r / d: 24 of the significand, then the rounding bit; what r keeps is beyond
    var s = 0u;
    // repeat 25
    s = s << 1u; if (r >= d) { r = r - d; s = s | 1u; } r = r << 1u;
    // end repeat
    var m = s >> 1u;
    if ((s & 1u) == 1u && (r != 0u || (m & 1u) == 1u)) { m = m + 1u; }
    if (m == 0x1000000u) { m = m >> 1u; e = e + 1; }
    if (e <= 0 || e >= 255) { return q; }
    let sign = (bitcast<u32>(a) ^ bitcast<u32>(b)) & 0x80000000u;
    return bitcast<f32>(sign | (u32(e) << 23u) | (m & 0x7fffffu));
}

// ruda_add_f32(a, b), ruda_sub_f32(a, b): a + b and a - b with IEEE's answer where both are
// zeros, found by their bits (-0.0 only for -0.0 + -0.0 and -0.0 - 0.0), for those a compiler
// may see a constant zero in: one that ignores the sign of zeros folds x + 0.0 to x and
// 0.0 - x to -x, which are -0.0 for x = -0.0 and 0.0 (lavapipe does).

fn ruda_opaque_f32(x: f32) -> f32 {
    // x, through an operation whose result no compiler knows (ruda_apart is a zero it cannot
    // tell is one): a value whose rounding error is taken stays the rounded one, whatever
    // the compiler reassociates or fuses
    return bitcast<f32>(bitcast<u32>(x) ^ ruda_apart);
}

fn ruda_add_f32(a: f32, b: f32) -> f32 {
    let x = bitcast<u32>(a);
    let y = bitcast<u32>(b);
    return select(a + b, bitcast<f32>(x & y), ((x | y) & 0x7fffffffu) == 0u);
}

fn ruda_sub_f32(a: f32, b: f32) -> f32 {
    let x = bitcast<u32>(a);
    let y = bitcast<u32>(b);
    return select(a - b, bitcast<f32>(x & ~y), ((x | y) & 0x7fffffffu) == 0u);
}

// ruda_mul_f32(a, b): a * b with IEEE's answer where a factor is a zero, found by its bits (a
// zero of the factors' signs' product, or NaN where the other factor is an infinity or a NaN),
// for products a compiler may see a constant zero in, and for those that must be rounded on
// their own (the select stands between the product and an add a driver would fuse it into).

fn ruda_mul_f32(a: f32, b: f32) -> f32 {
    let x = bitcast<u32>(a);
    let y = bitcast<u32>(b);
    let zero = min(x & 0x7fffffffu, y & 0x7fffffffu) == 0u;
    let special = max(x & 0x7fffffffu, y & 0x7fffffffu) >= 0x7f800000u;
    let signed_zero = bitcast<f32>((x ^ y) & 0x80000000u);
    return select(a * b, select(signed_zero, bitcast<f32>(0x7fc00000u), special), zero);
}

// ruda_quotient_f32(a, b): a / b with IEEE's answer where an operand is a zero, an infinity
// or a NaN, found by their bits, for quotients a compiler may see a constant in (one that
// ignores the sign of zeros folds 0.0 / d to 0.0: lavapipe does) and of equal operands (x / x
// to 1.0).

fn ruda_quotient_f32(a: f32, b: f32) -> f32 {
    let x = bitcast<u32>(a) & 0x7fffffffu;
    let y = bitcast<u32>(b) & 0x7fffffffu;
    let sign = (bitcast<u32>(a) ^ bitcast<u32>(b)) & 0x80000000u;
    let nan = max(x, y) > 0x7f800000u || (x == y && (x == 0u || x == 0x7f800000u));
    let infinite = x == 0x7f800000u || y == 0u;
    let signed = bitcast<f32>(sign | select(0u, 0x7f800000u, infinite));
    let special = select(signed, bitcast<f32>(0x7fc00000u), nan);
    return select(a / b, special, nan || infinite || x == 0u || y == 0x7f800000u);
}

// A 64-bit value of another lane, as two words (subgroup operations take 32-bit values).

fn ruda_shuffle_u64(v: u64, lane: u32) -> u64 {
    let lo = subgroupShuffle(u32(v & 0xfffffffflu), lane);
    let hi = subgroupShuffle(u32(v >> 32u), lane);
    return u64(lo) | (u64(hi) << 32u);
}

fn ruda_shuffle_i64(v: i64, lane: u32) -> i64 {
    return bitcast<i64>(ruda_shuffle_u64(bitcast<u64>(v), lane));
}

// --- the cube's reducing barriers: WGSL has none ------------------------------------------
// The count of the cube's units whose p is true, through a workgroup counter (declared with
// the function): a barrier (every earlier read of the counter is done), unit 0 clears it, a
// barrier, each unit whose p is true adds one, a barrier, every unit reads it.

var<workgroup> ruda_units_counter: atomic<u32>;
fn ruda_units_count(p: bool, unit: u32) -> u32 {
    workgroupBarrier();
    if (unit == 0u) { atomicStore(&ruda_units_counter, 0u); }
    workgroupBarrier();
    if (p) { atomicAdd(&ruda_units_counter, 1u); }
    workgroupBarrier();
    return atomicLoad(&ruda_units_counter);
}

// --- loops lavapipe stops -----------------------------------------------------------------
// lavapipe stops a subgroup's loops, without an error, once they have turned 65 535 times in
// all (a turn of any of its lanes counts); from then on every loop ends after its first turn.
// Called where a kernel ends, a loop of two turns, whose count the compiler cannot know (it
// reads memory), then ends after one, and the kernel writes its id into the kernel-fault
// word, which the driver reports.

fn ruda_check_loops() {
    let turns = select(2u, 3u, atomicLoad(&ruda_turned[0]) == 0xffffffffu);
    var turned = 0u;
    loop {
        turned += 1u;
        if (turned >= turns) { break; }
    }
    if (turned < 2u) { atomicMax(&ruda_turned[0], RUDA_KERNEL_ID); }
}
