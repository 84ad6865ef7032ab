"""Representative kernels for the golden and compile-only tests, built by hand as IR."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ruda_core.ir import Elem, KernelDefinition, Op
from ruda_core.ir.bounds import lower_bounds
from ruda_core.runtime import ExecutionMode
from ruda_core.testing.irbuild import KernelBuilder, builtin, const

E = Elem
#: The file the hand-written kernels claim to come from: golden files and messages show it.
FILE = "/src/kernels.py"


def axpy() -> KernelDefinition:
    """out[i] = alpha * x[i] + y[i], guarded by i < len; a checked (bounds-lowered) kernel."""
    k = KernelBuilder("axpy", file=FILE, line=10)
    x = k.array("x", E.F32, read_only=True)
    y = k.array("y", E.F32, read_only=True)
    out = k.array("out", E.F32)
    alpha = k.scalar("alpha", E.F32)
    k.line = 11
    i = k.let(Op.ASSIGN, E.U32, builtin("ABSOLUTE_POS"), name="i")
    n = k.let(Op.LEN, E.U32, out, name="n")
    inside = k.let(Op.LT, E.BOOL, i, n)
    with k.if_(inside):
        k.line = 12
        xi = k.let(Op.INDEX, E.F32, x, i)
        yi = k.let(Op.INDEX, E.F32, y, i)
        r = k.let(Op.FMA, E.F32, alpha, xi, yi, name="r")
        k.do(Op.INDEX_ASSIGN, None, out, i, r)
    return lower_bounds(k.build(), ExecutionMode.CHECKED)


def block_sum() -> KernelDefinition:
    """A shared-memory tree reduction with a while loop, as in DESIGN.md, in cubes of 256 units
    that it states (``launch_bounds(256)``)."""
    k = KernelBuilder("block_sum", file=FILE, line=20)
    x = k.array("x", E.F32, read_only=True)
    out = k.array("out", E.F32)
    smem = k.shared("smem", E.F32, 256)
    k.line = 21
    i = k.let(Op.ASSIGN, E.U32, builtin("ABSOLUTE_POS"), name="i")
    unit = builtin("UNIT_POS")
    v = k.local("v", E.F32)
    inside = k.let(Op.LT, E.BOOL, i, k.let(Op.LEN, E.U32, x))
    with k.if_(inside):
        k.do(Op.INDEX, v, x, i)
    with k.else_():
        k.do(Op.ASSIGN, v, const(0.0, E.F32))
    k.do(Op.INDEX_ASSIGN, None, smem, unit, v)
    k.line = 22
    k.do(Op.SYNC_UNITS, None)
    s = k.let(Op.ASSIGN, E.U32, const(128, E.U32), name="s")
    k.line = 23
    with k.loop():
        done = k.let(Op.EQ, E.BOOL, s, const(0, E.U32))
        with k.if_(done):
            k.break_()
        active = k.let(Op.LT, E.BOOL, unit, s)
        with k.if_(active):
            k.line = 24
            other = k.let(Op.INDEX, E.F32, smem, k.let(Op.ADD, E.U32, unit, s))
            mine = k.let(Op.INDEX, E.F32, smem, unit)
            k.do(Op.INDEX_ASSIGN, None, smem, unit, k.let(Op.ADD, E.F32, mine, other))
        k.line = 25
        k.do(Op.SYNC_UNITS, None)
        k.do(Op.FLOOR_DIV, s, s, const(2, E.U32))
    k.line = 26
    first = k.let(Op.EQ, E.BOOL, unit, const(0, E.U32))
    with k.if_(first):
        k.do(
            Op.INDEX_ASSIGN,
            None,
            out,
            builtin("RUDA_POS"),
            k.let(Op.INDEX, E.F32, smem, const(0, E.U32)),
        )
    return replace(k.build(), max_units=256)


def integer_ops() -> KernelDefinition:
    """Python integer semantics: floor division, modulo, shifts, wrapping, casts, range loops."""
    k = KernelBuilder("integer_ops", file=FILE, line=30)
    a = k.array("a", E.I32, read_only=True)
    out = k.array("out", E.I32)
    small = k.array("small", E.U8)
    i = k.let(Op.ASSIGN, E.U32, builtin("ABSOLUTE_POS_X"), name="i")
    k.line = 31
    x = k.let(Op.INDEX, E.I32, a, i, name="x")
    q = k.let(Op.FLOOR_DIV, E.I32, x, const(-3, E.I32), name="q")
    r = k.let(Op.MOD, E.I32, x, q, name="r")
    sh = k.let(Op.SHL, E.I32, q, r)
    k.line = 32
    acc = k.let(Op.MUL, E.I32, k.let(Op.ADD, E.I32, sh, const(-2147483648, E.I32)), x, name="acc")
    j = k.local("j", E.U32)
    with k.range_(j, const(4294967290, E.U32), const(4294967295, E.U32), 2):
        k.do(Op.ADD, acc, acc, k.let(Op.CAST, E.I32, j))
    back = k.local("back", E.I8)
    with k.range_(back, const(100, E.I8), const(-128, E.I8), -7):
        k.do(Op.SUB, acc, acc, k.let(Op.CAST, E.I32, back))
    k.line = 33
    k.do(Op.INDEX_ASSIGN, None, out, i, k.let(Op.SHR, E.I32, acc, k.let(Op.NEG, E.I32, r)))
    byte = k.let(Op.INDEX, E.U8, small, i)
    prod = k.let(Op.MUL, E.U8, byte, byte)
    k.do(Op.INDEX_ASSIGN, None, small, i, k.let(Op.MOD, E.U8, prod, k.let(Op.BIT_NOT, E.U8, byte)))
    return k.build()


def atomics() -> KernelDefinition:
    """Native and compare-and-swap atomics on global and shared arrays of several types."""
    k = KernelBuilder("atomics", file=FILE, line=40)
    hist = k.array("hist", E.U32)
    fsum = k.array("fsum", E.F32)
    dmax = k.array("dmax", E.F64)
    bytes_ = k.array("bytes", E.U8)
    wide = k.array("wide", E.I64)
    tile = k.shared("tile", E.I32, 64)
    unit = builtin("UNIT_POS")
    slot = k.let(Op.MOD, E.U32, unit, const(4, E.U32))
    k.do(Op.ATOMIC_ADD, None, hist, slot, const(1, E.U32))
    old = k.let(Op.ATOMIC_ADD, E.F32, fsum, slot, const(0.5, E.F32), name="old")
    k.do(Op.ATOMIC_MAX, None, dmax, slot, k.let(Op.CAST, E.F64, old))
    k.do(Op.ATOMIC_ADD, None, bytes_, slot, const(3, E.U8))
    seen = k.let(
        Op.ATOMIC_CAS, E.I64, wide, const(0, E.U32), const(0, E.I64), const(-1, E.I64), name="seen"
    )
    k.do(Op.ATOMIC_MIN, None, wide, const(1, E.U32), seen)
    k.do(Op.ATOMIC_XOR, None, tile, slot, const(5, E.I32))
    k.do(
        Op.ATOMIC_STORE,
        None,
        fsum,
        const(3, E.U32),
        k.let(Op.ATOMIC_LOAD, E.F32, fsum, const(2, E.U32)),
    )
    return k.build()


def half_and_bool() -> KernelDefinition:
    """f16 arithmetic and math, conversions to and from f16, bool buffers and scalars."""
    k = KernelBuilder("half_and_bool", file=FILE, line=50)
    h = k.array("h", E.F16)
    flags = k.array("flags", E.BOOL)
    scale = k.scalar("scale", E.F16)
    enable = k.scalar("enable", E.BOOL)
    cache = k.shared("cache", E.F16, 32)
    i = k.let(Op.ASSIGN, E.U32, builtin("UNIT_POS"), name="i")
    v = k.let(Op.INDEX, E.F16, h, i, name="v")
    k.do(Op.INDEX_ASSIGN, None, cache, i, v)
    w = k.let(Op.MUL, E.F16, k.let(Op.SQRT, E.F16, v), scale, name="w")
    w2 = k.let(Op.ADD, E.F16, w, const(1.5, E.F16))
    big = k.let(Op.GT, E.BOOL, w2, k.let(Op.INDEX, E.F16, cache, const(0, E.U32)))
    both = k.let(Op.AND, E.BOOL, big, enable)
    k.do(Op.INDEX_ASSIGN, None, flags, i, both)
    as_int = k.let(Op.CAST, E.I32, w2)
    back = k.let(Op.CAST, E.F16, k.let(Op.ADD, E.I32, as_int, const(1, E.I32)))
    k.do(
        Op.INDEX_ASSIGN, None, h, i, k.let(Op.SELECT, E.F16, both, back, const(float("inf"), E.F16))
    )
    return k.build()


def plane_ops() -> KernelDefinition:
    """Plane reductions, scans, broadcast and shuffle."""
    k = KernelBuilder("plane_ops", file=FILE, line=60)
    x = k.array("x", E.F32)
    n = k.array("n", E.I32)
    i = k.let(Op.ASSIGN, E.U32, builtin("ABSOLUTE_POS"), name="i")
    v = k.let(Op.INDEX, E.F32, x, i, name="v")
    s = k.let(Op.PLANE_SUM, E.F32, v, name="s")
    p = k.let(Op.PLANE_PROD, E.F32, v, name="p")
    m = k.let(Op.PLANE_MAX, E.F32, k.let(Op.ADD, E.F32, s, p))
    first = k.let(Op.PLANE_BROADCAST, E.F32, m, const(0, E.U32))
    k.do(Op.INDEX_ASSIGN, None, x, i, first)
    count = k.let(Op.INDEX, E.I32, n, i, name="count")
    total = k.let(Op.PLANE_INCLUSIVE_SUM, E.I32, count)
    before = k.let(Op.PLANE_EXCLUSIVE_SUM, E.I32, count)
    lowest = k.let(Op.PLANE_MIN, E.I32, total)
    mirrored = k.let(
        Op.PLANE_SHUFFLE,
        E.I32,
        before,
        k.let(Op.SUB, E.U32, const(31, E.U32), builtin("UNIT_POS_PLANE")),
    )
    any_neg = k.let(Op.PLANE_ANY, E.BOOL, k.let(Op.LT, E.BOOL, lowest, mirrored))
    with k.if_(any_neg):
        k.do(Op.INDEX_ASSIGN, None, n, i, k.let(Op.CAST, E.I32, builtin("PLANE_DIM")))
    return k.build()


def tensor_validate() -> KernelDefinition:
    """Tensor metadata, a local array and a Validate-mode bounds report."""
    k = KernelBuilder("tensor_validate", file=FILE, line=70)
    t = k.tensor("t", E.F64, 2, read_only=True)
    out = k.array("out", E.F64)
    scratch = k.local_array("scratch", E.F64, 4)
    row = k.let(Op.ASSIGN, E.U32, builtin("UNIT_POS_Y"), name="row")
    col = k.let(Op.ASSIGN, E.U32, builtin("UNIT_POS_X"), name="col")
    s0 = k.let(Op.STRIDE, E.U32, t, const(0, E.U32))
    s1 = k.let(Op.STRIDE, E.U32, t, const(1, E.U32))
    at = k.let(Op.ADD, E.U32, k.let(Op.MUL, E.U32, row, s0), k.let(Op.MUL, E.U32, col, s1))
    k.do(Op.INDEX_ASSIGN, None, scratch, const(0, E.U32), k.let(Op.INDEX, E.F64, t, at))
    rank = k.let(Op.RANK, E.U32, t)
    extent = k.let(Op.SHAPE, E.U32, t, const(1, E.U32))
    value = k.let(Op.INDEX, E.F64, scratch, const(0, E.U32))
    k.do(Op.INDEX_ASSIGN, None, out, k.let(Op.MUL, E.U32, rank, extent), value)
    return lower_bounds(k.build(), ExecutionMode.VALIDATE)


def reserved_names() -> KernelDefinition:
    """User names that collide with C, C++, OpenCL and CUDA reserved words."""
    k = KernelBuilder("kernel", file=None)
    arr = k.array("int", E.I32)
    new = k.scalar("new", E.I32)
    mn = k.local("min", E.I32)
    k.do(Op.INDEX, mn, arr, const(0, E.U32))
    glob = k.let(Op.ADD, E.I32, mn, new, name="global")
    cls = k.let(Op.ADD, E.I32, glob, const(1, E.I32), name="int_len")
    k.do(
        Op.INDEX_ASSIGN,
        None,
        arr,
        builtin("UNIT_POS"),
        k.let(Op.ADD, E.I32, cls, const(2, E.I32), name="UNIT_POS"),
    )
    return k.build()


#: name -> builder of every representative kernel.
def plane_lanes() -> KernelDefinition:
    """Ballot and election, the relative shuffles (of f32, u8 and bool) and the plane barrier."""
    k = KernelBuilder("plane_lanes", file=FILE, line=80)
    x = k.array("x", E.F32)
    votes = k.array("votes", E.U32)
    bytes_ = k.array("bytes", E.U8)
    i = k.let(Op.ASSIGN, E.U32, builtin("ABSOLUTE_POS"), name="i")
    lane = builtin("UNIT_POS_PLANE")
    v = k.let(Op.INDEX, E.F32, x, i, name="v")
    positive = k.let(Op.GT, E.BOOL, v, const(0.0, E.F32), name="positive")
    ballot = k.let(Op.PLANE_BALLOT, E.U32, positive, name="ballot")
    leader = k.let(Op.PLANE_ELECT, E.BOOL, name="leader")
    k.do(Op.INDEX_ASSIGN, None, votes, i, k.let(Op.SELECT, E.U32, leader, ballot, const(0, E.U32)))
    up = k.let(Op.PLANE_SHUFFLE_UP, E.F32, v, const(1, E.U32), name="up")
    b = k.let(Op.INDEX, E.U8, bytes_, i, name="b")
    down = k.let(Op.PLANE_SHUFFLE_DOWN, E.U8, b, const(2, E.U32), name="down")
    k.do(Op.INDEX_ASSIGN, None, bytes_, i, down)
    flip = k.let(Op.PLANE_SHUFFLE_XOR, E.BOOL, positive, lane, name="flip")
    k.do(Op.SYNC_PLANE, None)
    k.do(Op.INDEX_ASSIGN, None, x, i, k.let(Op.SELECT, E.F32, flip, up, v))
    return k.build()


def whole_cube_counts() -> KernelDefinition:
    """Bit counts of u32 and u64 (native where the target has them) and a ballot, in a kernel
    stating cubes of exactly 64 units (whole warps: CUDA's warp mask is a constant)."""
    k = KernelBuilder("whole_cube_counts", file=FILE, line=85)
    words = k.array("words", E.U32)
    wide = k.array("wide", E.U64, read_only=True)
    i = k.let(Op.ASSIGN, E.U32, builtin("ABSOLUTE_POS"), name="i")
    w = k.let(Op.INDEX, E.U32, words, i, name="w")
    ones = k.let(Op.POPCOUNT, E.U32, w, name="ones")
    wide_ones = k.let(Op.POPCOUNT, E.U32, k.let(Op.INDEX, E.U64, wide, i), name="wide_ones")
    lead = k.let(Op.LEADING_ZEROS, E.U32, w, name="lead")
    odd = k.let(Op.NE, E.BOOL, k.let(Op.BIT_AND, E.U32, ones, const(1, E.U32)), const(0, E.U32))
    votes = k.let(Op.PLANE_BALLOT, E.U32, odd, name="votes")
    total = k.let(Op.ADD, E.U32, k.let(Op.ADD, E.U32, votes, lead), wide_ones)
    k.do(Op.INDEX_ASSIGN, None, words, i, total)
    return replace(k.build(), max_units=64, exact_units=True)


def barriers_and_counters() -> KernelDefinition:
    """Reducing barriers, fences and wrapping atomic counters on global and shared memory."""
    k = KernelBuilder("barriers_and_counters", file=FILE, line=90)
    flags = k.array("flags", E.U32)
    tickets = k.array("tickets", E.U32)
    slots = k.shared("slots", E.U32, 4)
    i = k.let(Op.ASSIGN, E.U32, builtin("ABSOLUTE_POS"), name="i")
    on = k.let(Op.NE, E.BOOL, k.let(Op.INDEX, E.U32, flags, i), const(0, E.U32), name="on")
    count = k.let(Op.SYNC_UNITS_COUNT, E.U32, on, name="count")
    every = k.let(Op.SYNC_UNITS_AND, E.BOOL, on, name="every")
    some = k.let(Op.SYNC_UNITS_OR, E.BOOL, on, name="some")
    k.do(Op.FENCE_UNITS, None)
    ticket = k.let(Op.ATOMIC_INC_WRAP, E.U32, tickets, const(0, E.U32), count, name="ticket")
    k.do(Op.FENCE_DEVICE, None)
    slot = k.let(Op.MOD, E.U32, builtin("UNIT_POS"), const(4, E.U32))
    k.do(Op.ATOMIC_DEC_WRAP, None, slots, slot, const(3, E.U32))
    either = k.let(Op.SELECT, E.U32, some, count, const(0, E.U32))
    k.do(Op.INDEX_ASSIGN, None, flags, i, k.let(Op.SELECT, E.U32, every, ticket, either))
    return k.build()


def dynamic_shared() -> KernelDefinition:
    """Two shared arrays sized at launch (of f64 and f16) and a static one, bounds-checked."""
    k = KernelBuilder("dynamic_shared", file=FILE, line=280)
    out = k.array("out", E.F64)
    n = k.scalar("n", E.U32)
    m = k.scalar("m", E.U32)
    wide = k.shared("wide", E.F64, n)
    half = k.shared("half", E.F16, m)
    fixed = k.shared("fixed", E.U32, 4)
    k.line = 281
    unit = builtin("UNIT_POS")
    k.do(Op.INDEX_ASSIGN, None, wide, unit, k.let(Op.CAST, E.F64, unit))
    k.do(Op.INDEX_ASSIGN, None, half, unit, k.let(Op.CAST, E.F16, unit))
    k.do(Op.INDEX_ASSIGN, None, fixed, const(0, E.U32), unit)
    k.do(Op.SYNC_UNITS, None)
    k.line = 282
    total = k.let(
        Op.ADD,
        E.F64,
        k.let(Op.INDEX, E.F64, wide, unit),
        k.let(Op.CAST, E.F64, k.let(Op.INDEX, E.F16, half, unit)),
    )
    k.do(Op.INDEX_ASSIGN, None, out, unit, total)
    return lower_bounds(k.build(), ExecutionMode.CHECKED)


REDUCE = [Op.PLANE_SUM, Op.PLANE_PROD, Op.PLANE_MIN, Op.PLANE_MAX]
SCAN = [Op.PLANE_INCLUSIVE_SUM, Op.PLANE_EXCLUSIVE_SUM]
RELATIVE = [Op.PLANE_SHUFFLE_UP, Op.PLANE_SHUFFLE_DOWN, Op.PLANE_SHUFFLE_XOR]


def partial_plane_kernel(elem: Elem) -> KernelDefinition:
    """One cube: ``out[k*n + u]`` = plane op k of ``x[u]`` (the reductions, the scans, a
    broadcast of lane 2, a shuffle from and the relative shuffles by ``d[u]``); ``lanes[k*n + u]``
    a ballot, the election and the plane's lane count (``plane_sum(1)``)."""
    k = KernelBuilder(f"partial_plane_{elem}", file=FILE, line=1)
    x = k.array("x", elem, read_only=True)
    d = k.array("d", E.U32, read_only=True)
    out = k.array("out", elem)
    lanes = k.array("lanes", E.U32)
    u = k.let(Op.ASSIGN, E.U32, builtin("UNIT_POS"), name="u")
    n = k.let(Op.LEN, E.U32, x, name="n")
    v, by = k.load(x, u), k.load(d, u)
    results = [k.let(op, elem, v) for op in [*REDUCE, *SCAN]]
    results.append(k.let(Op.PLANE_BROADCAST, elem, v, const(2, E.U32)))
    results += [k.let(op, elem, v, by) for op in [Op.PLANE_SHUFFLE, *RELATIVE]]
    third = k.let(Op.EQ, E.BOOL, k.let(Op.MOD, E.U32, u, const(3, E.U32)), const(0, E.U32))
    counts = [
        k.let(Op.PLANE_BALLOT, E.U32, third),
        k.let(Op.CAST, E.U32, k.let(Op.PLANE_ELECT, E.BOOL)),
        k.let(Op.PLANE_SUM, E.U32, const(1, E.U32)),
    ]
    for array, values in ((out, results), (lanes, counts)):
        for slot, value in enumerate(values):
            at = k.let(Op.ADD, E.U32, k.let(Op.MUL, E.U32, const(slot, E.U32), n), u)
            k.store(array, at, value)
    return k.build()


KERNELS: dict[str, Callable[[], KernelDefinition]] = {
    f.__name__: f
    for f in (
        axpy,
        block_sum,
        integer_ops,
        atomics,
        half_and_bool,
        plane_ops,
        plane_lanes,
        whole_cube_counts,
        barriers_and_counters,
        tensor_validate,
        reserved_names,
        dynamic_shared,
    )
}
