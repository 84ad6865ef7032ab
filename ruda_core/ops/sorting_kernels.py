# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""The kernels of :mod:`.sorting`'s least-significant-digit radix sort, in the kernel language.

Keys are unsigned integers ``Key`` (``u32`` for 32-bit data, ``u64`` for 64-bit data) whose
order is the data's (:func:`radix_keys`): unsigned data as it is, signed data with the sign bit
flipped, floats with the sign bit set on non-negative values and every bit flipped on negative
ones, both zeros as one key (so that ``-0.0`` and ``0.0`` keep their input order, as NumPy's
stable sort does) and every NaN as the largest key (NumPy sorts NaN last); :func:`radix_keys`
notes a ``-0.0`` or NaN in the sort's state, whose keys alone cannot give their floats back.
An 8- or 16-bit element is read and written as its unsigned bits, its key made the same way
in the low bits of a ``u32`` (one pass, or two).
Each pass of 8 bits (``shift``) runs :func:`radix_scatter`, which moves each key (and its
value: an index) to its digit's place in the output plus its rank among the equal digits
before it, so every pass is stable and so is the sort. A digit's place in the output comes, in
passes, from :func:`radix_histogram` (per-block counts of each digit, digit-major: ``counts[d *
blocks + b]``) and an exclusive scan of those counts (:mod:`.scan`); chained, from every pass'
histogram that :func:`radix_keys` counts and the counts each block publishes for the blocks
after it (a decoupled look-back: blocks are taken in order, so the ones before a block have
started and publish without waiting on it); there a pass whose digit is the same for every key
moves nothing, and each kernel reads the keys (and indices) from whichever of their two buffers
the moving passes before it left them in (:func:`_moving`). The last moving pass writes the
sorted elements (or ``argsort``'s indices) in place of keys.

A block is ``UNITS * ITEMS`` keys: each plane takes a run of ``PLANE_DIM * ITEMS`` consecutive
keys, one plane-wide step of consecutive keys at a time. In a step, each unit finds the lanes
of its plane holding its digit with 8 ballots (one per bit), so its rank is the count of those
lanes below it plus the plane's counter of that digit, which the step's lowest such lane then
advances. One unit per digit then turns the planes' counters into places in plane order,
after the block's keys of smaller digits. The keys so ranked are placed in shared memory in
digit order, and the block is then written out from there, each digit's keys to consecutive
places of the output. On a device without planes (``BALLOT`` false) every unit is a plane of
its own. Each kernel states its cube of exactly ``UNITS`` units (``cube_units``), so that CUDA
keeps its registers per unit low enough for a cube of 1024 units to launch, and its warp
intrinsics need no convergence checks. Launch shapes and checks are :mod:`.sorting`'s; nothing
here checks arguments.
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
    LocalArray,
    Numeric,
    SharedMemory,
    atomic_add,
    atomic_load,
    atomic_or,
    atomic_store,
    bitcast,
    cube_units,
    func,
    grid_stride,
    i64,
    isnan,
    kernel,
    plane_ballot,
    popcount,
    sync_plane,
    sync_units,
    u32,
    u64,
    unroll,
)
from .cube_fold import cube_exclusive_sum, cube_reduce

__all__ = [
    "DIGITS",
    "Key",
    "radix_histogram",
    "radix_keys",
    "radix_scatter",
    "state_size",
]

#: The values of one digit (8 bits per pass).
DIGITS = 256
#: Where in a sort's state (:func:`state_size`) the flag of a ``-0.0`` or NaN is.
FLAG = 0
#: A block's published count of one digit (the low 30 bits) in a look-back pass: of its own
#: keys (``PART``), or of its own and all blocks' before it (``DONE``); 0 before it publishes.
PART = 1 << 30
DONE = 2 << 30
COUNT = PART - 1
#: The unsigned key a sort orders.
Key = ElemVar("Key", [u32, u64])
#: The element an index is written as: ``u32`` between passes, ``i64`` in ``argsort``'s result.
Index = ElemVar("Index", [u32, i64])
#: The bits of an f16 infinity without its sign: those of a NaN are more.
F16_INFINITY = 0x7C00
#: The top bit of a 32-bit element: a ``SIGN`` below it is an 8- or 16-bit element's, which the
#: kernels read and write as its unsigned bits.
NARROW = 1 << 31


