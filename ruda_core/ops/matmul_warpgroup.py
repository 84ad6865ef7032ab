# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""The warpgroup matrix-multiply kernel (:mod:`ruda_core.lang.wgmma`, Hopper's
``wgmma.mma_async``): ``out (m x n, f32) = a (m x k) @ b (k x n)``, all three row-major and
dense, ``a`` and ``b`` of ``bf16`` or ``f16``.

:func:`matmul_warpgroup` computes one ``BM x BN`` block of ``out`` per cube of ``WG``
warpgroups (``BM = 64 * WG``): warpgroup ``w`` holds rows ``64w .. 64w + 63`` of the block as
one ``64 x BN`` accumulator for the whole ``k`` loop. ``k`` is walked in stages 64 deep (one
128-byte swizzled row of ``a`` per block row): ``STAGES`` shared slots, each holding a stage of
``a`` (``BM`` rows of 64, K-major) and of ``b`` (64 rows of ``BN``, N-major in blocks of 64
columns), both in the swizzled layout of :mod:`ruda_core.lang.wgmma`, filled by asynchronous
16-byte copies to their swizzled lines (:mod:`ruda_core.lang.pipeline`).

Per stage ``st``: wait for this unit's copies of stage ``st`` and fence, a barrier, then each
warpgroup issues the four products of depth 16 of the stage as one group and waits until only
that group is pending (``wgmma.wait(1)``: the stage before is multiplied), and every unit
queues its copies of stage ``st + STAGES - 2`` into the slot of stage ``st - 2``, which every
warpgroup finished multiplying before the barrier. So ``STAGES - 2`` stages are in flight while
one is multiplied and the next group is issued. Cubes take their blocks column by column within
groups of ``GROUP`` block rows (as :func:`.matmul_kernels.matmul_pipelined`'s). Lines past the
matrices' edges are stored as zeros; with ``INTERIOR`` (``m``, ``n``, ``k`` multiples of
``BM``, ``BN``, 64) nothing is checked; without 16-byte lines (``VA``/``VB`` of 1: rows that
do not start on a line) the elements are copied one by one at once. The epilogue stores each
accumulator with its rows and columns inside ``out``. The kernel states its cube of ``WG``
warpgroups (``launch_bounds``).

:func:`matmul_warpgroup_tma` computes the same blocks with the same products, its stages filled
by tensor copies (``mbarrier.tensor_copy``) instead: unit 0 copies a stage as one box of ``a``
(``BM x 64``) and ``BN / 64`` boxes of ``b`` (``64 x 64``), completing on the stage's slot's
barrier, which every unit waits on; the copies put zeros past the matrices' edges, so nothing
is checked. Its rows must be whole 16-byte lines (``k`` and ``n`` multiples of 8).

