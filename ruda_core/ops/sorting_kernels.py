# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""The kernels of :mod:`.sorting`'s least-significant-digit radix sort, in the kernel language.

Keys are unsigned integers ``Key`` (``u32`` for 32-bit data, ``u64`` for 64-bit data) whose
order is the data's (:func:`radix_keys`): unsigned data as it is, signed data with the sign bit
flipped, floats with the sign bit set on non-negative values and every bit flipped on negative
ones, both zeros as one key (so that ``-0.0`` and ``0.0`` keep their input order, as NumPy's
stable sort does) and every NaN as the largest key (NumPy sorts NaN last). Each pass of 8 bits
(``shift``) runs :func:`radix_histogram` (per-block counts of each digit, digit-major: ``counts[d
* blocks + b]``), an exclusive scan of those counts (:mod:`.scan`), then :func:`radix_scatter`,
which moves each key (and its value: an index) to its digit's offset plus its rank among the
equal digits before it, so every pass is stable and so is the sort.

A block is ``UNITS * ITEMS`` keys, taken by one cube in ``ITEMS`` rounds of ``UNITS``
consecutive keys. In a round, each unit finds the lanes of its plane holding its digit with 8
ballots (one per bit), so its rank in the plane is the count of those lanes below it and the
plane's lowest such lane publishes the plane's count; one unit per digit then turns the planes'
counts into offsets in plane order, continuing the block's running offset of that digit. The
keys so ranked are placed in shared memory in digit order, and the block is then written out
from there, each digit's keys to consecutive places of the output. On a
device without planes (``BALLOT`` false) every unit is a plane of its own. Launch shapes and
checks are :mod:`.sorting`'s; nothing here checks arguments.
"""

from __future__ import annotations

from ..lang import (
    PLANE_DIM,
    RUDA_COUNT,
    RUDA_POS,
    UNIT_POS,
    UNIT_POS_PLANE,
    Array,
    Comptime,
    ElemVar,
    Numeric,
    SharedMemory,
    atomic_add,
    bitcast,
    grid_stride,
    i64,
    isnan,
    kernel,
    plane_ballot,
    popcount,
    sync_units,
    u32,
    u64,
    unroll,
)
from .cube_fold import cube_exclusive_sum, cube_reduce

__all__ = [
    "DIGITS",
    "Key",
    "radix_gather",
    "radix_histogram",
    "radix_keys",
    "radix_scatter",
    "radix_unkeys",
]

#: The values of one digit (8 bits per pass).
DIGITS = 256
#: The unsigned key a sort orders.
Key = ElemVar("Key", [u32, u64])
#: The element an index is written as: ``u32`` between passes, ``i64`` in ``argsort``'s result.
Index = ElemVar("Index", [u32, i64])


@kernel
def radix_keys(
    x: Array[Numeric],
    keys: Array[Key],
    index: Array[u32],
    n: u32,
    SIGN: Comptime[int],
    KIND: Comptime[str],
    INDEX: Comptime[bool],
):
    """``keys[i]``: the order-preserving key of ``x[i]`` (``KIND`` is ``"uint"``, ``"int"`` or
    ``"float"``; ``SIGN`` the key's top bit); ``index[i] = i`` with ``INDEX``."""
    for i in grid_stride(n):
        v = x[i]
        bits = bitcast(Key, v)
        if KIND == "int":
            bits = bits ^ Key(SIGN)
        elif KIND == "float":
            if isnan(v):
                bits = Key(SIGN) | (Key(SIGN) - Key(1))
            elif v == 0:
                bits = Key(SIGN)
            elif bits >= Key(SIGN):
                bits = bits ^ (Key(SIGN) | (Key(SIGN) - Key(1)))
            else:
                bits = bits | Key(SIGN)
        keys[i] = bits
        if INDEX:
            index[i] = i


@kernel
def radix_histogram(
    keys: Array[Key],
    counts: Array[u32],
    n: u32,
    shift: u32,
    blocks: u32,
    UNITS: Comptime[int],
    ITEMS: Comptime[int],
):
    """``counts[d * blocks + b]``: the keys of block ``b`` whose digit at ``shift`` is ``d``."""
    hist = SharedMemory(u32, DIGITS)
    b = RUDA_POS
    while b < blocks:
        for d in range(UNIT_POS, u32(DIGITS), u32(UNITS)):
            hist[d] = u32(0)
        sync_units()
        start = b * u32(UNITS * ITEMS)
        for j in unroll(range(ITEMS)):
            i = start + u32(j * UNITS) + UNIT_POS
            if i < n:
                atomic_add(hist, u32((keys[i] >> Key(shift)) & Key(DIGITS - 1)), u32(1))
        sync_units()
        for d in range(UNIT_POS, u32(DIGITS), u32(UNITS)):
            counts[d * blocks + b] = hist[d]
        sync_units()
        b += RUDA_COUNT


@kernel
def radix_scatter(
    keys: Array[Key],
    keys_out: Array[Key],
    values: Array[u32],
    values_out: Array[Index],
    counts: Array[u32],
    offsets: Array[u32],
    n: u32,
    shift: u32,
    blocks: u32,
    UNITS: Comptime[int],
    ITEMS: Comptime[int],
    PLANES: Comptime[int],
    BALLOT: Comptime[bool],
    VALUES: Comptime[bool],
    CUBE: Comptime[bool],
):
    """Each key of block ``b`` (and its value, with ``VALUES``) moved to ``offsets[d * blocks +
    b]`` plus its stable rank among the block's keys of digit ``d`` (``counts`` holds the block's
    digit counts). The block is first ordered by digit in shared memory, then written out in
    that order, so that consecutive units write consecutive elements of each digit's run.
    ``PLANES`` is the cube's plane count (its unit count without ``BALLOT``); ``CUBE`` says
    whether cube-wide sums go through planes."""
    slots = SharedMemory(u32, PLANES * DIGITS)
    base = SharedMemory(u32, DIGITS)
    first = SharedMemory(u32, DIGITS)
    dest = SharedMemory(u32, DIGITS)
    stage = SharedMemory(Key, UNITS * ITEMS)
    staged = SharedMemory(u32, UNITS * ITEMS if VALUES else 1)
    plane = UNIT_POS // PLANE_DIM if BALLOT else UNIT_POS
    below = (u32(1) << UNIT_POS_PLANE) - u32(1) if BALLOT else u32(0)
    b = RUDA_POS
    while b < blocks:
        # where each digit's keys start in the block's digit order, and in the output
        carry = u32(0)
        for chunk in range(0, DIGITS, UNITS):
            d = u32(chunk) + UNIT_POS
            count = counts[d * blocks + b] if d < u32(DIGITS) else u32(0)
            at = cube_exclusive_sum(count, CUBE, UNITS) + carry
            carry += cube_reduce(count, "sum", CUBE, UNITS)
            if d < u32(DIGITS):
                first[d] = at
                base[d] = at
                dest[d] = offsets[d * blocks + b]
        start = b * u32(UNITS * ITEMS)
        for j in range(ITEMS):
            for s in range(UNIT_POS, u32(PLANES * DIGITS), u32(UNITS)):
                slots[s] = u32(0)
            i = start + u32(j * UNITS) + UNIT_POS
            valid = i < n
            key = keys[i] if valid else Key(0)
            digit = u32((key >> Key(shift)) & Key(DIGITS - 1))
            rank = u32(0)
            count = u32(1)
            if BALLOT:
                same = plane_ballot(valid)
                for bit in unroll(range(8)):
                    set_ = (digit >> u32(bit)) & u32(1) == u32(1)
                    votes = plane_ballot(set_)
                    same = same & (votes if set_ else ~votes)
                rank = popcount(same & below)
                count = popcount(same)
            sync_units()
            slot = plane * u32(DIGITS) + digit
            if valid and rank == u32(0):
                slots[slot] = count
            sync_units()
            for d in range(UNIT_POS, u32(DIGITS), u32(UNITS)):
                run = base[d]
                for p in range(u32(PLANES)):
                    c = slots[p * u32(DIGITS) + d]
                    slots[p * u32(DIGITS) + d] = run
                    run += c
                base[d] = run
            sync_units()
            if valid:
                q = slots[slot] + rank
                stage[q] = key
                if VALUES:
                    staged[q] = values[i]
            sync_units()
        held = min(u32(UNITS * ITEMS), n - start)
        for j in range(ITEMS):
            q = u32(j * UNITS) + UNIT_POS
            if q < held:
                key = stage[q]
                digit = u32((key >> Key(shift)) & Key(DIGITS - 1))
                to = dest[digit] + q - first[digit]
                keys_out[to] = key
                if VALUES:
                    values_out[to] = Index(staged[q])
        sync_units()
        b += RUDA_COUNT


@kernel
def radix_gather(x: Array[Numeric], index: Array[u32], out: Array[Numeric], n: u32):
    """``out[i] = x[index[i]]``."""
    for i in grid_stride(n):
        out[i] = x[index[i]]


@kernel
def radix_unkeys(keys: Array[Key], out: Array[Numeric], n: u32, SIGN: Comptime[int]):
    """``out[i]``: the integer whose key :func:`radix_keys` made ``keys[i]`` (``SIGN`` 0 for
    unsigned data)."""
    for i in grid_stride(n):
        out[i] = bitcast(Numeric, keys[i] ^ Key(SIGN))
