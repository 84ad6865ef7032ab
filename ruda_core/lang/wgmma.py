"""Warpgroup matrix multiply in kernels, after Hopper's ``wgmma.mma_async`` (CUTLASS's GMMA): a
warpgroup of 128 units multiplies tiles of shared memory into a ``64 x N`` ``f32`` accumulator
it holds as a whole, asynchronously.

::

    from ruda_core.lang import SharedMemory, bf16, f32, sync_units, wgmma

    acc = wgmma.Accumulator(128)               # 64 x 128 f32, per warpgroup
    wgmma.fill(acc, 0.0)
    ... copy a 64 x 64 tile of A and a 64 x 128 tile of B into swizzled shared memory ...
    sync_units()
    wgmma.fence()
    for kk in unroll(range(4)):                # 4 products of depth 16
        wgmma.mma_async(acc, sa, a_at + 16 * kk, sb, b_at + 1024 * kk, 4096)
    wgmma.commit()
    wgmma.wait(0)                              # the products are in acc
    wgmma.store(out, offset, acc, stride, rows, cols)

* ``wgmma.Accumulator(N)`` declares a ``64 x N`` ``f32`` accumulator (``N`` a compile-time
  multiple of 8 from 8 to 256), bound to a name assigned once. Warpgroup ``g`` (units ``128g``
  to ``128g + 127`` of the cube) has its own; the cube's unit count must be a multiple of 128.
* ``wgmma.fill(acc, v)`` sets every element to ``v``.
* ``wgmma.fence()`` must come between any write of the accumulator (``fill``) or of the operand
  tiles (after the ``sync_units()`` that publishes other units' copies) and the next
  ``mma_async``.
* ``wgmma.mma_async(acc, a, a_at, b, b_at, block)`` queues ``acc += A @ B``: ``A`` is ``64 x 16``
  and ``B`` ``16 x N``, both read from ``SharedMemory`` of ``bf16`` or ``f16`` laid out in the
  128-byte swizzle (below), products exact, sums in ``f32``. ``block`` is a compile-time int.
* ``wgmma.commit()`` closes the warpgroup's open group of products; ``wgmma.wait(n)`` (``n`` a
  compile-time int from 0 to 7) returns when at most ``n`` closed groups are unfinished.
* ``wgmma.store(out, offset, acc, stride, rows, cols)`` writes element ``(r, c)`` to
  ``out[offset + r * stride + c]`` (a global array or ``SharedMemory`` of ``f32``) where
  ``r < rows`` and ``c < cols``: an epilogue can stage the tile in shared memory.
* ``wgmma.swizzle_line(i)`` is the stored position of 16-byte line ``i`` (8 elements) of a
  swizzled shared array: ``i ^ ((i >> 3) & 7)``, for ``pipeline.copy_async`` to fill stages.

**The shared layout.** A swizzled array starts 1024-byte aligned (ruda aligns every shared array
that ``mma_async`` reads) and is read in rows of 64 elements (128 bytes): 16-byte chunk ``c`` of
row ``r`` lives at chunk ``c ^ (r % 8)``. Logical element ``e`` (row ``e // 64``, column
``e % 64``) is stored at ``e ^ (((e >> 6) & 7) << 3)``. ``A`` is K-major: ``A[i, kk]`` is logical
element ``a_at + 64 * i + kk``, so a 64 x 64 tile of A (rows of 64 k) holds four operands at
``a_at = tile + 16 * s``; ``a_at % 16 == 0`` and ``a_at % 512 < 64``. ``B`` is N-major (a
row-major ``B`` copied as is): blocks of 64 columns ``block`` elements apart, each of rows of 64
columns: ``B[kk, j]`` is logical element ``b_at + block * (j // 64) + 64 * kk + j % 64``; a
block of 64 k-rows holds four operands at ``b_at = tile + 1024 * s``; ``b_at`` and ``block`` are
multiples of 512.

Between ``mma_async`` and the ``wait`` that completes its group the kernel must not touch the
accumulator nor write the operand tiles, and it must wait for every group before it ends. The
NumPy device checks each of these rules and raises, naming the kernel. A device without
``Feature.WARPGROUP_MMA`` (on CUDA, compute capability 9.0 alone: ``sm_90a``) refuses the kernel
with ``UnsupportedFeature``. The exact meaning is in :mod:`ruda_core.ir.ops`. This module builds
no IR; its names are markers the front end recognises.
"""

from __future__ import annotations

from .builtins import Intrinsic

__all__ = [
    "Accumulator",
    "commit",
    "fence",
    "fill",
    "mma_async",
    "store",
    "swizzle_line",
    "wait",
]

Accumulator = Intrinsic("wgmma.Accumulator")
fill = Intrinsic("wgmma.fill")
fence = Intrinsic("wgmma.fence")
mma_async = Intrinsic("wgmma.mma_async")
commit = Intrinsic("wgmma.commit")
wait = Intrinsic("wgmma.wait")
store = Intrinsic("wgmma.store")
swizzle_line = Intrinsic("wgmma.swizzle_line")