Launching, shapes and the choice between kernels are :mod:`.matmul`'s; nothing here checks
arguments.
"""

from __future__ import annotations

from ..lang import (
    UNIT_POS,
    Array,
    Comptime,
    ElemVar,
    Line,
    SharedMemory,
    bf16,
    f16,
    f32,
    func,
    kernel,
    launch_bounds,
    mbarrier,
    pipeline,
    sync_units,
    u32,
    unroll,
    wgmma,
)
from .matmul_kernels import grouped_block

__all__ = ["BK", "Half", "matmul_warpgroup", "matmul_warpgroup_tma"]

#: The element of ``a`` and ``b``.
Half = ElemVar("Half", [bf16, f16])
#: The depth of a stage: one 128-byte row of a 16-bit type.
BK = 64
#: Elements of one swizzle block of 64 rows of 64 (a warpgroup's rows of a stage of ``a``, or 64
#: columns of a stage of ``b``).
_BLOCK = 64 * 64


@func
def _stage_a(
    a, sa, at: u32, row0: u32, t: u32, m: u32, k: u32,
    BM: Comptime[int], V: Comptime[int], UNITS: Comptime[int], INTERIOR: Comptime[bool],
):  # fmt: skip
    """This unit's 16-byte lines of the stage of ``a`` at ``(row0, t)`` into the swizzled slot
    of ``sa`` from element ``at``: logical line ``g`` is row ``g // 8``, columns
    ``t + 8 (g % 8) ..``."""
    for j in unroll(range(BM * 8 // UNITS)):
        g = UNIT_POS + u32(j * UNITS)
        r = row0 + g // u32(8)
        c = t + (g % u32(8)) * u32(8)
        to = wgmma.swizzle_line(at // u32(8) + g)
        _line(a, sa, to, r, c, m, k, V, INTERIOR)


@func
def _stage_b(
    b, sb, at: u32, t: u32, col0: u32, k: u32, n: u32,
    BN: Comptime[int], V: Comptime[int], UNITS: Comptime[int], INTERIOR: Comptime[bool],
):  # fmt: skip
    """This unit's 16-byte lines of the stage of ``b`` at ``(t, col0)`` into the swizzled slot
    of ``sb`` from element ``at``: logical line ``g`` is column block ``g // 512``, row
    ``(g // 8) % 64``, columns ``64 (g // 512) + 8 (g % 8) ..``."""
    for j in unroll(range(BK * BN // 8 // UNITS)):
        g = UNIT_POS + u32(j * UNITS)
        r = t + (g // u32(8)) % u32(BK)
        c = col0 + g // u32(_BLOCK // 8) * u32(64) + (g % u32(8)) * u32(8)
        to = wgmma.swizzle_line(at // u32(8) + g)
        _line(b, sb, to, r, c, k, n, V, INTERIOR)


@func
def _line(x, s, to: u32, r: u32, c: u32, rows: u32, cols: u32, V: Comptime[int], INTERIOR):
    """Line ``to`` of ``s`` gets ``x[r, c .. c + 7]`` (``rows x cols``, row-major): one
    asynchronous copy, or (``V == 1``) eight elements at once; zeros past the matrix."""
    if V == 8:
        if INTERIOR or (r < rows and c < cols):
            pipeline.copy_async(s, to, x, (r * cols + c) // u32(8), 8)
        else:
            s.store_line(to, Line.splat(Half(0), 8))
    else:
        for q in unroll(range(8)):
            if r < rows and c + u32(q) < cols:
                s[to * u32(8) + u32(q)] = x[r * cols + c + u32(q)]
            else:
                s[to * u32(8) + u32(q)] = Half(0)


@kernel
def matmul_warpgroup(
    a: Array[Half],
    b: Array[Half],
    out: Array[f32],
    m: u32,
    n: u32,
    k: u32,
    WG: Comptime[int],
    BN: Comptime[int],
    STAGES: Comptime[int],
    VA: Comptime[int],
    VB: Comptime[int],
    INTERIOR: Comptime[bool],
    GROUP: Comptime[int],
):
    BM = 64 * WG
    UNITS = 128 * WG
    launch_bounds(UNITS)
    A_STAGE = BM * BK
    B_STAGE = BK * BN
    sa = SharedMemory(Half, STAGES * A_STAGE)
    sb = SharedMemory(Half, STAGES * B_STAGE)
    w = UNIT_POS // u32(128)
    row0, col0 = grouped_block(BM, BN, GROUP)
    acc = wgmma.Accumulator(BN)
    wgmma.fill(acc, 0.0)
    stages = (k + u32(BK - 1)) // u32(BK)
    for p in unroll(range(STAGES - 2)):  # the first STAGES - 2 stages, one group each
        if u32(p) < stages:
            _stage_a(a, sa, u32(p * A_STAGE), row0, u32(p * BK), m, k, BM, VA, UNITS, INTERIOR)
            _stage_b(b, sb, u32(p * B_STAGE), u32(p * BK), col0, k, n, BN, VB, UNITS, INTERIOR)
        pipeline.commit()
    st = u32(0)
    while st < stages:
        pipeline.wait(STAGES - 3)  # this unit's copies of stage st are in …
        wgmma.fence()  # … ordered before the tensor cores' reads (and the accumulator's fill)
        sync_units()  # … and every unit's; every warpgroup is done with stage st - 2
        cur = st % u32(STAGES)
        a_at = cur * u32(A_STAGE) + w * u32(_BLOCK)
        b_at = cur * u32(B_STAGE)
        for s in unroll(range(BK // 16)):
            wgmma.mma_async(acc, sa, a_at + u32(16 * s), sb, b_at + u32(1024 * s), _BLOCK)
        wgmma.commit()
        wgmma.wait(1)  # stage st - 1 is multiplied; stage st may still be
        nxt = st + u32(STAGES - 2)  # queued into the slot of stage st - 2
        if nxt < stages:
            slot = nxt % u32(STAGES)
            t = nxt * u32(BK)
            _stage_a(a, sa, slot * u32(A_STAGE), row0, t, m, k, BM, VA, UNITS, INTERIOR)
            _stage_b(b, sb, slot * u32(B_STAGE), t, col0, k, n, BN, VB, UNITS, INTERIOR)
        pipeline.commit()
        st += u32(1)
    wgmma.wait(0)
    pipeline.wait(0)
    _store_block(out, acc, row0 + w * u32(64), col0, m, n)


@func
def _store_block(out, acc, r0: u32, col0: u32, m: u32, n: u32):
    """The accumulator of rows ``r0 ..`` and columns ``col0 ..`` into ``out`` (``m x n``), its
    rows and columns inside ``out`` only."""
    live_rows = m - r0 if r0 < m else u32(0)
    live_cols = n - col0 if col0 < n else u32(0)
    wgmma.store(out, r0 * n + col0, acc, n, live_rows, live_cols)


@func
def _copy_stage(
    a, b, sa, sb, full, slot: u32, t: u32, row0: u32, col0: u32, m: u32, n: u32, k: u32,
    BM: Comptime[int], BN: Comptime[int],
):  # fmt: skip
    """Stage ``t`` (its first ``k``) of the block at ``(row0, col0)`` into ``slot`` by tensor
    copies completing on barrier ``slot`` of ``full``."""
    a_at = slot * u32(BM * BK)
    b_at = slot * u32(BK * BN)
    mbarrier.arrive_expect_tx(full, slot, u32(2 * BK * (BM + BN)))
    mbarrier.tensor_copy(sa, a_at, a, m, k, row0, t, BM, BK, full, slot)
    for j in unroll(range(BN // 64)):
        at = b_at + u32(j * _BLOCK)
        mbarrier.tensor_copy(sb, at, b, k, n, t, col0 + u32(64 * j), BK, 64, full, slot)


@kernel
def matmul_warpgroup_tma(
    a: Array[Half],
    b: Array[Half],
    out: Array[f32],
    m: u32,
    n: u32,
    k: u32,
    WG: Comptime[int],
    BN: Comptime[int],
    STAGES: Comptime[int],
    GROUP: Comptime[int],
):
    BM = 64 * WG
    UNITS = 128 * WG
    launch_bounds(UNITS)
    sa = SharedMemory(Half, STAGES * BM * BK)
    sb = SharedMemory(Half, STAGES * BK * BN)
    full = mbarrier.Barriers(STAGES)
    w = UNIT_POS // u32(128)
    row0, col0 = grouped_block(BM, BN, GROUP)
    if UNIT_POS == 0:
        for s in unroll(range(STAGES)):
            mbarrier.init(full, s, 1)
    sync_units()
    acc = wgmma.Accumulator(BN)
    wgmma.fill(acc, 0.0)
    stages = (k + u32(BK - 1)) // u32(BK)
    if UNIT_POS == 0:
        for p in unroll(range(STAGES - 2)):  # the first STAGES - 2 stages
            if u32(p) < stages:
                _copy_stage(a, b, sa, sb, full, u32(p), u32(p * BK), row0, col0, m, n, k, BM, BN)
    st = u32(0)
    while st < stages:
        cur = st % u32(STAGES)
        mbarrier.wait(full, cur, (st // u32(STAGES)) % u32(2))  # stage st is in
        wgmma.fence()
        sync_units()  # every warpgroup is done with stage st - 2
        nxt = st + u32(STAGES - 2)  # copied into the slot of stage st - 2
        if UNIT_POS == 0 and nxt < stages:
            slot = nxt % u32(STAGES)
            _copy_stage(a, b, sa, sb, full, slot, nxt * u32(BK), row0, col0, m, n, k, BM, BN)
        a_at = cur * u32(BM * BK) + w * u32(_BLOCK)
        b_at = cur * u32(BK * BN)
        for s in unroll(range(BK // 16)):
            wgmma.mma_async(acc, sa, a_at + u32(16 * s), sb, b_at + u32(1024 * s), _BLOCK)
        wgmma.commit()
        wgmma.wait(1)  # stage st - 1 is multiplied; stage st may still be
        st += u32(1)
    wgmma.wait(0)
    _store_block(out, acc, row0 + w * u32(64), col0, m, n)