def state_size(passes: int) -> int:
    """The ``u32`` words of a sort's state, zeros before :func:`radix_keys`: the flag
    (``FLAG``), each pass' digit of the first key (``1 + pass``), each pass' ticket of blocks
    (``1 + passes + pass``), and each pass' histogram of digits (``1 + 2 * passes + pass *
    DIGITS + digit``)."""
    return 1 + 2 * passes + passes * DIGITS


@func
def _key_of(v: Numeric, SIGN: Comptime[int], KIND: Comptime[str]):
    """The order-preserving key of ``v`` (``KIND`` is ``"uint"``, ``"int"`` or ``"float"``;
    ``SIGN`` the element's top bit), as the module's account gives it; an element of 8 or 16
    bits is read as its unsigned bits, its key in the low bits of a ``u32``."""
    bits = Key(v) if SIGN < NARROW else bitcast(Key, v)
    if KIND == "int":
        bits = bits ^ Key(SIGN)
    elif KIND == "float":
        if SIGN < NARROW:  # f16: a NaN or a zero found from its bits
            magnitude = bits & Key(SIGN - 1)
            bits = _float_key(bits, magnitude > Key(F16_INFINITY), magnitude == Key(0), SIGN)
        else:
            bits = _float_key(bits, isnan(v), v == 0, SIGN)
    return bits


@func
def _ambiguous(v: Numeric, SIGN: Comptime[int]):
    """Whether the float ``v`` is a NaN or ``-0.0``, whose key does not give its bits back."""
    if SIGN < NARROW:
        found = (u32(v) & u32(SIGN - 1)) > u32(F16_INFINITY) or u32(v) == u32(SIGN)
    else:
        found = isnan(v) or (v == 0 and bitcast(Key, v) != Key(0))
    return found


@func
def _float_key(bits: Key, nan: bool, zero: bool, SIGN: Comptime[int]):
    """The key of a float of bits ``bits`` (``SIGN`` its sign bit), a NaN (``nan``) or a zero
    (``zero``) or neither: every NaN the largest key, both zeros one key."""
    if nan:
        bits = Key(SIGN) | (Key(SIGN) - Key(1))
    elif zero:
        bits = Key(SIGN)
    elif bits >= Key(SIGN):
        bits = bits ^ (Key(SIGN) | (Key(SIGN) - Key(1)))
    else:
        bits = bits | Key(SIGN)
    return bits


@kernel
def radix_keys(
    x: Array[Numeric],
    keys: Array[Key],
    state: Array[u32],
    status: Array[u32],
    n: u32,
    cleared: u32,
    SIGN: Comptime[int],
    KIND: Comptime[str],
    UNITS: Comptime[int],
    CUBE: Comptime[bool],
    PASSES: Comptime[int],
    HISTOGRAMS: Comptime[bool],
    KEYS: Comptime[bool],
):
    """``keys[i]``: the order-preserving key of ``x[i]`` (:func:`_key_of`), with ``KEYS``.
    Floats also set ``state[FLAG]`` to 1 where ``x`` holds a ``-0.0`` or a NaN (whose keys do
    not give their bits back), one atomic per cube. With ``HISTOGRAMS``, adds each pass' digit
    counts to ``state`` (zeros before, as :func:`state_size` lays it out), notes each pass'
    digit of the first key there, and zeroes ``status[:cleared]``."""
    cube_units(UNITS)
    hist = SharedMemory(u32, PASSES * DIGITS if HISTOGRAMS else 1)
    if HISTOGRAMS:
        for d in range(UNIT_POS, u32(PASSES * DIGITS), u32(UNITS)):
            hist[d] = u32(0)
        for i in grid_stride(cleared):
            status[i] = u32(0)
        sync_units()
    seen = u32(0)
    for i in grid_stride(n):
        v = x[i]
        bits = _key_of(v, SIGN, KIND)
        if KIND == "float" and _ambiguous(v, SIGN):
            seen = u32(1)
        if KEYS:
            keys[i] = bits
        if HISTOGRAMS:
            for k in unroll(range(PASSES)):
                digit = u32((bits >> Key(8 * k)) & Key(DIGITS - 1))
                atomic_add(hist, u32(k * DIGITS) + digit, u32(1))
                if i == u32(0):
                    state[1 + k] = digit
    if KIND == "float":
        found = cube_reduce(seen, "max", CUBE, UNITS)
        if found != u32(0) and UNIT_POS == u32(0):
            atomic_or(state, FLAG, u32(1))
    if HISTOGRAMS:
        sync_units()
        for d in range(UNIT_POS, u32(PASSES * DIGITS), u32(UNITS)):
            if hist[d] != u32(0):
                atomic_add(state, u32(1 + 2 * PASSES) + d, hist[d])


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
    cube_units(UNITS)
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


