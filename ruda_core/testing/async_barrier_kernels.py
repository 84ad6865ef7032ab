# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""Kernels of asynchronous barriers and bulk copies (``mbarrier``) that the conformance suite
runs on every device that has them and the compile tests build for CUDA.

Cube ``c`` sums ``STAGES`` tiles of ``TILE`` elements of its own part of ``x`` (tile ``s`` is
``x[(c * STAGES + s) * TILE ..]``) into ``out[c * TILE ..]``: unit ``u`` adds element ``u`` of
every tile, in stage order. Tiles are staged through a ring of ``SLOTS`` shared slots, each
with a *full* barrier that one unit arms with the tile's bytes and fills by ``PIECES`` bulk
copies, and an *empty* barrier every unit arrives on (arrivals alone, no bytes) when it has read
the slot, which the producing unit waits on before it refills the slot.
"""

from __future__ import annotations

from ruda_core.lang import (
    RUDA_POS,
    UNIT_POS,
    Array,
    Comptime,
    ElemVar,
    Numeric,
    SharedMemory,
    kernel,
    mbarrier,
    sync_units,
    u32,
)

__all__ = ["T", "barrier_arrivals", "staged_round_trip", "staged_tiles"]

#: The element of the staged tiles.
T = ElemVar("T", Numeric)


@kernel
def staged_tiles(
    x: Array[T],
    out: Array[T],
    STAGES: Comptime[int],
    SLOTS: Comptime[int],
    TILE: Comptime[int],
    PIECES: Comptime[int],
    NBYTES: Comptime[int],
):
    """``out[c * TILE + u] = sum over s of x[(c * STAGES + s) * TILE + u]``, in stage order, for
    cubes of ``TILE`` units (see the module docstring); ``NBYTES`` is the size of ``T``."""
    tiles = SharedMemory(T, SLOTS * TILE)
    full = mbarrier.Barriers(SLOTS)
    empty = mbarrier.Barriers(SLOTS)
    piece = TILE // PIECES
    first = RUDA_POS * u32(STAGES * TILE)
    if UNIT_POS == 0:
        for k in range(SLOTS):
            mbarrier.init(full, k, 1)
            mbarrier.init(empty, k, TILE)
    sync_units()
    if UNIT_POS == 0:  # the first SLOTS stages
        for s in range(SLOTS):
            mbarrier.arrive_expect_tx(full, s, u32(TILE * NBYTES))
            for p in range(PIECES):
                at = u32(s * TILE + p * piece)
                mbarrier.bulk_copy(tiles, at, x, first + at, u32(piece), full, s)
    acc = T(0)
    for s in range(STAGES):
        slot = u32(s % SLOTS)
        use = u32((s // SLOTS) % 2)  # the parity of the slot's use number s // SLOTS
        mbarrier.wait(full, slot, use)
        acc += tiles[slot * u32(TILE) + UNIT_POS]
        mbarrier.arrive(empty, slot)
        if UNIT_POS == 0 and s + SLOTS < STAGES:  # refill the slot with stage s + SLOTS
            mbarrier.wait(empty, slot, use)
            mbarrier.arrive_expect_tx(full, slot, u32(TILE * NBYTES))
            for p in range(PIECES):
                at = slot * u32(TILE) + u32(p * piece)
                src = first + u32((s + SLOTS) * TILE + p * piece)
                mbarrier.bulk_copy(tiles, at, x, src, u32(piece), full, slot)
    out[RUDA_POS * u32(TILE) + UNIT_POS] = acc


@kernel
def barrier_arrivals(out: Array[u32], ROUNDS: Comptime[int], UNITS: Comptime[int]):
    """Arrivals without bytes: in each of ``ROUNDS`` rounds every unit writes its round number
    into a shared word of its own and arrives; unit 0 waits for the round's phase and adds up
    the words, so ``out[c]`` is ``UNITS * (0 + 1 + … + ROUNDS - 1)`` in cubes of ``UNITS``
    units (a phase completes only
    when every unit has arrived, after its write)."""
    words = SharedMemory(u32, UNITS)
    done = mbarrier.Barriers(1)
    if UNIT_POS == 0:
        mbarrier.init(done, 0, UNITS)
    sync_units()
    total = u32(0)
    for r in range(ROUNDS):
        words[UNIT_POS] = u32(r)
        mbarrier.arrive(done, 0)
        if UNIT_POS == 0:
            mbarrier.wait(done, 0, u32(r % 2))
            for k in range(UNITS):
                total += words[k]
        sync_units()  # the words are read before the next round writes them
    if UNIT_POS == 0:
        out[RUDA_POS] = total


@kernel
def staged_round_trip(
    x: Array[T], out: Array[T], TILE: Comptime[int], STAGES: Comptime[int], NBYTES: Comptime[int]
):
    """``out[i] = 2 * x[i] + 1`` over ``STAGES`` tiles of ``TILE`` elements per cube, in cubes
    of ``TILE`` units: each tile comes in by a bulk copy, every unit writes its element of the
    result into one of two shared slots, fences, and after a barrier unit 0 stores the slot back
    by a bulk store in a group of its own, waiting (``bulk_wait(1)``) before a slot is written
    again two stages later."""
    tile = SharedMemory(T, TILE)
    results = SharedMemory(T, 2 * TILE)
    full = mbarrier.Barriers(1)
    if UNIT_POS == 0:
        mbarrier.init(full, 0, 1)
    sync_units()
    first = RUDA_POS * u32(STAGES * TILE)
    for s in range(STAGES):
        if UNIT_POS == 0:
            mbarrier.arrive_expect_tx(full, 0, u32(TILE * NBYTES))
            mbarrier.bulk_copy(tile, u32(0), x, first + u32(s * TILE), u32(TILE), full, 0)
        mbarrier.wait(full, 0, u32(s % 2))
        slot = u32((s % 2) * TILE)
        if UNIT_POS == 0:
            mbarrier.bulk_wait(1)  # the store of two stages ago has read the slot
        sync_units()
        results[slot + UNIT_POS] = tile[UNIT_POS] * T(2) + T(1)
        mbarrier.fence_shared()
        sync_units()  # the tile is read and the results are written and fenced
        if UNIT_POS == 0:
            mbarrier.bulk_store(out, first + u32(s * TILE), results, slot, u32(TILE))
            mbarrier.bulk_commit()
    if UNIT_POS == 0:
        mbarrier.bulk_wait(0)
