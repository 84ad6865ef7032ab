"""Asynchronous barriers in shared memory and bulk copies that complete on them, in kernels,
after Hopper's ``mbarrier`` and the 1-D form of its tensor memory accelerator
(``cp.async.bulk``; CUTLASS's ``ClusterTransactionBarrier`` and ``SM90_BULK_COPY_G2S``).

::

    from ruda_core.lang import UNIT_POS, mbarrier, sync_units

    full = mbarrier.Barriers(2)                   # a ring of two barriers, per cube
    if UNIT_POS == 0:
        mbarrier.init(full, 0, 1)                 # one arrival (with its bytes) per phase
        mbarrier.init(full, 1, 1)
    sync_units()                                  # the barriers are ready for every unit
    for s in range(STAGES):
        slot = s % 2
        if UNIT_POS == 0:                         # the producer: one unit
            mbarrier.arrive_expect_tx(full, slot, TILE * 4)
            mbarrier.bulk_copy(tiles, slot * TILE, x, s * TILE, TILE, full, slot)
        mbarrier.wait(full, slot, (s // 2) % 2)   # the tile of stage s is in tiles
        ... read tiles[slot * TILE ..] ...
        sync_units()                              # everybody is done with the slot

* ``mbarrier.Barriers(n)`` declares ``n`` barriers (a compile-time int ``>= 1``) in the cube's
  shared memory, one 8-byte word each, bound to a name assigned once. Barrier ``i`` of
  ``bars`` is named by the pair ``bars, i`` in the calls below. The words are the barriers'
  state: the kernel touches them through these calls alone.
* ``mbarrier.init(bars, i, count)`` by one unit starts the barrier's phase 0 expecting
  ``count`` arrivals (1 to 2**20 - 1). Other units use it after a following ``sync_units()``.
* ``mbarrier.arrive(bars, i)``: one arrival of the calling unit.
* ``mbarrier.arrive_expect_tx(bars, i, nbytes)``: the phase also waits for ``nbytes`` bytes of
  bulk copies; then one arrival.
* ``mbarrier.bulk_copy(dst, dst_at, src, src_at, n, bars, i)`` copies the ``n`` elements
  ``src[src_at ..]`` of a global array to ``dst[dst_at ..]`` of a ``SharedMemory`` of the same
  element type, asynchronously; its ``n * nbytes`` bytes complete on barrier ``i``. Both runs
  start 16-byte aligned (ruda aligns a ``SharedMemory`` that a bulk copy writes to 16 bytes) and
  ``n * nbytes`` is a multiple of 16.
* ``mbarrier.tensor_copy(dst, dst_at, src, rows, cols, row, col, BOX_ROWS, BOX_COLS, bars, i)``
  copies a 2-D box, the tensor memory accelerator's own form: ``src`` is read as a row-major
  ``rows x cols`` matrix (``rows`` and ``cols`` are ``u32`` parameters of the kernel, from
  which the host builds the copy's tensor map at launch), and its ``BOX_ROWS x BOX_COLS``
  elements from ``(row, col)`` arrive in ``dst`` from ``dst_at`` in the 128-byte swizzle that
  ``wgmma.mma_async`` reads: box row ``r`` fills the 128 bytes from ``dst_at + r * BOX_COLS``,
  its 16-byte chunk ``c`` at chunk ``c ^ (r % 8)``. ``BOX_ROWS`` is a compile-time int from 1
  to 256 and ``BOX_COLS`` elements make 128 bytes (64 of ``bf16``); ``dst_at`` is 1024-byte
  aligned. Elements outside the matrix arrive as zeros, and the whole box's bytes complete on
  barrier ``i``. ``src`` starts 16-byte aligned and a row of it is a multiple of 16 bytes: the
  host refuses the launch otherwise.
* ``mbarrier.wait(bars, i, parity)`` returns when the barrier's phase of that parity (0 or 1)
  has completed; the bulk copies that completed it are then in shared memory for the caller.

Results go back to global memory the same way, in groups per unit, like ``pipeline``'s:

* ``mbarrier.fence_shared()`` after a unit's writes of shared memory that a bulk store will
  read; a ``sync_units()`` after the fences publishes them to the unit that stores.
* ``mbarrier.bulk_store(dst, dst_at, src, src_at, n)`` copies the ``n`` elements
  ``src[src_at ..]`` of a ``SharedMemory`` to ``dst[dst_at ..]`` of a global array, with the
  alignment and size rules of ``bulk_copy``; it joins the unit's open bulk group.
* ``mbarrier.bulk_commit()`` closes the unit's open bulk group.
* ``mbarrier.bulk_wait(n)`` (``n`` a compile-time int from 0 to 7) returns when at most ``n``
  of the unit's closed bulk groups still read their sources: the others' sources may be written
  again. The stores are in global memory when the kernel has ended; wait for every group first.

A phase completes when it has had its ``count`` arrivals and as many bytes of bulk copies as
its ``arrive_expect_tx`` calls announced; the barrier then starts the next phase, of the other
parity. So the ``k``-th use of a barrier (from 0) waits for parity ``k % 2``.

Until the wait that sees a bulk copy's phase complete, the kernel must not read or write its
destination nor write its source, and it must wait for every copy before it ends; until the
``bulk_wait`` that completes a bulk store's group it must not write the store's source, and it
must not touch the store's destination again. The NumPy
device checks these rules and the others of :mod:`ruda_core.ir.ops` and raises, naming the
kernel; it reports a wait that can never return (every unit of the cube waits for arrivals or
bytes that nobody will bring) instead of hanging. A device without ``Feature.ASYNC_BARRIER``
(on CUDA, compute capability 9.0 and later) refuses the kernel with ``UnsupportedFeature``. This
module builds no IR; its names are markers the front end recognises.
"""

from __future__ import annotations

from .builtins import Intrinsic

__all__ = [
    "Barriers",
    "arrive",
    "arrive_expect_tx",
    "bulk_commit",
    "bulk_copy",
    "bulk_store",
    "bulk_wait",
    "fence_shared",
    "init",
    "tensor_copy",
    "wait",
]

Barriers = Intrinsic("mbarrier.Barriers")
init = Intrinsic("mbarrier.init")
arrive = Intrinsic("mbarrier.arrive")
arrive_expect_tx = Intrinsic("mbarrier.arrive_expect_tx")
wait = Intrinsic("mbarrier.wait")
bulk_copy = Intrinsic("mbarrier.bulk_copy")
tensor_copy = Intrinsic("mbarrier.tensor_copy")
fence_shared = Intrinsic("mbarrier.fence_shared")
bulk_store = Intrinsic("mbarrier.bulk_store")
bulk_commit = Intrinsic("mbarrier.bulk_commit")
bulk_wait = Intrinsic("mbarrier.bulk_wait")