@func
def _moving(
    state: Array[u32],
    n: u32,
    pass_: u32,
    PASSES: Comptime[int],
    SKIPS: Comptime[bool],
):
    """``(before, after, moves)``: how many passes before ``pass_`` and after it move keys, and
    whether it does (1 or 0). With ``SKIPS`` a pass whose digit is the same for every key
    (``state``'s histogram holds ``n`` in the first key's bin) leaves them where they are;
    without, every pass moves them."""
    before = u32(0)
    after = u32(0)
    moves = u32(1)
    for k in unroll(range(PASSES)):
        m = u32(1)
        if SKIPS:
            bin_ = state[1 + k]
            m = u32(0) if state[u32(1 + 2 * PASSES + k * DIGITS) + bin_] == n else u32(1)
        if u32(k) < pass_:
            before += m
        elif u32(k) > pass_:
            after += m
        else:
            moves = m
    return before, after, moves


@func
def _digit_start(
    count: u32, carry: u32, CHUNK: Comptime[int], CUBE: Comptime[bool], UNITS: Comptime[int]
):
    """``(start, carry)`` for the unit's digit of the chunk of digits from ``CHUNK``, whose keys
    number ``count``: the counts of the chunk's digits before it plus ``carry`` (the chunks'
    before), and the carry for the next chunk (the chunk's total added where one follows).
    Every unit of the cube calls it (cube-wide sums)."""
    start = cube_exclusive_sum(count, CUBE, UNITS) + carry
    if CHUNK + UNITS < DIGITS:
        carry += cube_reduce(count, "sum", CUBE, UNITS)
    return start, carry


@func
def _take(
    src,
    into,
    first: u32,
    width: u32,
    n: u32,
    whole: bool,
    ITEMS: Comptime[int],
    KEYS: Comptime[bool] = False,
    SIGN: Comptime[int] = 0,
    KIND: Comptime[str] = "uint",
):
    """``into[j] = src[first + j * width]`` (with ``KEYS``, its key: :func:`_key_of`) for each
    of the ``ITEMS`` places below ``n``: all of them where ``whole``, the loads then going
    without a check each, all in flight at once."""
    if whole:  # two loops: one test of ``whole`` per call, none per load
        for j in unroll(range(ITEMS)):
            i = first + u32(j) * width
            into[j] = _key_of(src[i], SIGN, KIND) if KEYS else src[i]
    else:
        for j in unroll(range(ITEMS)):
            i = first + u32(j) * width
            if i < n:
                into[j] = _key_of(src[i], SIGN, KIND) if KEYS else src[i]


@func
def _spill(
    keys: Array[Key],
    values: Array[u32],
    stage: Array[Key],
    staged: Array[u32],
    dest: Array[u32],
    filled: u32,
    shift: u32,
    move: bool,
    UNITS: Comptime[int],
    ITEMS: Comptime[int],
):
    """The block's staged keys (and values, where they ``move``), each to ``dest`` of its digit
    plus its place in the stage, in ``keys`` (and ``values``)."""
    for j in unroll(range(ITEMS)):
        q = u32(j * UNITS) + UNIT_POS
        if q < filled:
            key = stage[q]
            to = dest[u32((key >> Key(shift)) & Key(DIGITS - 1))] + q  # (wrapping: q is at
            # least the block's first place of the digit)
            keys[to] = key
            if move:
                values[to] = staged[q]


