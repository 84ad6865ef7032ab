# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""Kernels of cooperative matrices (``cmma``) that the conformance suite runs on every device and
the compile tests build for CUDA: one tile product through global memory, the same through
shared memory, and an accumulation over several products with a cast.

Each plane of a cube works on its own slice of every array: plane ``p`` of ``P`` planes uses the
``p``-th of ``P`` equal parts, so a result that mixes planes up is caught. Offsets and strides
within a part are launch scalars; layouts, shapes and types are compile-time values.
"""

from __future__ import annotations

from ruda_core.ir import MatrixLayout
from ruda_core.lang import (
    PLANE_DIM,
    RUDA_DIM,
    UNIT_POS,
    Array,
    Comptime,
    ElemVar,
    Float,
    SharedMemory,
    cmma,
    f16,
    kernel,
    sync_units,
    u32,
)

__all__ = ["Acc", "In", "cmma_chain", "cmma_fill_store", "cmma_shared", "cmma_tile"]

#: The element of A and B in memory (f16, bf16, or f32 for tf32).
In = ElemVar("In", Float)
#: The element of the accumulators in memory (f16 or f32).
Acc = ElemVar("Acc", Float)


@kernel
def cmma_tile(
    a: Array[In],
    b: Array[In],
    c: Array[Acc],
    out: Array[Acc],
    at: Array[u32],
    M: Comptime[int],
    N: Comptime[int],
    K: Comptime[int],
    TF32: Comptime[bool],
    LA: Comptime[MatrixLayout],
    LB: Comptime[MatrixLayout],
    LC: Comptime[MatrixLayout],
    LOUT: Comptime[MatrixLayout],
):
    """``out = a * b + c`` of one tile per plane; ``at`` holds the offset and stride of a, b, c
    and out (eight ``u32``) within each plane's part."""
    planes = RUDA_DIM // PLANE_DIM
    p = UNIT_POS // PLANE_DIM
    ma = cmma.Matrix(cmma.A, M, N, K, cmma.tf32 if TF32 else In, LA)
    mb = cmma.Matrix(cmma.B, M, N, K, cmma.tf32 if TF32 else In, LB)
    mc = cmma.Matrix(cmma.ACCUMULATOR, M, N, K, Acc, LC)
    cmma.load(ma, a, p * (a.len() // planes) + at[0], at[1])
    cmma.load(mb, b, p * (b.len() // planes) + at[2], at[3])
    cmma.load(mc, c, p * (c.len() // planes) + at[4], at[5])
    cmma.execute(ma, mb, mc, mc)
    cmma.store(out, p * (out.len() // planes) + at[6], mc, at[7], LOUT)


@kernel
def cmma_shared(
    a: Array[In],
    b: Array[In],
    out: Array[Acc],
    M: Comptime[int],
    N: Comptime[int],
    K: Comptime[int],
    LA: Comptime[MatrixLayout],
    LB: Comptime[MatrixLayout],
    LOUT: Comptime[MatrixLayout],
    A_TILE: Comptime[tuple[int, int]],
    B_TILE: Comptime[tuple[int, int]],
    O_TILE: Comptime[tuple[int, int]],
    PAD: Comptime[int],
    TF32: Comptime[bool] = False,
):
    """``out = a * b`` of one tile per plane (at most 4 planes) through shared memory: every
    unit copies part of a and b (dense tiles, one per plane, ``X_TILE`` = (outer, inner) extents
    in their layout) into shared tiles whose rows or columns are ``PAD`` elements longer, the
    planes multiply from there and store into a padded shared tile, which the units copy out
    to ``out`` (dense, in ``LOUT``). With ``TF32`` the fragments of f32 input are tf32."""
    planes = RUDA_DIM // PLANE_DIM
    p = UNIT_POS // PLANE_DIM
    A_OUTER = A_TILE[0]
    A_INNER = A_TILE[1]
    B_OUTER = B_TILE[0]
    B_INNER = B_TILE[1]
    O_OUTER = O_TILE[0]
    O_INNER = O_TILE[1]
    sa = SharedMemory(In, 4 * A_OUTER * (A_INNER + PAD))
    sb = SharedMemory(In, 4 * B_OUTER * (B_INNER + PAD))
    so = SharedMemory(Acc, 4 * O_OUTER * (O_INNER + PAD))
    i = UNIT_POS
    while i < planes * A_OUTER * A_INNER:
        row = i // A_INNER
        sa[row * (A_INNER + PAD) + i % A_INNER] = a[i]
        i += RUDA_DIM
    i = UNIT_POS
    while i < planes * B_OUTER * B_INNER:
        row = i // B_INNER
        sb[row * (B_INNER + PAD) + i % B_INNER] = b[i]
        i += RUDA_DIM
    sync_units()
    ma = cmma.Matrix(cmma.A, M, N, K, cmma.tf32 if TF32 else In, LA)
    mb = cmma.Matrix(cmma.B, M, N, K, cmma.tf32 if TF32 else In, LB)
    acc = cmma.Matrix(cmma.ACCUMULATOR, M, N, K, Acc)
    cmma.fill(acc, 0.0)
    cmma.load(ma, sa, p * u32(A_OUTER * (A_INNER + PAD)), u32(A_INNER + PAD))
    cmma.load(mb, sb, p * u32(B_OUTER * (B_INNER + PAD)), u32(B_INNER + PAD))
    cmma.execute(ma, mb, acc, acc)
    cmma.store(so, p * u32(O_OUTER * (O_INNER + PAD)), acc, u32(O_INNER + PAD), LOUT)
    sync_units()
    i = UNIT_POS
    while i < planes * O_OUTER * O_INNER:
        row = i // O_INNER
        out[i] = so[row * (O_INNER + PAD) + i % O_INNER]
        i += RUDA_DIM


@kernel
def cmma_chain(
    a: Array[In],
    b: Array[In],
    out: Array[f16],
    M: Comptime[int],
    N: Comptime[int],
    K: Comptime[int],
    STEPS: Comptime[int],
    ACC: Comptime[object],
):
    """``out = f16(sum over s of a_s * b_s)``: ``STEPS`` products of row-major tiles (``a`` is
    ``M x (STEPS*K)``, ``b`` is ``(STEPS*K) x N``, both row-major, one plane) accumulated in
    ``ACC`` (f16 or f32) from a filled zero, then cast to an f16 accumulator and stored
    row-major."""
    ma = cmma.Matrix(cmma.A, M, N, K, In, cmma.ROW_MAJOR)
    mb = cmma.Matrix(cmma.B, M, N, K, In, cmma.ROW_MAJOR)
    acc = cmma.Matrix(cmma.ACCUMULATOR, M, N, K, ACC)
    cmma.fill(acc, 0.0)
    for s in range(STEPS):
        cmma.load(ma, a, u32(s * K), u32(STEPS * K))
        cmma.load(mb, b, u32(s * K * N), u32(N))
        cmma.execute(ma, mb, acc, acc)
    half = cmma.cast(acc, f16)
    cmma.store(out, u32(0), half, u32(N), cmma.ROW_MAJOR)


@kernel
def cmma_fill_store(
    out: Array[Acc], value: Acc, M: Comptime[int], N: Comptime[int], K: Comptime[int]
):
    """Every element of one plane's ``M x N`` accumulator, filled with ``value``, stored
    row-major with a stride of ``N + 8``."""
    acc = cmma.Matrix(cmma.ACCUMULATOR, M, N, K, Acc)
    cmma.fill(acc, value)
    cmma.store(out, u32(0), acc, u32(N + 8), cmma.ROW_MAJOR)
