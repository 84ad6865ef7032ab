# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""The portable matrix-multiply kernels: ``out (m x n, f32) = a (m x k) @ b (k x n)``, all three
row-major and dense, ``a`` and ``b`` of one element type ``In``. Sums are f32.

* :func:`matmul_fma`: cubes of ``TILE x TILE`` units, one output element each; ``TILE x TILE``
  tiles of ``a`` and ``b`` move through shared memory as f32 and every product is one fused
  multiply-add in k order.
* :func:`matmul_cmma`: cubes of ``WM x WN`` planes; each plane computes a ``2*TM x 2*TN`` block
  of the output as four ``TM x TN`` accumulators of cooperative-matrix products (``TM x TN x
  TK`` fragments of ``In``, or tf32 for f32 input), from ``BK = KT*TK``-deep stages of ``a`` and
  ``b`` in shared memory, and stages its accumulators through shared memory to write only the
  elements inside ``out``.

Tiles past the matrices' edges read zeros, so every shape works. Launching, shapes and the
choice between kernels are :mod:`.matmul`'s; nothing here checks arguments.
"""

from __future__ import annotations

from ..lang import (
    PLANE_DIM,
    RUDA_DIM,
    RUDA_POS_X,
    RUDA_POS_Y,
    UNIT_POS,
    UNIT_POS_PLANE,
    UNIT_POS_X,
    UNIT_POS_Y,
    Array,
    Comptime,
    ElemVar,
    SharedMemory,
    bf16,
    cmma,
    f16,
    f32,
    fma,
    kernel,
    sync_plane,
    sync_units,
    u32,
    unroll,
)

__all__ = ["PAD", "In", "matmul_cmma", "matmul_fma"]

#: The element of ``a`` and ``b``.
In = ElemVar("In", [f16, bf16, f32])
#: Elements added to each row of a shared tile: keeps rows 16-byte multiples (WMMA) apart and
#: off one another's memory banks.
PAD = 8


@kernel
def matmul_fma(
    a: Array[In], b: Array[In], out: Array[f32], m: u32, n: u32, k: u32, TILE: Comptime[int]
):
    sa = SharedMemory(f32, TILE * TILE)
    sb = SharedMemory(f32, TILE * TILE)
    tx = UNIT_POS_X
    ty = UNIT_POS_Y
    row = RUDA_POS_Y * u32(TILE) + ty
    col = RUDA_POS_X * u32(TILE) + tx
    acc = f32(0)
    t = u32(0)
    while t < k:
        ak = t + tx
        sa[ty * u32(TILE) + tx] = f32(a[row * k + ak]) if row < m and ak < k else f32(0)
        bk = t + ty
        sb[ty * u32(TILE) + tx] = f32(b[bk * n + col]) if bk < k and col < n else f32(0)
        sync_units()
        for i in unroll(range(TILE)):
            acc = fma(sa[ty * u32(TILE) + u32(i)], sb[u32(i * TILE) + tx], acc)
        sync_units()
        t += u32(TILE)
    if row < m and col < n:
        out[row * n + col] = acc


@kernel
def matmul_cmma(
    a: Array[In],
    b: Array[In],
    out: Array[f32],
    m: u32,
    n: u32,
    k: u32,
    TM: Comptime[int],
    TN: Comptime[int],
    TK: Comptime[int],
    WM: Comptime[int],
    WN: Comptime[int],
    KT: Comptime[int],
    TF32: Comptime[bool],
):
    BM = WM * 2 * TM
    BN = WN * 2 * TN
    BK = KT * TK
    SA = BK + PAD  # the row stride of the shared tile of a (BM x BK)
    SB = BN + PAD  # the row stride of the shared tile of b (BK x BN)
    SO = TN + PAD  # the row stride of each plane's staging tile (TM x TN)
    sa = SharedMemory(In, BM * SA)
    sb = SharedMemory(In, BK * SB)
    so = SharedMemory(f32, WM * WN * TM * SO)
    plane = UNIT_POS // PLANE_DIM
    pm = plane // u32(WN)
    pn = plane % u32(WN)
    row0 = RUDA_POS_Y * u32(BM)
    col0 = RUDA_POS_X * u32(BN)
    ab = cmma.tf32 if TF32 else In
    fa0 = cmma.Matrix(cmma.A, TM, TN, TK, ab, cmma.ROW_MAJOR)
    fa1 = cmma.Matrix(cmma.A, TM, TN, TK, ab, cmma.ROW_MAJOR)
    fb0 = cmma.Matrix(cmma.B, TM, TN, TK, ab, cmma.ROW_MAJOR)
    fb1 = cmma.Matrix(cmma.B, TM, TN, TK, ab, cmma.ROW_MAJOR)
    c00 = cmma.Matrix(cmma.ACCUMULATOR, TM, TN, TK, f32)
    c01 = cmma.Matrix(cmma.ACCUMULATOR, TM, TN, TK, f32)
    c10 = cmma.Matrix(cmma.ACCUMULATOR, TM, TN, TK, f32)
    c11 = cmma.Matrix(cmma.ACCUMULATOR, TM, TN, TK, f32)
    cmma.fill(c00, 0.0)
    cmma.fill(c01, 0.0)
    cmma.fill(c10, 0.0)
    cmma.fill(c11, 0.0)
    a_rows = pm * u32(2 * TM * SA)  # this plane's first row of sa
    b_cols = pn * u32(2 * TN)  # this plane's first column of sb
    t = u32(0)
    while t < k:
        i = UNIT_POS
        while i < u32(BM * BK):
            r = i // u32(BK)
            c = i % u32(BK)
            gr = row0 + r
            gc = t + c
            sa[r * u32(SA) + c] = a[gr * k + gc] if gr < m and gc < k else In(0)
            i += RUDA_DIM
        i = UNIT_POS
        while i < u32(BK * BN):
            r = i // u32(BN)
            c = i % u32(BN)
            gr = t + r
            gc = col0 + c
            sb[r * u32(SB) + c] = b[gr * n + gc] if gr < k and gc < n else In(0)
            i += RUDA_DIM
        sync_units()
        for s in unroll(range(KT)):
            cmma.load(fa0, sa, a_rows + u32(s * TK), u32(SA))
            cmma.load(fa1, sa, a_rows + u32(TM * SA + s * TK), u32(SA))
            cmma.load(fb0, sb, b_cols + u32(s * TK * SB), u32(SB))
            cmma.load(fb1, sb, b_cols + u32(s * TK * SB + TN), u32(SB))
            cmma.execute(fa0, fb0, c00, c00)
            cmma.execute(fa0, fb1, c01, c01)
            cmma.execute(fa1, fb0, c10, c10)
            cmma.execute(fa1, fb1, c11, c11)
        sync_units()
        t += u32(BK)
    stage = plane * u32(TM * SO)
    for q in unroll(range(4)):
        if q == 0:
            cmma.store(so, stage, c00, u32(SO), cmma.ROW_MAJOR)
        elif q == 1:
            cmma.store(so, stage, c01, u32(SO), cmma.ROW_MAJOR)
        elif q == 2:
            cmma.store(so, stage, c10, u32(SO), cmma.ROW_MAJOR)
        else:
            cmma.store(so, stage, c11, u32(SO), cmma.ROW_MAJOR)
        sync_plane()
        e = UNIT_POS_PLANE
        while e < u32(TM * TN):
            gr = row0 + pm * u32(2 * TM) + u32((q // 2) * TM) + e // u32(TN)
            gc = col0 + pn * u32(2 * TN) + u32((q % 2) * TN) + e % u32(TN)
            if gr < m and gc < n:
                out[gr * n + gc] = so[stage + (e // u32(TN)) * u32(SO) + e % u32(TN)]
            e += PLANE_DIM
        sync_plane()
