# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""The kernels every device must build and run before it counts as usable
(:mod:`ruda_core.probe`). Kept apart so that importing ruda does not import the kernel language."""

from __future__ import annotations

from .lang import (
    ABSOLUTE_POS,
    RUDA_COUNT,
    RUDA_POS,
    UNIT_POS,
    Array,
    Comptime,
    LocalArray,
    SharedMemory,
    f32,
    kernel,
    sync_units,
    u32,
    u64,
    unroll,
)

__all__ = ["ruda_probe", "ruda_probe_places", "ruda_probe_wide"]


@kernel
def ruda_probe(out: Array[u32], scale: f32) -> None:
    """``out[i] = i * scale + 1``: an integer store, a float multiply and a cast."""
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = u32(f32(i) * scale) + u32(1)


@kernel
def ruda_probe_wide(x: Array[u64], out: Array[u64]) -> None:
    """``out = x * 3 + 1`` in lines of eight u64, the widest vectors ruda writes (512 bits): a
    compiler whose vector ABI does not match its own built-ins fails here and nowhere in the
    first probe (PoCL 3 with LLVM 14 on AMD's AVX-512 CPUs, which that LLVM does not know)."""
    i = ABSOLUTE_POS
    if i < x.len() // 8:
        out.store_line(i, x.load_line(i, 8) * u64(3) + u64(1))


@kernel
def ruda_probe_places(out: Array[u32], UNITS: Comptime[int]):
    """``out[i] = i``, by blocks of two values a unit: each unit ranks its values in the block
    on its counter, one unit turns the counters into places, each unit puts its values at
    their places in shared memory, and the block is copied out from there, cube by cube over
    the blocks: a loop whose barriers cut it into regions, with values held across them (a
    sort's scatter). PoCL 3.0 builds it wrong wherever a block is partial, and Intel's CPU
    runtime did in cubes of 3, 4 and 8 units with its shared arrays declared static."""
    counts = SharedMemory(u32, UNITS)
    placed = SharedMemory(u32, UNITS * 2)
    rank = LocalArray(u32, 2)
    n = out.len()
    block = RUDA_POS
    while block * u32(UNITS * 2) < n:
        start = block * u32(UNITS * 2)
        mine = start + UNIT_POS * u32(2)
        counts[UNIT_POS] = u32(0)
        for j in unroll(range(2)):
            seen = counts[UNIT_POS]
            if mine + u32(j) < n:
                counts[UNIT_POS] = seen + u32(1)
            rank[j] = seen
        sync_units()
        if UNIT_POS == u32(0):
            total = u32(0)
            for p in range(u32(UNITS)):
                count = counts[p]
                counts[p] = total
                total += count
        sync_units()
        for j in unroll(range(2)):
            if mine + u32(j) < n:
                placed[counts[UNIT_POS] + rank[j]] = mine + u32(j)
        sync_units()
        for j in range(2):
            at = u32(j * UNITS) + UNIT_POS
            if start + at < n:
                out[start + at] = placed[at]
        sync_units()
        block += RUDA_COUNT
