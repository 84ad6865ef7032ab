# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""The portable matrix-multiply kernels: ``out (m x n, f32) = a (m x k) @ b (k x n)``, all three
row-major and dense, ``a`` and ``b`` of one element type ``In``. Sums are f32.

Both kernels compute one ``BM x BN`` block of ``out`` per cube and walk ``k`` in ``BK``-deep
stages: each unit fetches its share of the next stage of ``a`` and ``b`` from global memory
into registers (lines of ``VA`` / ``VB`` elements, one 16-byte access each where a row's
length allows, else single elements) while the cube computes on the current stage in shared
memory, then stores them into the other shared stage (``STAGES = 2``: one barrier per stage)
or, after a barrier, into the one stage (``STAGES = 1``). With ``INTERIOR`` (``m``, ``n``,
``k`` multiples of ``BM``, ``BN``, ``BK``) nothing is bounds-checked; otherwise elements past
the matrices' edges read zeros and only elements inside ``out`` are written, so every shape
works.

* :func:`matmul_fma`: a cube of ``(BM/RM) x (BN/RN)`` units, each holding an ``RM x RN``
  register tile of sums in quads: rows ``g*BM/GA + ty*WA + q`` for each of its ``GA = RM/WA``
  groups of ``WA`` (4, or ``RM`` when smaller) rows, columns likewise (``WB``, ``GB``), so a
  step of ``k`` reads each group as one line of shared memory and a plane's reads of a group
  are contiguous; ``a``'s stages are stored transposed, as f32, and every product is one fused
  multiply-add in k order. Always two shared stages (``BK`` even); a unit reads the next step
  of ``k`` from shared memory while it multiplies the current one, the first step of the next
  stage included (right after the stage's barrier), and fetches the next stage 8 steps at a
  time. Its loop takes two stages a turn, so that each shared read is at ``tx`` or ``ty`` plus
  a constant, which the CUDA compiler folds into the load (NVRTC 13.0 did not fold a stage
  index computed at run time: a quarter of the loop's instructions were address arithmetic).
  ``CUBES`` asks CUDA to fit that many cubes on a multiprocessor (``launch_bounds``).
  Register banks: a fused multiply-add that reads all three of its operands from the register
  file, none from the previous instruction's operand cache, stalls when the three registers
  are in one bank (the register's number's parity, on the H200). So a row of products runs in
  the other direction from the row before, and each row starts where the last ended (one
  operand carried over), and the sums are stored one by one rather than as lines: storing a
  quad as a line ties its four sums to four consecutive registers, as a quad of ``b`` is, so
  sums and their ``b`` fall in the same bank. On the H200 (NVRTC 13.0) that took the products
  reading three same-bank registers from 96 of 1024 a turn to 1, and the kernel from 44.9 to
  47.4 TFLOP/s at 8192^3.
* :func:`matmul_cmma`: a cube of ``WM x WN`` planes, each holding ``FM x FN`` accumulators of
  ``16 x 16`` (an ``FM*16 x FN*16`` part of the block) for the whole ``k`` loop and
  multiplying ``16 x 16 x TK`` cooperative-matrix fragments of ``In`` (tf32 for f32 input,
  ``TK = 8``) from shared stages of ``BK = KT*TK``. Interior blocks store the accumulators
  straight into ``out``; the others stage each through shared memory to write only the
  elements inside ``out``.

* :func:`matmul_pipelined`: the planes, fragments and shared stages of :func:`matmul_cmma`,
  but ``STAGES`` (3 or 4) of them filled by asynchronous copies (:mod:`ruda_core.lang.pipeline`)
  with no register staging: the copies of stages ``st + 1 .. st + STAGES - 1`` are in flight
  while stage ``st`` is multiplied, one group per stage, one barrier per stage. The copies of
  stage ``st + STAGES - 1`` are queued between the products of stage ``st`` (``a``'s with its
  first step, ``b``'s with its second), so that a plane's first products of a stage do not
  wait behind them. With ``PREFETCH`` (an even number of steps per stage) each step's
  fragments are loaded into a second set while the step before is multiplied: the barrier
  comes after the products of a stage's second-to-last step, and the last step's loads
  already read the next stage. Cubes take their blocks column by column within groups of
  ``GROUP`` block rows, so that the cubes running at once read fewer distinct parts of ``a``
  and ``b``. Lines past the matrices' edges are stored as zeros; without 16-byte lines (rows
  that do not start on one) the elements are copied one by one at once.

Launching, shapes, alignment (a 16-byte line needs the row length to be a multiple of its
elements) and the choice between kernels are :mod:`.matmul`'s; nothing here checks arguments.
"""

from __future__ import annotations

from ..lang import (
    PLANE_DIM,
    RUDA_COUNT_X,
    RUDA_COUNT_Y,
    RUDA_POS_X,
    RUDA_POS_Y,
    UNIT_POS,
    UNIT_POS_PLANE,
    Array,
    Comptime,
    ElemVar,
    Line,
    LocalArray,
    SharedMemory,
    bf16,
    cmma,
    f16,
    f32,
    fma,
    func,
    kernel,
    launch_bounds,
    pipeline,
    sync_plane,
    sync_units,
    u32,
    unroll,
)

__all__ = [
    "OUT_PAD",
    "PAD",
    "In",
    "grouped_block",
    "matmul_cmma",
    "matmul_fma",
    "matmul_pipelined",
]

#: The element of ``a`` and ``b``.
In = ElemVar("In", [f16, bf16, f32])
#: Elements added to each row of a shared stage of the cmma kernel: keeps rows 16-byte
#: multiples (WMMA) apart and off one another's memory banks.
PAD = 8
#: Elements added to each row of an f32 staging tile (rows stay 16-byte multiples apart) and
#: to each row of the FMA kernel's transposed stage of ``a``.
OUT_PAD = 4


@func
def _fetch(
    x,
    regs,
    row0: u32,
    col0: u32,
    rows: u32,
    cols: u32,
    R: Comptime[int],
    C: Comptime[int],
    V: Comptime[int],
    UNITS: Comptime[int],
    INTERIOR: Comptime[bool],
):
    """This unit's groups of ``V`` elements of the ``R x C`` tile of ``x`` (``rows x cols``,
    row-major) at ``(row0, col0)`` into ``regs``: group ``g = UNIT_POS + j*UNITS`` is row
    ``g // (C/V)``, columns ``(g % (C/V))*V ..``; groups past the matrix read zeros."""
    for j in unroll(range((R * C // V + UNITS - 1) // UNITS)):
        g = UNIT_POS + u32(j * UNITS)
        r = row0 + g // u32(C // V)
        c = col0 + (g % u32(C // V)) * u32(V)
        if INTERIOR and (j + 1) * UNITS <= R * C // V:
            if V == 1:
                regs[j] = x[r * cols + c]
            else:
                line = x.load_line((r * cols + c) // u32(V), V)
                for q in unroll(range(V)):
                    regs[j * V + q] = line[q]
        elif V == 1:
            if r < rows and c < cols and g < u32(R * C):
                regs[j] = x[r * cols + c]
            else:
                regs[j] = 0
        else:
            if r < rows and c < cols and g < u32(R * C // V):
                line = x.load_line((r * cols + c) // u32(V), V)
                for q in unroll(range(V)):
                    regs[j * V + q] = line[q]
            else:
                for q in unroll(range(V)):
                    regs[j * V + q] = 0


@func
def _stash(
    regs,
    s,
    at: u32,
    R: Comptime[int],
    C: Comptime[int],
    S: Comptime[int],
    V: Comptime[int],
    UNITS: Comptime[int],
    T: Comptime[bool],
    E: Comptime[object],
):
    """The groups :func:`_fetch` read, as ``E``, into the shared stage ``s`` at ``at``:
    element ``(r, c)`` at ``r*S + c``, or at ``c*S + r`` when ``T`` (transposed)."""
    for j in unroll(range((R * C // V + UNITS - 1) // UNITS)):
        g = UNIT_POS + u32(j * UNITS)
        if (j + 1) * UNITS <= R * C // V or g < u32(R * C // V):
            r = g // u32(C // V)
            c = (g % u32(C // V)) * u32(V)
            for q in unroll(range(V)):
                if T:
                    s[at + (c + u32(q)) * u32(S) + r] = E(regs[j * V + q])
                else:
                    s[at + r * u32(S) + c + u32(q)] = E(regs[j * V + q])


@kernel
def matmul_fma(
    a: Array[In],
    b: Array[In],
    out: Array[f32],
    m: u32,
    n: u32,
    k: u32,
    BM: Comptime[int],
    BN: Comptime[int],
    BK: Comptime[int],
    RM: Comptime[int],
    RN: Comptime[int],
    VA: Comptime[int],
    VB: Comptime[int],
    CUBES: Comptime[int],
    INTERIOR: Comptime[bool],
):
    UX = BN // RN  # units along n
    UNITS = UX * (BM // RM)
    launch_bounds(UNITS, CUBES)
    WA = 4 if RM % 4 == 0 else RM  # rows of a quad
    WB = 4 if RN % 4 == 0 else RN  # columns of a quad
    SA = BM + OUT_PAD  # the row stride of a's transposed stage (BK x BM)
    sa = SharedMemory(f32, 2 * BK * SA)
    sb = SharedMemory(f32, 2 * BK * BN)
    PK = 8 if BK % 8 == 0 else BK  # the steps of k of one fetch
    ra = LocalArray(In, (BM * PK // VA + UNITS - 1) // UNITS * VA)
    rb = LocalArray(In, (PK * BN // VB + UNITS - 1) // UNITS * VB)
    acc = LocalArray(f32, RM * RN)
    fa = LocalArray(f32, 2 * RM)  # two steps of k: the one multiplied and the next
    fb = LocalArray(f32, 2 * RN)
    for e in unroll(range(RM * RN)):
        acc[e] = f32(0)
    tx = UNIT_POS % u32(UX)
    ty = UNIT_POS // u32(UX)
    row0 = RUDA_POS_Y * u32(BM)
    col0 = RUDA_POS_X * u32(BN)
    stages = (k + u32(BK - 1)) // u32(BK)
    for p in unroll(range(0, BK, PK)):
        _fetch(a, ra, row0, u32(p), m, k, BM, PK, VA, UNITS, INTERIOR)
        _fetch(b, rb, u32(p), col0, k, n, PK, BN, VB, UNITS, INTERIOR)
        _stash(ra, sa, u32(p * SA), BM, PK, SA, VA, UNITS, True, f32)
        _stash(rb, sb, u32(p * BN), PK, BN, BN, VB, UNITS, False, f32)
    sync_units()
    _quads(sa, fa, ty, 0, 0, BM, RM, WA)
    _quads(sb, fb, tx, 0, 0, BN, RN, WB)
    st = u32(0)
    while st < stages:  # two stages a turn: every shared index is then ty or tx plus a constant
        _fma_stage(a, b, ra, rb, sa, sb, fa, fb, acc, row0, col0, m, n, k, st, stages, tx, ty,
                   BM, BN, BK, PK, RM, RN, WA, WB, SA, VA, VB, UNITS, INTERIOR, 0)  # fmt: skip
        st += u32(1)
        if st < stages:
            _fma_stage(a, b, ra, rb, sa, sb, fa, fb, acc, row0, col0, m, n, k, st, stages, tx, ty,
                       BM, BN, BK, PK, RM, RN, WA, WB, SA, VA, VB, UNITS, INTERIOR, 1)  # fmt: skip
            st += u32(1)
    for i in unroll(range(RM)):
        r = row0 + u32(i // WA * (BM // (RM // WA)) + i % WA) + ty * u32(WA)
        for h in unroll(range(RN // WB)):
            c = col0 + u32(h * (BN // (RN // WB))) + tx * u32(WB)
            at = i * RN + h * WB
            if INTERIOR:  # single stores: see the module's notes on register banks
                for q in unroll(range(WB)):
                    out[r * n + c + u32(q)] = acc[at + q]
            else:
                for q in unroll(range(WB)):
                    if r < m and c + u32(q) < n:
                        out[r * n + c + u32(q)] = acc[at + q]


@func
def _fma_stage(
    a, b, ra, rb, sa, sb, fa, fb, acc,
    row0: u32, col0: u32, m: u32, n: u32, k: u32, st: u32, stages: u32, tx: u32, ty: u32,
    BM: Comptime[int], BN: Comptime[int], BK: Comptime[int], PK: Comptime[int],
    RM: Comptime[int], RN: Comptime[int], WA: Comptime[int], WB: Comptime[int],
    SA: Comptime[int], VA: Comptime[int], VB: Comptime[int], UNITS: Comptime[int],
    INTERIOR: Comptime[bool], S: Comptime[int],
):  # fmt: skip
    """Stage ``st`` of :func:`matmul_fma`, in shared stage ``S`` with its first step of ``k`` in
    ``fa[:RM]`` and ``fb[:RN]``. Each step of ``k`` is multiplied while the next one is read
    into the other half of ``fa``, ``fb``; stage ``st + 1`` comes ``PK`` steps at a time, fetched
    into ``ra``, ``rb`` at the first of them and stored into shared stage ``1 - S`` at the last;
    after the stage's last step the cube waits and its first step is read. ``WA``, ``WB`` and
    ``SA`` are the kernel's quads and row stride of ``a``'s stages."""
    LA = BK * SA // WA  # lines of a stage of a, and of b
    LB = BK * BN // WB
    more = st + u32(1) < stages
    for kk in unroll(range(BK)):
        F = kk % 2 * RM  # where this step's values are; the next step's go to the other half
        G = kk % 2 * RN
        p = kk - kk % PK  # the first step of this fetch
        if kk == p and more:
            t = (st + u32(1)) * u32(BK) + u32(p)
            _fetch(a, ra, row0, t, m, k, BM, PK, VA, UNITS, INTERIOR)
            _fetch(b, rb, t, col0, k, n, PK, BN, VB, UNITS, INTERIOR)
        if kk + 1 < BK:
            _quads(sa, fa, ty, S * LA + (kk + 1) * SA // WA, RM - F, BM, RM, WA)
            _quads(sb, fb, tx, S * LB + (kk + 1) * BN // WB, RN - G, BN, RN, WB)
        if kk == p + PK - 1 and more:
            _stash(ra, sa, u32((1 - S) * BK * SA + p * SA), BM, PK, SA, VA, UNITS, True, f32)
            _stash(rb, sb, u32((1 - S) * BK * BN + p * BN), PK, BN, BN, VB, UNITS, False, f32)
            if kk + 1 == BK:
                sync_units()
                _quads(sa, fa, ty, (1 - S) * LA, 0, BM, RM, WA)
                _quads(sb, fb, tx, (1 - S) * LB, 0, BN, RN, WB)
        for i in unroll(range(RM)):
            for jj in unroll(range(RN)):
                j = jj if i % 2 == 1 else RN - 1 - jj  # rows alternate directions
                acc[i * RN + j] = fma(fa[F + i], fb[G + j], acc[i * RN + j])


@func
def _quads(
    s,
    f,
    line0: u32,
    L: Comptime[int],
    F: Comptime[int],
    B: Comptime[int],
    R: Comptime[int],
    W: Comptime[int],
):
    """``f[F + g*W + q] = s[(line0 + L)*W + g*B/(R/W) + q]``: a unit's ``R`` values of one step
    of ``k``, its ``R/W`` groups of ``W`` read as lines. The constant part of each line's index
    (``L`` plus the group's offset) is added to ``line0`` last, so that it can become the load's
    immediate offset."""
    for g in unroll(range(R // W)):
        line = s.load_line(line0 + u32(L + g * (B // (R // W)) // W), W)
        for q in unroll(range(W)):
            f[F + g * W + q] = line[q]


@func
def _row(fa, fb0, fb1, fb2, fb3, c0, c1, c2, c3, FN: Comptime[int]):
    """One row of a plane's accumulators: ``c_j += fa * fb_j`` for ``j < FN``."""
    cmma.execute(fa, fb0, c0, c0)
    cmma.execute(fa, fb1, c1, c1)
    if FN > 2:
        cmma.execute(fa, fb2, c2, c2)
        cmma.execute(fa, fb3, c3, c3)


@func
def _fill_row(c0, c1, c2, c3, FN: Comptime[int]):
    cmma.fill(c0, 0.0)
    cmma.fill(c1, 0.0)
    if FN > 2:
        cmma.fill(c2, 0.0)
        cmma.fill(c3, 0.0)


@func
def _put_tile(out, so, c, r0: u32, c0: u32, m: u32, n: u32, stage: u32, INTERIOR: Comptime[bool]):
    """The ``16 x 16`` accumulator ``c`` into ``out`` at ``(r0, c0)``: directly, or through
    the plane's staging tile ``so[stage ..]`` keeping only the elements inside ``out``."""
    if INTERIOR:
        cmma.store(out, r0 * n + c0, c, n, cmma.ROW_MAJOR)
    else:
        S = 16 + OUT_PAD
        cmma.store(so, stage, c, u32(S), cmma.ROW_MAJOR)
        sync_plane()
        e = UNIT_POS_PLANE
        while e < u32(256):
            gr = r0 + e // u32(16)
            gc = c0 + e % u32(16)
            if gr < m and gc < n:
                out[gr * n + gc] = so[stage + (e // u32(16)) * u32(S) + e % u32(16)]
            e += PLANE_DIM
        sync_plane()


@func
def _put_row(
    out,
    so,
    c0,
    c1,
    c2,
    c3,
    r0: u32,
    col: u32,
    m: u32,
    n: u32,
    stage: u32,
    FN: Comptime[int],
    INTERIOR: Comptime[bool],
):
    _put_tile(out, so, c0, r0, col, m, n, stage, INTERIOR)
    _put_tile(out, so, c1, r0, col + u32(16), m, n, stage, INTERIOR)
    if FN > 2:
        _put_tile(out, so, c2, r0, col + u32(32), m, n, stage, INTERIOR)
        _put_tile(out, so, c3, r0, col + u32(48), m, n, stage, INTERIOR)


@func
def _fill(
    c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33,
    FM: Comptime[int], FN: Comptime[int],
):  # fmt: skip
    """Zero a plane's ``FM x FN`` accumulators."""
    _fill_row(c00, c01, c02, c03, FN)
    _fill_row(c10, c11, c12, c13, FN)
    if FM > 2:
        _fill_row(c20, c21, c22, c23, FN)
        _fill_row(c30, c31, c32, c33, FN)


@func
def _multiply(
    sa, sb, at_a: u32, at_b: u32, fa0, fa1, fa2, fa3, fb0, fb1, fb2, fb3,
    c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33,
    SA: Comptime[int], SB: Comptime[int], KT: Comptime[int], TK: Comptime[int],
    FM: Comptime[int], FN: Comptime[int],
):  # fmt: skip
    """A plane's accumulators ``+=`` its rows of the shared stage of ``a`` at ``at_a`` times its
    columns of the stage of ``b`` at ``at_b``, ``KT`` steps of ``TK`` deep."""
    for s in unroll(range(KT)):
        kb = at_b + u32(s * TK * SB)
        cmma.load(fb0, sb, kb, u32(SB))
        cmma.load(fb1, sb, kb + u32(16), u32(SB))
        if FN > 2:
            cmma.load(fb2, sb, kb + u32(32), u32(SB))
            cmma.load(fb3, sb, kb + u32(48), u32(SB))
        ka = at_a + u32(s * TK)
        cmma.load(fa0, sa, ka, u32(SA))
        _row(fa0, fb0, fb1, fb2, fb3, c00, c01, c02, c03, FN)
        cmma.load(fa1, sa, ka + u32(16 * SA), u32(SA))
        _row(fa1, fb0, fb1, fb2, fb3, c10, c11, c12, c13, FN)
        if FM > 2:
            cmma.load(fa2, sa, ka + u32(32 * SA), u32(SA))
            _row(fa2, fb0, fb1, fb2, fb3, c20, c21, c22, c23, FN)
            cmma.load(fa3, sa, ka + u32(48 * SA), u32(SA))
            _row(fa3, fb0, fb1, fb2, fb3, c30, c31, c32, c33, FN)


@func
def _put(
    out, so, c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33,
    r0: u32, col: u32, m: u32, n: u32, stage: u32,
    FM: Comptime[int], FN: Comptime[int], INTERIOR: Comptime[bool],
):  # fmt: skip
    """A plane's ``FM x FN`` accumulators into ``out`` from row ``r0`` and column ``col``."""
    _put_row(out, so, c00, c01, c02, c03, r0, col, m, n, stage, FN, INTERIOR)
    _put_row(out, so, c10, c11, c12, c13, r0 + u32(16), col, m, n, stage, FN, INTERIOR)
    if FM > 2:
        _put_row(out, so, c20, c21, c22, c23, r0 + u32(32), col, m, n, stage, FN, INTERIOR)
        _put_row(out, so, c30, c31, c32, c33, r0 + u32(48), col, m, n, stage, FN, INTERIOR)


@kernel
def matmul_cmma(
    a: Array[In],
    b: Array[In],
    out: Array[f32],
    m: u32,
    n: u32,
    k: u32,
    TK: Comptime[int],
    FM: Comptime[int],
    FN: Comptime[int],
    WM: Comptime[int],
    WN: Comptime[int],
    KT: Comptime[int],
    UNITS: Comptime[int],
    VA: Comptime[int],
    VB: Comptime[int],
    STAGES: Comptime[int],
    INTERIOR: Comptime[bool],
    TF32: Comptime[bool],
):
    BM = WM * FM * 16
    BN = WN * FN * 16
    BK = KT * TK
    SA = BK + PAD  # the row stride of a stage of a (BM x BK)
    SB = BN + PAD  # the row stride of a stage of b (BK x BN)
    sa = SharedMemory(In, STAGES * BM * SA)
    sb = SharedMemory(In, STAGES * BK * SB)
    so = SharedMemory(f32, 8 if INTERIOR else WM * WN * 16 * (16 + OUT_PAD))
    ra = LocalArray(In, (BM * BK // VA + UNITS - 1) // UNITS * VA)
    rb = LocalArray(In, (BK * BN // VB + UNITS - 1) // UNITS * VB)
    plane = UNIT_POS // PLANE_DIM
    pm = plane // u32(WN)
    pn = plane % u32(WN)
    row0 = RUDA_POS_Y * u32(BM)
    col0 = RUDA_POS_X * u32(BN)
    ab = cmma.tf32 if TF32 else In
    fa0 = cmma.Matrix(cmma.A, 16, 16, TK, ab, cmma.ROW_MAJOR)
    fa1 = cmma.Matrix(cmma.A, 16, 16, TK, ab, cmma.ROW_MAJOR)
    fa2 = cmma.Matrix(cmma.A, 16, 16, TK, ab, cmma.ROW_MAJOR)
    fa3 = cmma.Matrix(cmma.A, 16, 16, TK, ab, cmma.ROW_MAJOR)
    fb0 = cmma.Matrix(cmma.B, 16, 16, TK, ab, cmma.ROW_MAJOR)
    fb1 = cmma.Matrix(cmma.B, 16, 16, TK, ab, cmma.ROW_MAJOR)
    fb2 = cmma.Matrix(cmma.B, 16, 16, TK, ab, cmma.ROW_MAJOR)
    fb3 = cmma.Matrix(cmma.B, 16, 16, TK, ab, cmma.ROW_MAJOR)
    c00 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c01 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c02 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c03 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c10 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c11 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c12 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c13 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c20 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c21 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c22 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c23 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c30 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c31 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c32 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c33 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    _fill(c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33, FM, FN)
    stages = (k + u32(BK - 1)) // u32(BK)
    _fetch(a, ra, row0, u32(0), m, k, BM, BK, VA, UNITS, INTERIOR)
    _fetch(b, rb, u32(0), col0, k, n, BK, BN, VB, UNITS, INTERIOR)
    _stash(ra, sa, u32(0), BM, BK, SA, VA, UNITS, False, In)
    _stash(rb, sb, u32(0), BK, BN, SB, VB, UNITS, False, In)
    sync_units()
    a_rows = pm * u32(FM * 16 * SA)  # this plane's first row of a stage of a
    b_cols = pn * u32(FN * 16)  # this plane's first column of a stage of b
    st = u32(0)
    while st < stages:
        cur = st % u32(STAGES)
        more = st + u32(1) < stages
        if more:
            t = (st + u32(1)) * u32(BK)
            _fetch(a, ra, row0, t, m, k, BM, BK, VA, UNITS, INTERIOR)
            _fetch(b, rb, t, col0, k, n, BK, BN, VB, UNITS, INTERIOR)
        at_a = cur * u32(BM * SA) + a_rows
        at_b = cur * u32(BK * SB) + b_cols
        _multiply(
            sa, sb, at_a, at_b, fa0, fa1, fa2, fa3, fb0, fb1, fb2, fb3,
            c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33,
            SA, SB, KT, TK, FM, FN,
        )  # fmt: skip
        if more:
            nxt = (cur + u32(1)) % u32(STAGES)
            if STAGES == 1:
                sync_units()
            _stash(ra, sa, nxt * u32(BM * SA), BM, BK, SA, VA, UNITS, False, In)
            _stash(rb, sb, nxt * u32(BK * SB), BK, BN, SB, VB, UNITS, False, In)
        sync_units()
        st += u32(1)
    r0 = row0 + pm * u32(FM * 16)
    col = col0 + pn * u32(FN * 16)
    stage = plane * u32(16 * (16 + OUT_PAD))
    _put(
        out, so, c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33,
        r0, col, m, n, stage, FM, FN, INTERIOR,
    )  # fmt: skip


@func
def _issue(
    x,
    s,
    at: u32,
    row0: u32,
    col0: u32,
    rows: u32,
    cols: u32,
    R: Comptime[int],
    C: Comptime[int],
    S: Comptime[int],
    V: Comptime[int],
    UNITS: Comptime[int],
    INTERIOR: Comptime[bool],
):
    """This unit's lines of ``V`` elements of the ``R x C`` tile of ``x`` (``rows x cols``,
    row-major) at ``(row0, col0)``, queued as asynchronous copies into the shared stage ``s``
    at ``at`` (element ``(r, c)`` at ``r*S + c``; ``at``, ``S`` and ``cols`` are multiples of
    ``V``). Line ``g = UNIT_POS + j*UNITS`` is row ``g // (C/V)``, columns
    ``(g % (C/V))*V ..``; lines past the matrix are stored as zeros. ``V == 1`` (rows that do
    not start on lines) copies element by element, at once."""
    for j in unroll(range((R * C // V + UNITS - 1) // UNITS)):
        g = UNIT_POS + u32(j * UNITS)
        r = g // u32(C // V)
        c = (g % u32(C // V)) * u32(V)
        full = (j + 1) * UNITS <= R * C // V
        if full or g < u32(R * C // V):
            to = at + r * u32(S) + c
            gr = row0 + r
            gc = col0 + c
            if V == 1:
                if INTERIOR or (gr < rows and gc < cols):
                    s[to] = x[gr * cols + gc]
                else:
                    s[to] = In(0)
            elif INTERIOR or (gr < rows and gc < cols):
                pipeline.copy_async(s, to // u32(V), x, (gr * cols + gc) // u32(V), V)
            else:
                s.store_line(to // u32(V), Line.splat(In(0), V))


@func
def _load_step(
    sa, sb, at_a: u32, at_b: u32, fa0, fa1, fa2, fa3, fb0, fb1, fb2, fb3,
    SA: Comptime[int], SB: Comptime[int], FM: Comptime[int], FN: Comptime[int],
):  # fmt: skip
    """A plane's fragments of one ``TK``-deep step: its rows of the shared stage of ``a`` at
    ``at_a`` and its columns of the stage of ``b`` at ``at_b``."""
    cmma.load(fb0, sb, at_b, u32(SB))
    cmma.load(fb1, sb, at_b + u32(16), u32(SB))
    if FN > 2:
        cmma.load(fb2, sb, at_b + u32(32), u32(SB))
        cmma.load(fb3, sb, at_b + u32(48), u32(SB))
    cmma.load(fa0, sa, at_a, u32(SA))
    cmma.load(fa1, sa, at_a + u32(16 * SA), u32(SA))
    if FM > 2:
        cmma.load(fa2, sa, at_a + u32(32 * SA), u32(SA))
        cmma.load(fa3, sa, at_a + u32(48 * SA), u32(SA))


@func
def _products(
    fa0, fa1, fa2, fa3, fb0, fb1, fb2, fb3,
    c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33,
    FM: Comptime[int], FN: Comptime[int],
):  # fmt: skip
    """A plane's accumulators ``+=`` the products of fragments already loaded."""
    _row(fa0, fb0, fb1, fb2, fb3, c00, c01, c02, c03, FN)
    _row(fa1, fb0, fb1, fb2, fb3, c10, c11, c12, c13, FN)
    if FM > 2:
        _row(fa2, fb0, fb1, fb2, fb3, c20, c21, c22, c23, FN)
        _row(fa3, fb0, fb1, fb2, fb3, c30, c31, c32, c33, FN)


@func
def grouped_block(BM: Comptime[int], BN: Comptime[int], GROUP: Comptime[int]):
    """The first row and column of this cube's ``BM x BN`` block of the output: cube ``i``
    (row-major over ``RudaCount``) takes block ``(i % rows, i // rows)`` of its group of
    ``GROUP`` block rows, so the cubes running at once share rows of ``a`` and columns of ``b``
    in L2."""
    cube = RUDA_POS_Y * RUDA_COUNT_X + RUDA_POS_X
    per_group = u32(GROUP) * RUDA_COUNT_X
    first = cube // per_group * u32(GROUP)
    rows = min(RUDA_COUNT_Y - first, u32(GROUP))
    within = cube % per_group
    return (first + within % rows) * u32(BM), within // rows * u32(BN)


@kernel
def matmul_pipelined(
    a: Array[In],
    b: Array[In],
    out: Array[f32],
    m: u32,
    n: u32,
    k: u32,
    TK: Comptime[int],
    FM: Comptime[int],
    FN: Comptime[int],
    WM: Comptime[int],
    WN: Comptime[int],
    KT: Comptime[int],
    UNITS: Comptime[int],
    VA: Comptime[int],
    VB: Comptime[int],
    STAGES: Comptime[int],
    INTERIOR: Comptime[bool],
    TF32: Comptime[bool],
    GROUP: Comptime[int],
    PREFETCH: Comptime[bool],
):
    BM = WM * FM * 16
    BN = WN * FN * 16
    BK = KT * TK
    SA = BK + PAD
    SB = BN + PAD
    sa = SharedMemory(In, STAGES * BM * SA)
    sb = SharedMemory(In, STAGES * BK * SB)
    so = SharedMemory(f32, 8 if INTERIOR else WM * WN * 16 * (16 + OUT_PAD))
    plane = UNIT_POS // PLANE_DIM
    pm = plane // u32(WN)
    pn = plane % u32(WN)
    row0, col0 = grouped_block(BM, BN, GROUP)
    ab = cmma.tf32 if TF32 else In
    fa0 = cmma.Matrix(cmma.A, 16, 16, TK, ab, cmma.ROW_MAJOR)
    fa1 = cmma.Matrix(cmma.A, 16, 16, TK, ab, cmma.ROW_MAJOR)
    fa2 = cmma.Matrix(cmma.A, 16, 16, TK, ab, cmma.ROW_MAJOR)
    fa3 = cmma.Matrix(cmma.A, 16, 16, TK, ab, cmma.ROW_MAJOR)
    fb0 = cmma.Matrix(cmma.B, 16, 16, TK, ab, cmma.ROW_MAJOR)
    fb1 = cmma.Matrix(cmma.B, 16, 16, TK, ab, cmma.ROW_MAJOR)
    fb2 = cmma.Matrix(cmma.B, 16, 16, TK, ab, cmma.ROW_MAJOR)
    fb3 = cmma.Matrix(cmma.B, 16, 16, TK, ab, cmma.ROW_MAJOR)
    # the second set of fragments of PREFETCH (unused, and left out by the compiler, otherwise)
    ga0 = cmma.Matrix(cmma.A, 16, 16, TK, ab, cmma.ROW_MAJOR)
    ga1 = cmma.Matrix(cmma.A, 16, 16, TK, ab, cmma.ROW_MAJOR)
    ga2 = cmma.Matrix(cmma.A, 16, 16, TK, ab, cmma.ROW_MAJOR)
    ga3 = cmma.Matrix(cmma.A, 16, 16, TK, ab, cmma.ROW_MAJOR)
    gb0 = cmma.Matrix(cmma.B, 16, 16, TK, ab, cmma.ROW_MAJOR)
    gb1 = cmma.Matrix(cmma.B, 16, 16, TK, ab, cmma.ROW_MAJOR)
    gb2 = cmma.Matrix(cmma.B, 16, 16, TK, ab, cmma.ROW_MAJOR)
    gb3 = cmma.Matrix(cmma.B, 16, 16, TK, ab, cmma.ROW_MAJOR)
    c00 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c01 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c02 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c03 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c10 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c11 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c12 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c13 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c20 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c21 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c22 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c23 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c30 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c31 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c32 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    c33 = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, TK, f32)
    _fill(c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33, FM, FN)
    stages = (k + u32(BK - 1)) // u32(BK)
    for p in unroll(range(STAGES - 1)):  # the first STAGES - 1 stages, one group each
        if u32(p) < stages:
            t = u32(p * BK)
            _issue(a, sa, u32(p * BM * SA), row0, t, m, k, BM, BK, SA, VA, UNITS, INTERIOR)
            _issue(b, sb, u32(p * BK * SB), t, col0, k, n, BK, BN, SB, VB, UNITS, INTERIOR)
        pipeline.commit()
    a_rows = pm * u32(FM * 16 * SA)  # this plane's first row of a stage of a
    b_cols = pn * u32(FN * 16)  # this plane's first column of a stage of b
    # the step after whose products (before them with PREFETCH) b's copies are queued, closing
    # the stage's group: with PREFETCH, the group must close at step KT - 2
    B_STEP = min(1, KT - 2) if PREFETCH else min(1, KT - 1)
    if PREFETCH:
        pipeline.wait(STAGES - 2)
        sync_units()
        _load_step(sa, sb, a_rows, b_cols, fa0, fa1, fa2, fa3, fb0, fb1, fb2, fb3, SA, SB, FM, FN)
    st = u32(0)
    while st < stages:
        if not PREFETCH:
            pipeline.wait(STAGES - 2)  # this unit's copies of stage st are in …
            sync_units()  # … and every unit's; stage st - 1 is no longer read
        nxt = st + u32(STAGES - 1)  # the stage queued now, into the slot stage st - 1 left
        slot = nxt % u32(STAGES)
        t = nxt * u32(BK)
        cur = st % u32(STAGES)
        at_a = cur * u32(BM * SA) + a_rows
        at_b = cur * u32(BK * SB) + b_cols
        after = (st + u32(1)) % u32(STAGES)
        for s in unroll(range(KT)):
            if PREFETCH:  # step s + 1's fragments (the next stage's first) into the other set
                if s + 1 < KT:
                    na = at_a + u32((s + 1) * TK)
                    nb = at_b + u32((s + 1) * TK * SB)
                else:
                    na = after * u32(BM * SA) + a_rows
                    nb = after * u32(BK * SB) + b_cols
                if s % 2 == 0:
                    _load_step(
                        sa, sb, na, nb, ga0, ga1, ga2, ga3, gb0, gb1, gb2, gb3, SA, SB, FM, FN
                    )  # fmt: skip
                else:
                    _load_step(
                        sa, sb, na, nb, fa0, fa1, fa2, fa3, fb0, fb1, fb2, fb3, SA, SB, FM, FN
                    )  # fmt: skip
            else:
                _multiply(
                    sa, sb, at_a + u32(s * TK), at_b + u32(s * TK * SB),
                    fa0, fa1, fa2, fa3, fb0, fb1, fb2, fb3,
                    c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33,
                    SA, SB, 1, TK, FM, FN,
                )  # fmt: skip
            # the copies of stage nxt go out between the products, not before the first
            if s == 0 and nxt < stages:
                _issue(a, sa, slot * u32(BM * SA), row0, t, m, k, BM, BK, SA, VA, UNITS, INTERIOR)
            if s == B_STEP:
                if nxt < stages:
                    _issue(
                        b, sb, slot * u32(BK * SB), t, col0, k, n, BK, BN, SB, VB, UNITS, INTERIOR
                    )
                if not PREFETCH:
                    pipeline.commit()
            if PREFETCH:
                if s % 2 == 0:
                    _products(
                        fa0, fa1, fa2, fa3, fb0, fb1, fb2, fb3,
                        c00, c01, c02, c03, c10, c11, c12, c13,
                        c20, c21, c22, c23, c30, c31, c32, c33, FM, FN,
                    )  # fmt: skip
                else:
                    _products(
                        ga0, ga1, ga2, ga3, gb0, gb1, gb2, gb3,
                        c00, c01, c02, c03, c10, c11, c12, c13,
                        c20, c21, c22, c23, c30, c31, c32, c33, FM, FN,
                    )  # fmt: skip
                if s == KT - 2:
                    pipeline.commit()
                    pipeline.wait(STAGES - 2)  # stage st + 1 is in, for step KT - 1's loads;
                    sync_units()  # stage st is read: the next iteration may overwrite it
        st += u32(1)
    pipeline.wait(0)
    r0 = row0 + pm * u32(FM * 16)
    col = col0 + pn * u32(FN * 16)
    stage = plane * u32(16 * (16 + OUT_PAD))
    _put(
        out, so, c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33,
        r0, col, m, n, stage, FM, FN, INTERIOR,
    )  # fmt: skip