@func
def _publish(a: Array[u32], b: Array[u32], second: bool, i: u32, word: u32):
    """A block's count ``word`` into ``b[i]`` if ``second``, else ``a[i]``, and the other zeroed
    for the next moving pass."""
    if second:
        atomic_store(b, i, word)
        a[i] = u32(0)
    else:
        atomic_store(a, i, word)
        b[i] = u32(0)


@func
def _look(a: Array[u32], b: Array[u32], second: bool, i: u32) -> u32:
    """A block's published count: ``b[i]`` if ``second``, else ``a[i]`` (0 before it is)."""
    return atomic_load(b, i) if second else atomic_load(a, i)


@func
def _unkey(key: Key, SIGN: Comptime[int], KIND: Comptime[str]):
    """The bits of the element whose key :func:`radix_keys` made ``key``: of any integer, and of
    a float other than ``-0.0`` and NaN."""
    if KIND == "float":
        return key ^ Key(SIGN) if key >= Key(SIGN) else ~key
    if KIND == "int":
        return key ^ Key(SIGN)
    return key


@kernel
def radix_scatter(
    x: Array[Numeric],
    keys: Array[Key],
    keys_alt: Array[Key],
    values: Array[u32],
    values_alt: Array[u32],
    out: Array[Numeric],
    result: Array[Index],
    state: Array[u32],
    counts: Array[u32],
    offsets: Array[u32],
    status: Array[u32],
    status_alt: Array[u32],
    n: u32,
    shift: u32,
    blocks: u32,
    UNITS: Comptime[int],
    ITEMS: Comptime[int],
    PLANES: Comptime[int],
    BALLOT: Comptime[bool],
    VALUES: Comptime[str],
    RESULT: Comptime[bool],
    SIGN: Comptime[int],
    KIND: Comptime[str],
    CUBE: Comptime[bool],
    PASSES: Comptime[int],
    LOOKBACK: Comptime[bool],
):
    """Each key of a block (and its value) moved to its digit's place in the output plus its
    stable rank among the block's keys of that digit. The keys move from ``keys`` to
    ``keys_alt``, or back where an odd number of passes before moved them (:func:`_moving`),
    their values likewise between ``values`` and ``values_alt``; the first moving pass makes
    the keys from ``x`` instead (:func:`_key_of`) and takes a key's place as its value. The
    last moving pass writes the sorted elements into ``out`` instead (each key turned back by
    :func:`_unkey`; in a float sort whose values move, the element of ``x`` at the value), or
    with ``RESULT`` the values into ``result``; where no pass moves keys, the last pass copies
    ``x`` to ``out`` (or fills ``result`` with ``0 .. n-1``). Without ``LOOKBACK``, block ``b``
    is the cube's and its digit ``d`` goes to ``offsets[d * blocks + b]`` (``counts`` holds the
    block's digit counts); with it, blocks are taken in order from the pass' ticket in
    ``state``, and a digit's place is the keys of smaller digits (``state``'s histogram) plus
    those of the blocks before, read back from ``status`` or ``status_alt`` as the keys (zeros
    before; the other one is zeroed for the next moving pass). Values move with ``VALUES``
    ``"all"``, or ``"flagged"`` where ``state[FLAG]`` is not 0, never with ``"none"``; a large
    float sort launches ``"when-flagged"`` (moving them, and running only where the flag is
    set) beside ``"unless-flagged"`` (moving none, running only where it is not), so that the
    common case keeps no registers for values.
    ``PLANES`` is the cube's plane count (its unit count without ``BALLOT``); ``CUBE`` says
    whether cube-wide sums go through planes."""
    cube_units(UNITS)
    ranks = SharedMemory(u32, PLANES * DIGITS)
    first = SharedMemory(u32, DIGITS)
    dest = SharedMemory(u32, DIGITS)
    origin = SharedMemory(u32, DIGITS if LOOKBACK else 1)
    ticket = SharedMemory(u32, 1)
    stage = SharedMemory(Key, UNITS * ITEMS)
    carried = VALUES != "none" and VALUES != "unless-flagged"  # values may move
    staged = SharedMemory(u32, UNITS * ITEMS if carried else 1)
    held = LocalArray(Key, ITEMS)
    rank_of = LocalArray(u32, ITEMS)
    value_of = LocalArray(u32, ITEMS if carried else 1)
    flagged = state[FLAG] != u32(0)
    if (VALUES == "when-flagged" and not flagged) or (VALUES == "unless-flagged" and flagged):
        return
    move = flagged if VALUES == "flagged" else carried
    plane = UNIT_POS // PLANE_DIM if BALLOT else UNIT_POS
    lane = UNIT_POS_PLANE if BALLOT else u32(0)
    width = PLANE_DIM if BALLOT else u32(1)
    below = (u32(1) << lane) - u32(1)
    pass_ = shift // u32(8)
    before, after, moves = _moving(state, n, pass_, PASSES, LOOKBACK)
    back = before % u32(2) == u32(1)
    if moves == u32(0) and before + after == u32(0) and pass_ == u32(PASSES - 1):
        for i in grid_stride(n):  # every key alike: the input's order is the sorted one
            if RESULT:
                result[i] = Index(i)
            else:
                out[i] = x[i]
    b = RUDA_POS if moves != u32(0) else blocks
    if LOOKBACK:
        # where each digit's keys start in the output: the keys of the smaller digits
        carry = u32(0)
        counted = u32(1 + 2 * PASSES) + pass_ * u32(DIGITS)  # this pass' histogram
        for chunk in unroll(range(0, DIGITS, UNITS)):
            d = u32(chunk) + UNIT_POS
            count = state[counted + d] if d < u32(DIGITS) else u32(0)
            at, carry = _digit_start(count, carry, chunk, CUBE, UNITS)
            if d < u32(DIGITS):
                origin[d] = at
        if UNIT_POS == u32(0):
            ticket[0] = atomic_add(state, u32(1 + PASSES) + pass_, u32(1))
        sync_units()
        b = ticket[0] if moves != u32(0) else blocks
    while b < blocks:
        if not LOOKBACK:
            # where each digit's keys start in the block's digit order, and in the output
            carry = u32(0)
            for chunk in unroll(range(0, DIGITS, UNITS)):
                d = u32(chunk) + UNIT_POS
                count = counts[d * blocks + b] if d < u32(DIGITS) else u32(0)
                at, carry = _digit_start(count, carry, chunk, CUBE, UNITS)
                if d < u32(DIGITS):
                    first[d] = at
                    dest[d] = offsets[d * blocks + b] - at  # less the block's own start
        for s in range(UNIT_POS, u32(PLANES * DIGITS), u32(UNITS)):
            ranks[s] = u32(0)
        sync_units()
        start = b * u32(UNITS * ITEMS)
        mine = start + plane * width * u32(ITEMS) + lane
        # the unit's keys (and values) first, all loads in flight at once: the buffers they
        # come from are chosen once for all of them, and a whole block needs no checks
        whole = start + u32(UNITS * ITEMS) <= n
        if not whole:
            for j in unroll(range(ITEMS)):
                held[j] = Key(0)  # the keys past the end, which are never placed
        if before == u32(0):  # the first moving pass makes the keys from the input
            _take(x, held, mine, width, n, whole, ITEMS, True, SIGN, KIND)
            if move:
                for j in unroll(range(ITEMS)):
                    value_of[j] = mine + u32(j) * width
        elif back:
            _take(keys_alt, held, mine, width, n, whole, ITEMS)
            if move:
                _take(values_alt, value_of, mine, width, n, whole, ITEMS)
        else:
            _take(keys, held, mine, width, n, whole, ITEMS)
            if move:
                _take(values, value_of, mine, width, n, whole, ITEMS)
        # each plane ranks its run of keys, a plane-wide step at a time, on its own counters
        for j in unroll(range(ITEMS)):
            valid = mine + u32(j) * width < n
            digit = u32((held[j] >> Key(shift)) & Key(DIGITS - 1))
            rank = u32(0)
            count = u32(1)
            if BALLOT:
                same = plane_ballot(valid)
                for bit in unroll(range(8)):
                    set_ = digit & u32(1 << bit) != u32(0)
                    votes = plane_ballot(set_)
                    same = same & (votes if set_ else ~votes)
                rank = popcount(same & below)
                count = popcount(same)
            slot = plane * u32(DIGITS) + digit
            seen = ranks[slot]
            if BALLOT:
                sync_plane()
            if valid and rank == u32(0):
                ranks[slot] = seen + count
            if BALLOT:
                sync_plane()
            rank_of[j] = seen + rank
        sync_units()
        if LOOKBACK:
            # the block's count of each digit, published, then the counts of the blocks before
            carry = u32(0)
            for chunk in unroll(range(0, DIGITS, UNITS)):
                d = u32(chunk) + UNIT_POS
                total = u32(0)
                if d < u32(DIGITS):
                    for p in range(u32(PLANES)):
                        total += ranks[p * u32(DIGITS) + d]
                    kind = u32(DONE) if b == u32(0) else u32(PART)
                    _publish(status, status_alt, back, b * u32(DIGITS) + d, total | kind)
                at, carry = _digit_start(total, carry, chunk, CUBE, UNITS)
                if d < u32(DIGITS):
                    first[d] = at
                    ahead = u32(0)
                    j = b
                    while j > u32(0):
                        word = _look(status, status_alt, back, (j - u32(1)) * u32(DIGITS) + d)
                        if word != u32(0):  # else the block before has not published yet
                            ahead += word & u32(COUNT)
                            j = u32(0) if word >= u32(DONE) else j - u32(1)
                    if b > u32(0):
                        done = (ahead + total) | u32(DONE)
                        _publish(status, status_alt, back, b * u32(DIGITS) + d, done)
                    dest[d] = origin[d] + ahead - at
        # the planes' counters become the places of their runs in the block's digit order
        for d in range(UNIT_POS, u32(DIGITS), u32(UNITS)):
            run = first[d]
            for p in range(u32(PLANES)):
                c = ranks[p * u32(DIGITS) + d]
                ranks[p * u32(DIGITS) + d] = run
                run += c
        sync_units()
        for j in unroll(range(ITEMS)):
            if mine + u32(j) * width < n:
                digit = u32((held[j] >> Key(shift)) & Key(DIGITS - 1))
                q = ranks[plane * u32(DIGITS) + digit] + rank_of[j]
                stage[q] = held[j]
                if move:
                    staged[q] = value_of[j]
        sync_units()
        filled = min(u32(UNITS * ITEMS), n - start)
        if after != u32(0):  # to the buffers the next moving pass reads
            if back:
                _spill(keys, values, stage, staged, dest, filled, shift, move, UNITS, ITEMS)
            else:
                _spill(keys_alt, values_alt, stage, staged, dest, filled, shift, move, UNITS, ITEMS)
        else:  # the last moving pass: the result
            for j in range(ITEMS):
                q = u32(j * UNITS) + UNIT_POS
                if q < filled:
                    key = stage[q]
                    digit = u32((key >> Key(shift)) & Key(DIGITS - 1))
                    to = dest[digit] + q  # (wrapping: q is at least first[digit])
                    if RESULT:
                        result[to] = Index(staged[q])
                    elif move:  # a float sort with -0.0 or NaN: the element the key came from
                        out[to] = x[staged[q]]
                    elif SIGN < NARROW:
                        out[to] = Numeric(_unkey(key, SIGN, KIND) & Key(2 * SIGN - 1))
                    else:
                        out[to] = bitcast(Numeric, _unkey(key, SIGN, KIND))
        if LOOKBACK:
            if UNIT_POS == u32(0):
                ticket[0] = atomic_add(state, u32(1 + PASSES) + pass_, u32(1))
            sync_units()
            b = ticket[0]
        else:
            sync_units()
            b += RUDA_COUNT
