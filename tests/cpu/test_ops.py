"""Every operation and element type against references computed with Python ints and floats
(rounded to the element type), independently of the lockstep runtime."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from launch_modes import run

from ruda_core.ir import Elem, Op
from ruda_core.runtime import ComputeClient
from ruda_core.testing.conformance.test_ops_int import COMPARES, VALUE_OPS
from ruda_core.testing.irbuild import KernelBuilder, builtin, const
from ruda_core.testing.opkernels import arity

from .kernels import FILE

N = 320  # 5 cubes of 64
INTS = [Elem.I8, Elem.I16, Elem.I32, Elem.I64, Elem.U8, Elem.U16, Elem.U32, Elem.U64]
FLOATS = [Elem.F16, Elem.BF16, Elem.F32, Elem.F64]
#: Floats computed in f32 and rounded once per operation.
NARROW = (Elem.F16, Elem.BF16)


def wrap(v: int, elem: Elem) -> int:
    bits = elem.bits
    v &= (1 << bits) - 1
    return v - (1 << bits) if elem.is_signed and v >> (bits - 1) else v


def rnd(v: float, elem: Elem) -> float:
    """``v`` rounded to the float element (as a Python float)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(elem.numpy.type(v))


def sample(elem: Elem, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if elem is Elem.BOOL:
        return rng.integers(0, 2, N).astype(bool)
    if elem.is_int:
        info = np.iinfo(elem.numpy)
        edge = [info.min, info.max, 0, 1, info.max - 1, info.min + 1, 2, 3]
        if elem.is_signed:
            edge += [-1, -2, -3]
        body = rng.integers(info.min, info.max, N, dtype=elem.numpy, endpoint=True)
        body[: len(edge)] = edge
        small = rng.integers(-9 if elem.is_signed else 0, 10, N // 4)
        body[len(edge) : len(edge) + small.size] = small
        return rng.permutation(body)
    v = rng.standard_normal(N) * rng.choice([1e-3, 1.0, 10.0, 1e3], N)
    v[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.5]
    return rng.permutation(v.astype(elem.numpy))


def run_binary(
    cpu: ComputeClient, op: Op, elem: Elem, out_elem: Elem, a: np.ndarray, b: np.ndarray
) -> tuple:
    """out1[i] = op(a[i], b[i]); out2[i] = op(p, q) for scalar params (uniform values);
    out3[i] = op(a[i], b[0]) through a constant."""
    kb = KernelBuilder(f"{op.value}_{elem.value}", file=FILE)
    pa, pb = kb.array("a", elem), kb.array("b", elem)
    o1, o2, o3 = (kb.array(n, out_elem) for n in ("o1", "o2", "o3"))
    p, q = kb.scalar("p", elem), kb.scalar("q", elem)
    i = builtin("ABSOLUTE_POS")
    x, y = kb.load(pa, i), kb.load(pb, i)
    kb.store(o1, i, kb.let(op, out_elem, x, y))
    kb.store(o2, i, kb.let(op, out_elem, p, q))
    kb.store(o3, i, kb.let(op, out_elem, x, const(b[0].item(), elem)))
    outs = [np.zeros(N, out_elem.numpy) for _ in range(3)]
    return tuple(run(cpu, kb.build(), [a, b, *outs], [a[3], b[3]], N // 64, 64)[2:])


# --- integer arithmetic ---------------------------------------------------------------------


def int_ref(op: Op, x: int, y: int, elem: Elem) -> int | bool | None:
    """The IR's meaning, with None for unspecified results."""
    bits = elem.bits
    info = np.iinfo(elem.numpy)
    lo, hi = int(info.min), int(info.max)
    table = {
        Op.ADD: lambda: x + y,
        Op.SUB: lambda: x - y,
        Op.MUL: lambda: x * y,
        Op.FLOOR_DIV: lambda: None if y == 0 else x // y,
        Op.MOD: lambda: None if y == 0 else x % y,
        Op.MIN: lambda: min(x, y),
        Op.MAX: lambda: max(x, y),
        Op.BIT_AND: lambda: x & y,
        Op.BIT_OR: lambda: x | y,
        Op.BIT_XOR: lambda: x ^ y,
        Op.SHL: lambda: x << (y % bits),
        Op.SHR: lambda: x >> (y % bits),
        Op.MUL_HI: lambda: (x * y) >> bits,  # the high half of the double-width product
        Op.SATURATING_ADD: lambda: min(max(x + y, lo), hi),
        Op.SATURATING_SUB: lambda: min(max(x - y, lo), hi),
    }
    if op in table:
        r = table[op]()
        return None if r is None else wrap(r, elem)
    return {Op.EQ: x == y, Op.NE: x != y, Op.LT: x < y, Op.LE: x <= y, Op.GT: x > y, Op.GE: x >= y}[
        op
    ]


#: The binary operations of the conformance suite's integer table.
INT_BINARY = [op for op in VALUE_OPS if arity(op) == 2]


@pytest.mark.parametrize("elem", INTS, ids=str)
@pytest.mark.parametrize("op", INT_BINARY + COMPARES, ids=str)
def test_integer_binary(cpu: ComputeClient, op: Op, elem: Elem) -> None:
    a, b = sample(elem, 1), sample(elem, 2)
    out_elem = Elem.BOOL if op in COMPARES else elem
    o1, o2, o3 = run_binary(cpu, op, elem, out_elem, a, b)
    for k in range(N):
        for got, x, y in ((o1[k], a[k], b[k]), (o3[k], a[k], b[0])):
            want = int_ref(op, int(x), int(y), elem)
            if want is not None:
                assert got == want, (k, int(x), int(y), got, want)
    want2 = int_ref(op, int(a[3]), int(b[3]), elem)
    if want2 is not None:
        assert (o2 == want2).all()


@pytest.mark.parametrize("elem", INTS, ids=str)
def test_integer_unary_and_clamp(cpu: ComputeClient, elem: Elem) -> None:
    a, lo, hi = sample(elem, 3), sample(elem, 4), sample(elem, 5)
    kb = KernelBuilder("unary", file=FILE)
    pa, plo, phi = kb.array("a", elem), kb.array("lo", elem), kb.array("hi", elem)
    outs = {name: kb.array(name, elem) for name in ("neg", "abs", "bnot", "clamp")}
    i = builtin("ABSOLUTE_POS")
    x = kb.load(pa, i)
    kb.store(outs["neg"], i, kb.let(Op.NEG, elem, x))
    kb.store(outs["abs"], i, kb.let(Op.ABS, elem, x))
    kb.store(outs["bnot"], i, kb.let(Op.BIT_NOT, elem, x))
    kb.store(outs["clamp"], i, kb.let(Op.CLAMP, elem, x, kb.load(plo, i), kb.load(phi, i)))
    zeros = [np.zeros(N, elem.numpy) for _ in outs]
    got = run(cpu, kb.build(), [a, lo, hi, *zeros], count=N // 64, dim=64)[3:]
    arrays = dict(zip(outs, got, strict=True))
    for k in range(N):
        x, low, high = int(a[k]), int(lo[k]), int(hi[k])
        assert arrays["neg"][k] == wrap(-x, elem)
        assert arrays["abs"][k] == wrap(abs(x), elem)
        assert arrays["bnot"][k] == wrap(~x, elem)
        assert arrays["clamp"][k] == min(max(x, low), high)


# --- floats ---------------------------------------------------------------------------------


def same(got: float, want: float) -> bool:
    return (math.isnan(got) and math.isnan(want)) or (
        got == want and math.copysign(1, got) == math.copysign(1, want)
    )


def float_ref(op: Op, x: float, y: float, elem: Elem) -> float | bool | None:
    if op in COMPARES:
        return {
            Op.EQ: x == y,
            Op.NE: x != y,
            Op.LT: x < y,
            Op.LE: x <= y,
            Op.GT: x > y,
            Op.GE: x >= y,
        }[op]
    if op in (Op.MIN, Op.MAX):
        if math.isnan(x) or math.isnan(y):
            return y if math.isnan(x) else x
        if x == y == 0:
            return None  # the sign of a zero result is unspecified
        return min(x, y) if op is Op.MIN else max(x, y)
    try:
        exact = {
            Op.ADD: lambda: x + y,
            Op.SUB: lambda: x - y,
            Op.MUL: lambda: x * y,
            Op.DIV: lambda: x / y,
        }[op]()
    except ZeroDivisionError:
        if math.isnan(x) or x == 0:
            return math.nan
        sign = math.copysign(1, x) * math.copysign(1, y)
        return math.copysign(math.inf, sign)
    except OverflowError:
        return None
    return rnd(exact, elem)


@pytest.mark.parametrize("elem", FLOATS, ids=str)
@pytest.mark.parametrize("op", [Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.MIN, Op.MAX, *COMPARES], ids=str)
def test_float_binary_exact(cpu: ComputeClient, op: Op, elem: Elem) -> None:
    """+ - * / are correctly rounded in the element type (a double-rounded f64 reference is
    exact for f16 and f32), so they must match bit for bit."""
    a, b = sample(elem, 6), sample(elem, 7)
    out_elem = Elem.BOOL if op in COMPARES else elem
    o1, o2, o3 = run_binary(cpu, op, elem, out_elem, a, b)
    cases = [(o1[k], a[k], b[k]) for k in range(N)] + [(o3[k], a[k], b[0]) for k in range(N)]
    cases.append((o2[0], a[3], b[3]))
    for got, x, y in cases:
        want = float_ref(op, float(x), float(y), elem)
        if want is None:
            continue
        if op in COMPARES:
            assert bool(got) == want
        else:
            assert same(float(got), want), (float(x), float(y), float(got), want)


@pytest.mark.parametrize("elem", FLOATS, ids=str)
def test_float_floor_div_mod_pow(cpu: ComputeClient, elem: Elem) -> None:
    a = np.abs(sample(elem, 8)) + elem.numpy.type(0.5)
    b = np.abs(sample(elem, 9)) + elem.numpy.type(0.25)
    a[::3] *= -1
    b[::5] *= -1
    fd, _, _ = run_binary(cpu, Op.FLOOR_DIV, elem, elem, a, b)
    md, _, _ = run_binary(cpu, Op.MOD, elem, elem, a, b)
    pw, _, _ = run_binary(cpu, Op.POW, elem, elem, np.abs(a), b)
    for k in range(N):
        x, y = float(a[k]), float(b[k])
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        work = Elem.F32 if elem in NARROW else elem  # f16/bf16 compute in f32, round once
        q = rnd(math.floor(rnd(x / y, work)), work)
        assert same(float(fd[k]), rnd(q, elem)), (x, y)
        want_mod = rnd(rnd(x - rnd(q * y, work), work), elem)
        assert same(float(md[k]), want_mod), (x, y)
        want = rnd(abs(x) ** y, elem) if x != 0 and abs(y * math.log(abs(x))) < 30 else math.inf
        if math.isfinite(want):
            assert float(pw[k]) == pytest.approx(want, rel=4 * float(np.finfo(elem.numpy).eps))


UNARY_MATH = {
    Op.EXP: math.exp,
    Op.EXP2: lambda v: 2.0**v,
    Op.LOG: math.log,
    Op.LOG2: math.log2,
    Op.LOG1P: math.log1p,
    Op.SQRT: math.sqrt,
    Op.RSQRT: lambda v: 1 / math.sqrt(v),
    Op.RECIP: lambda v: 1 / v,
    Op.SIN: math.sin,
    Op.COS: math.cos,
    Op.TAN: math.tan,
    Op.TANH: math.tanh,
    Op.ERF: math.erf,
    Op.FLOOR: math.floor,
    Op.CEIL: math.ceil,
    Op.ROUND: round,
    Op.TRUNC: math.trunc,
}
EXACT_UNARY = {Op.SQRT, Op.RECIP, Op.FLOOR, Op.CEIL, Op.ROUND, Op.TRUNC}


@pytest.mark.parametrize("elem", FLOATS, ids=str)
def test_float_unary(cpu: ComputeClient, elem: Elem) -> None:
    rng = np.random.default_rng(10)
    a = (rng.uniform(0.01, 6.0, N) * rng.choice([-1, 1], N)).astype(elem.numpy)
    a[:8] = [0.5, 1.5, 2.5, -0.5, -2.5, 3.5, 0.0, -0.0]  # ROUND ties to even
    ops = [*UNARY_MATH, Op.NEG, Op.ABS, Op.ISNAN, Op.ISINF]
    kb = KernelBuilder("unary", file=FILE)
    pa = kb.array("a", elem)
    outs = {}
    for op in ops:
        out_elem = Elem.BOOL if op in (Op.ISNAN, Op.ISINF) else elem
        outs[op] = kb.array(op.value, out_elem)
    i = builtin("ABSOLUTE_POS")
    x = kb.load(pa, i)
    for op in ops:
        kb.store(outs[op], i, kb.let(op, outs[op].elem, x))
    zeros = [np.zeros(N, p.elem.numpy) for p in outs.values()]
    got = run(cpu, kb.build(), [a, *zeros], count=N // 64, dim=64)[1:]
    arrays = dict(zip(outs, got, strict=True))
    eps = float(np.finfo(elem.numpy).eps)
    for k in range(N):
        v = float(a[k])
        for op, fn in UNARY_MATH.items():
            got = float(arrays[op][k])
            if (
                (op in (Op.LOG, Op.LOG2, Op.SQRT, Op.RSQRT) and v <= 0)
                or (op in (Op.LOG1P,) and v <= -1)
                or (op is Op.RECIP and v == 0)
            ):
                continue
            want = rnd(fn(v), elem)
            if op in EXACT_UNARY:
                assert same(got, want) or (got == want == 0), (op, v, got, want)
            else:
                tol = (1 if elem in NARROW else 4) * eps * max(abs(want), 1e-30)
                assert abs(got - want) <= tol, (op, v, got, want)
        assert same(float(arrays[Op.NEG][k]), -v)
        assert same(float(arrays[Op.ABS][k]), abs(v))
        assert not arrays[Op.ISNAN][k] and not arrays[Op.ISINF][k]


def test_isnan_isinf_and_special_values(cpu: ComputeClient) -> None:
    a = np.array([np.nan, np.inf, -np.inf, 0.0, 1.0] * 64, np.float32)
    kb = KernelBuilder("special", file=FILE)
    pa, pn, pi = kb.array("a", Elem.F32), kb.array("n", Elem.BOOL), kb.array("i", Elem.BOOL)
    x = kb.load(pa, builtin("ABSOLUTE_POS"))
    kb.store(pn, builtin("ABSOLUTE_POS"), kb.let(Op.ISNAN, Elem.BOOL, x))
    kb.store(pi, builtin("ABSOLUTE_POS"), kb.let(Op.ISINF, Elem.BOOL, x))
    _, n, i = run(cpu, kb.build(), [a, np.zeros(320, bool), np.zeros(320, bool)], count=5, dim=64)
    assert (n == np.isnan(a)).all() and (i == np.isinf(a)).all()


@pytest.mark.parametrize("elem", FLOATS, ids=str)
def test_fma_and_clamp(cpu: ComputeClient, elem: Elem) -> None:
    a, b, d = sample(elem, 11), sample(elem, 12), sample(elem, 13)
    kb = KernelBuilder("fma", file=FILE)
    pa, pb, pd = kb.array("a", elem), kb.array("b", elem), kb.array("d", elem)
    pf, pc = kb.array("f", elem), kb.array("cl", elem)
    i = builtin("ABSOLUTE_POS")
    x, y, z = kb.load(pa, i), kb.load(pb, i), kb.load(pd, i)
    kb.store(pf, i, kb.let(Op.FMA, elem, x, y, z))
    kb.store(pc, i, kb.let(Op.CLAMP, elem, x, const(-1.0, elem), const(2.0, elem)))
    arrays = [a, b, d, np.zeros(N, elem.numpy), np.zeros(N, elem.numpy)]
    f, cl = run(cpu, kb.build(), arrays, count=5, dim=64)[3:]
    eps = float(np.finfo(elem.numpy).eps)
    for k in range(N):
        x_, y_, z_ = float(a[k]), float(b[k]), float(d[k])
        if all(math.isfinite(v) for v in (x_, y_, z_)):
            exact = Fraction(x_) * Fraction(y_) + Fraction(z_)
            want = rnd(float(exact), elem) if abs(exact) < 1e300 else math.nan
            if math.isfinite(want):
                assert abs(float(f[k]) - want) <= eps * abs(want) + 1e-300, (x_, y_, z_)
        want_c = min(max(x_, -1.0), 2.0) if not math.isnan(x_) else -1.0
        assert same(float(cl[k]), want_c) or float(cl[k]) == want_c


def test_erf_accuracy() -> None:
    from ruda_cpu.lockstep import erf

    x = np.concatenate([np.linspace(-7, 7, 20001), [0.0, -0.0, 1e-300, np.inf, -np.inf]])
    with np.errstate(all="ignore"):
        got = erf(x)
        got32 = erf(x.astype(np.float32))
    want = np.array([math.erf(v) for v in x])
    assert (np.abs(got - want) <= 4 * np.spacing(np.abs(want))).all()
    want32 = np.array([math.erf(float(v)) for v in x.astype(np.float32)], np.float32)
    assert (np.abs(got32 - want32) <= np.spacing(np.abs(want32))).all()
    assert np.isnan(erf(np.array([np.nan]))).all()
    assert isinstance(erf(np.float16(0.5)), np.float16)


# --- logic, select, cast --------------------------------------------------------------------


def test_logic_and_select(cpu: ComputeClient) -> None:
    a, b = sample(Elem.BOOL, 14), sample(Elem.BOOL, 15)
    kb = KernelBuilder("logic", file=FILE)
    pa, pb = kb.array("a", Elem.BOOL), kb.array("b", Elem.BOOL)
    o_and, o_or, o_not = (kb.array(n, Elem.BOOL) for n in ("and_", "or_", "not_"))
    o_sel = kb.array("sel", Elem.I32)
    i = builtin("ABSOLUTE_POS")
    x, y = kb.load(pa, i), kb.load(pb, i)
    kb.store(o_and, i, kb.let(Op.AND, Elem.BOOL, x, y))
    kb.store(o_or, i, kb.let(Op.OR, Elem.BOOL, x, y))
    kb.store(o_not, i, kb.let(Op.NOT, Elem.BOOL, x))
    kb.store(o_sel, i, kb.let(Op.SELECT, Elem.I32, x, const(7, Elem.I32), const(-3, Elem.I32)))
    zeros = [np.zeros(N, bool) for _ in range(3)] + [np.zeros(N, np.int32)]
    outs = run(cpu, kb.build(), [a, b, *zeros], count=5, dim=64)[2:]
    for k in range(N):
        assert outs[0][k] == (a[k] and b[k]) and outs[1][k] == (a[k] or b[k])
        assert outs[2][k] == (not a[k]) and outs[3][k] == (7 if a[k] else -3)


ALL = [Elem.BOOL, *INTS, *FLOATS]


@pytest.mark.parametrize("src", ALL, ids=str)
def test_cast_to_every_type(cpu: ComputeClient, src: Elem) -> None:
    a = sample(src, 16)
    if src.is_float:
        a[:6] = [0.0, -0.0, 2.75, -2.75, 100.5, 1.0]  # no NaN: unspecified for int targets
    kb = KernelBuilder("cast", file=FILE)
    pa = kb.array("a", src)
    outs = [kb.array(f"o_{e.value}", e) for e in ALL]
    x = kb.load(pa, builtin("ABSOLUTE_POS"))
    for p in outs:
        kb.store(p, builtin("ABSOLUTE_POS"), kb.let(Op.CAST, p.elem, x))
    zeros = [np.zeros(N, p.elem.numpy) for p in outs]
    arrays = run(cpu, kb.build(), [a, *zeros], count=5, dim=64)[1:]
    for p, got in zip(outs, arrays, strict=True):
        dst = p.elem
        for k in range(N):
            v = a[k].item()
            if dst is Elem.BOOL:
                want: object = v != 0
            elif src is Elem.BOOL:
                want = int(v)
            elif dst.is_float:
                want = rnd(float(v), dst) if src.is_float else rnd(float(Fraction(v)), dst)
            elif src.is_float:
                if not math.isfinite(v) or not np.iinfo(dst.numpy).min <= math.trunc(v) <= (
                    np.iinfo(dst.numpy).max
                ):
                    continue  # unspecified
                want = math.trunc(v)
            else:
                want = wrap(v, dst)
            g = got[k].item()
            assert same(float(g), float(want)) if dst.is_float else g == want, (src, dst, v, g)


def test_cast_nan_to_int_does_not_warn(cpu: ComputeClient) -> None:
    a = np.array([np.nan, np.inf, -np.inf, 1e30] * 16, np.float32)
    kb = KernelBuilder("nan_cast", file=FILE)
    pa, po = kb.array("a", Elem.F32), kb.array("o", Elem.I32)
    kb.store(
        po, builtin("ABSOLUTE_POS"), kb.let(Op.CAST, Elem.I32, kb.load(pa, builtin("ABSOLUTE_POS")))
    )
    run(cpu, kb.build(), [a, np.zeros(64, np.int32)], dim=64)  # filterwarnings=error


def test_integer_division_by_zero_does_not_warn(cpu: ComputeClient) -> None:
    a = np.arange(64, dtype=np.int32) - 32
    kb = KernelBuilder("div0", file=FILE)
    pa, po = kb.array("a", Elem.I32), kb.array("o", Elem.I32)
    x = kb.load(pa, builtin("ABSOLUTE_POS"))
    q = kb.let(Op.FLOOR_DIV, Elem.I32, x, const(0, Elem.I32))
    kb.store(po, builtin("ABSOLUTE_POS"), kb.let(Op.MOD, Elem.I32, q, const(0, Elem.I32)))
    run(cpu, kb.build(), [a, np.zeros(64, np.int32)], dim=64)


def test_rank_shape_stride_metadata(cpu: ComputeClient) -> None:
    kb = KernelBuilder("meta", file=FILE)
    t = kb.tensor("t", Elem.F32, 2)
    o = kb.array("o", Elem.U32)
    vals = [
        kb.let(op, Elem.U32, t, const(d, Elem.U32)) for op in (Op.SHAPE, Op.STRIDE) for d in (0, 1)
    ]
    vals += [kb.let(Op.RANK, Elem.U32, t), kb.let(Op.LEN, Elem.U32, t)]
    for k, v in enumerate(vals):
        kb.store(o, const(k, Elem.U32), v)
    _, out = run(cpu, kb.build(), [np.zeros((3, 4), np.float32), np.zeros(6, np.uint32)])
    assert out.tolist() == [3, 4, 4, 1, 2, 12]
