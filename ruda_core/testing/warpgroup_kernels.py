# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""Kernels of warpgroup matrices (``wgmma``) that the conformance suite runs on every device
that has them and the compile tests build for CUDA.

Warpgroup ``w`` of the cube works on its own part of every array (``part = len // GROUPS``), so
a result that mixes warpgroups up is caught. Within a part, ``A`` (``64 x K``) and ``B``
(``K x N``) are row-major from an offset with a row stride, and ``out`` (``64 x N``) likewise:
six ``u32`` launch values in ``at`` (any strides, odd ones included: the tiles are staged into
the swizzled shared layout element by element).
"""

from __future__ import annotations

from ruda_core.lang import (
    UNIT_POS,
    Array,
    Comptime,
    ElemVar,
    Float,
    SharedMemory,
    f32,
    func,
    kernel,
    sync_units,
    u32,
    unroll,
    wgmma,
)

__all__ = [
    "In",
    "stage_a",
    "stage_b",
    "wgmma_groups",
    "wgmma_product",
    "wgmma_through_shared",
]

#: The element of A and B (bf16 or f16).
In = ElemVar("In", Float)

#: Logical elements of one 64 x 64 block of A in shared memory.
_A_BLOCK = 64 * 64


@func
def stage_a(sa, base, a, first, lda, K, t):
    """Copy ``A`` (``64 x K`` row-major from ``a[first]``, rows ``lda`` apart) into the
    swizzled shared layout of ``wgmma.mma_async``'s A from ``base``: blocks of 64 columns
    (``64 x 64`` each); unit ``t`` of 128 copies every 128th element."""
    e = t
    while e < 64 * K:
        r = e // K
        k = e % K
        logical = base + (k // 64) * _A_BLOCK + r * 64 + k % 64
        sa[wgmma.swizzle_line(logical // 8) * 8 + logical % 8] = a[first + r * lda + k]
        e += 128


@func
def stage_b(sb, base, b, first, ldb, K, N, t):
    """Copy ``B`` (``K x N`` row-major from ``b[first]``, rows ``ldb`` apart) into the swizzled
    shared layout of B from ``base``: blocks of 64 columns, ``K * 64`` elements apart."""
    e = t
    while e < K * N:
        k = e // N
        j = e % N
        logical = base + (j // 64) * (K * 64) + k * 64 + j % 64
        sb[wgmma.swizzle_line(logical // 8) * 8 + logical % 8] = b[first + k * ldb + j]
        e += 128


@kernel
def wgmma_product(
    a: Array[In],
    b: Array[In],
    out: Array[f32],
    at: Array[u32],
    N: Comptime[int],
    K: Comptime[int],
    GROUPS: Comptime[int],
):
    """``out = A @ B`` of each warpgroup's part (see the module docstring): ``K / 16`` products
    in one group, then one wait."""
    A_SIZE = max(1, K // 64 + (K % 64 > 0)) * _A_BLOCK
    B_SIZE = max(1, N // 64 + (N % 64 > 0)) * K * 64
    sa = SharedMemory(In, GROUPS * A_SIZE)
    sb = SharedMemory(In, GROUPS * B_SIZE)
    w = UNIT_POS // 128
    t = UNIT_POS % 128
    stage_a(sa, w * A_SIZE, a, w * (a.len() // GROUPS) + at[0], at[1], K, t)
    stage_b(sb, w * B_SIZE, b, w * (b.len() // GROUPS) + at[2], at[3], K, N, t)
    acc = wgmma.Accumulator(N)
    wgmma.fill(acc, 0.0)
    wgmma.fence()
    sync_units()
    for s in unroll(range(K // 16)):
        a_at = w * A_SIZE + (s // 4) * _A_BLOCK + (s % 4) * 16
        wgmma.mma_async(acc, sa, a_at, sb, w * B_SIZE + s * 1024, K * 64)
    wgmma.commit()
    wgmma.wait(0)
    wgmma.store(out, w * (out.len() // GROUPS) + at[4], acc, at[5], u32(64), u32(N))


@kernel
def wgmma_groups(
    a: Array[In],
    b: Array[In],
    out: Array[f32],
    N: Comptime[int],
    K: Comptime[int],
):
    """Two accumulators, two groups in flight: ``out[0] = A @ B`` over the first half of
    ``K`` and ``out[1]`` over the second half, each half in its own group; ``wait(1)`` then
    completes the first group alone, whose accumulator is stored before ``wait(0)``. One
    warpgroup; ``A`` is ``64 x K`` and ``B`` ``K x N``, dense row-major; ``out`` is two dense
    ``64 x N`` tiles."""
    A_SIZE = max(1, K // 64 + (K % 64 > 0)) * _A_BLOCK
    B_SIZE = max(1, N // 64 + (N % 64 > 0)) * K * 64
    sa = SharedMemory(In, A_SIZE)
    sb = SharedMemory(In, B_SIZE)
    t = UNIT_POS
    stage_a(sa, u32(0), a, u32(0), u32(K), K, t)
    stage_b(sb, u32(0), b, u32(0), u32(N), K, N, t)
    first = wgmma.Accumulator(N)
    second = wgmma.Accumulator(N)
    wgmma.fill(first, 0.0)
    wgmma.fill(second, 0.0)
    wgmma.fence()
    sync_units()
    HALF = K // 32
    for s in unroll(range(HALF)):
        wgmma.mma_async(first, sa, (s // 4) * _A_BLOCK + (s % 4) * 16, sb, s * 1024, K * 64)
    wgmma.commit()
    for s in unroll(range(HALF, 2 * HALF)):
        wgmma.mma_async(second, sa, (s // 4) * _A_BLOCK + (s % 4) * 16, sb, s * 1024, K * 64)
    wgmma.commit()
    wgmma.wait(1)
    wgmma.store(out, u32(0), first, u32(N), u32(64), u32(N))
    wgmma.wait(0)
    wgmma.store(out, u32(64 * N), second, u32(N), u32(64), u32(N))


@kernel
def wgmma_through_shared(
    a: Array[In], b: Array[In], out: Array[In], N: Comptime[int], K: Comptime[int]
):
    """``out = In(A @ B)``, one warpgroup: the accumulator is stored into ``SharedMemory`` with
    rows ``N + 1`` apart (an odd stride), and every unit converts its share to ``In`` (an
    epilogue in shared memory). ``A`` is ``64 x K`` and ``B`` ``K x N``, dense row-major."""
    A_SIZE = max(1, K // 64 + (K % 64 > 0)) * _A_BLOCK
    B_SIZE = max(1, N // 64 + (N % 64 > 0)) * K * 64
    sa = SharedMemory(In, A_SIZE)
    sb = SharedMemory(In, B_SIZE)
    so = SharedMemory(f32, 64 * (N + 1))
    t = UNIT_POS
    stage_a(sa, u32(0), a, u32(0), u32(K), K, t)
    stage_b(sb, u32(0), b, u32(0), u32(N), K, N, t)
    acc = wgmma.Accumulator(N)
    wgmma.fill(acc, 0.0)
    wgmma.fence()
    sync_units()
    for s in unroll(range(K // 16)):
        wgmma.mma_async(acc, sa, (s // 4) * _A_BLOCK + (s % 4) * 16, sb, s * 1024, K * 64)
    wgmma.commit()
    wgmma.wait(0)
    wgmma.store(so, u32(0), acc, u32(N + 1), u32(64), u32(N))
    sync_units()
    e = t
    while e < 64 * N:
        out[e] = In(so[e // N * (N + 1) + e % N])
        e += 128
