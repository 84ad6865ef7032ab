# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""The scan kernel of :mod:`.scan` (cumulative sums), in the kernel language.

:func:`scan_segments` cuts rows as :func:`.reduce_kernels.reduce_segments` does (``rows`` rows of
``n`` elements, ``segs`` segments of ``span`` per row, the last one shorter) and writes the
inclusive or exclusive running sum of each segment into ``out``, starting from
``carries[r * segs + s]`` (``HAS_CARRY``: the sum of everything before the segment in its row)
or from 0. The sums are computed in ``Acc`` (:func:`.primitive_inputs.fold_elem` of ``Out``:
``Out`` itself, or f32 for f16), as are the carries and the look-back's values, and converted
to ``Out`` once, where written. One cube scans one segment at a time, ``UNITS * ITEMS``
elements per step: the step is read into shared memory with consecutive units at consecutive
elements, each unit adds its ``ITEMS`` consecutive elements in order,
:func:`.cube_fold.cube_exclusive_sum` gives each unit the sum of the units before it, and the
step is written back the way it was read; a running carry links the steps of a segment.

A scan of long rows is three launches (:mod:`.scan`): tile sums (:func:`reduce_segments`), an
exclusive scan of those (this kernel again, or the same three launches for many tiles), then
this kernel with the carries. Or one launch of :func:`scan_chained` (a decoupled look-back),
on devices with memory fences whose cubes may wait on each other: cubes take the tiles
(``UNITS * ITEMS`` elements each, a row cut as ``scan_segments`` cuts it with ``span`` one
tile) in ticket order, so every tile before a cube's has been taken by a cube that runs. Each
cube publishes its tile's sum (the first tile of a row its inclusive prefix), then sums the
tiles before it from the nearest one whose prefix is published: a window of ``UNITS`` tiles at
a time, one flag per unit, waiting while one of them has published nothing yet, and then
publishes its own prefix and scans its tile from the sum before it. The flags and values are
:func:`.tickets.lookback`'s (ready when they hold the launch's epoch), the ticket word
:func:`.tickets.ticket_word`'s, which the cube that takes the last ticket sets back to zero.
Launch shapes and checks are :mod:`.scan`'s.
"""

from __future__ import annotations

from ..lang import (
    RUDA_COUNT,
    RUDA_POS,
    UNIT_POS,
    Array,
    Comptime,
    SharedMemory,
    atomic_add,
    atomic_load,
    atomic_store,
    cube_units,
    fence_device,
    func,
    kernel,
    sync_units,
    u32,
    unroll,
)
from .cube_fold import cube_exclusive_sum, cube_reduce
from .reduce_kernels import Acc, Data, Out

__all__ = ["scan_chained", "scan_segments"]


@kernel
def scan_segments(
    x: Array[Data],
    carries: Array[Acc],
    out: Array[Out],
    rows: u32,
    n: u32,
    segs: u32,
    span: u32,
    EXCLUSIVE: Comptime[bool],
    HAS_CARRY: Comptime[bool],
    PLANES: Comptime[bool],
    UNITS: Comptime[int],
    ITEMS: Comptime[int],
):
    cube_units(UNITS)
    stage = SharedMemory(Acc, UNITS * ITEMS)
    work = rows * segs
    w = RUDA_POS
    while w < work:
        row = w // segs
        start = row * n + (w % segs) * span
        end = min(start + span, row * n + n)
        carry = carries[w] if HAS_CARRY else Acc(0)
        base = start
        while base < end:
            run = _staged(x, stage, base, end, UNITS, ITEMS)
            acc = cube_exclusive_sum(run, PLANES, UNITS) + carry
            carry += cube_reduce(run, "sum", PLANES, UNITS)
            _scanned(out, stage, base, end, acc, EXCLUSIVE, UNITS, ITEMS)
            base += u32(UNITS * ITEMS)
        w += RUDA_COUNT


@func
def _staged(
    x: Array[Data],
    stage: Array[Acc],
    base: u32,
    end: u32,
    UNITS: Comptime[int],
    ITEMS: Comptime[int],
):
    """``x[base:end]`` (at most ``UNITS * ITEMS`` elements, zeros after ``end``) into ``stage``
    in ``Acc``, consecutive units at consecutive elements; the sum of the unit's ``ITEMS``
    consecutive elements of ``stage``."""
    for j in unroll(range(ITEMS)):
        k = u32(j * UNITS) + UNIT_POS
        i = base + k
        stage[k] = Acc(x[i]) if i < end else Acc(0)
    sync_units()
    mine = UNIT_POS * u32(ITEMS)
    run = Acc(0)
    for j in unroll(range(ITEMS)):
        run += stage[mine + u32(j)]
    return run


@func
def _scanned(
    out: Array[Out],
    stage: Array[Acc],
    base: u32,
    end: u32,
    acc: Acc,
    EXCLUSIVE: Comptime[bool],
    UNITS: Comptime[int],
    ITEMS: Comptime[int],
):
    """The running sums of the unit's elements of ``stage`` from ``acc`` (the sum before them),
    written to ``out[base:end]`` in ``Out`` the way :func:`_staged` read them."""
    mine = UNIT_POS * u32(ITEMS)
    for j in unroll(range(ITEMS)):
        v = stage[mine + u32(j)]
        if EXCLUSIVE:
            stage[mine + u32(j)] = acc
            acc += v
        else:
            acc += v
            stage[mine + u32(j)] = acc
    sync_units()
    for j in unroll(range(ITEMS)):
        k = u32(j * UNITS) + UNIT_POS
        i = base + k
        if i < end:
            out[i] = Out(stage[k])
    sync_units()


@func
def _ticket(tickets: Array[u32], tiles: u32) -> u32:
    """The next ticket; the cube that takes the launch's last one (each cube takes tickets
    until one is past the tiles) sets the word back to zero for the next launch."""
    ticket = atomic_add(tickets, 0, u32(1))
    if ticket == tiles + RUDA_COUNT - u32(1):
        tickets[0] = u32(0)
    return ticket


@kernel
def scan_chained(
    x: Array[Data],
    out: Array[Out],
    flags: Array[u32],
    sums: Array[Acc],
    prefixes: Array[Acc],
    tickets: Array[u32],
    rows: u32,
    n: u32,
    segs: u32,
    epoch: u32,
    EXCLUSIVE: Comptime[bool],
    PLANES: Comptime[bool],
    UNITS: Comptime[int],
    ITEMS: Comptime[int],
):
    cube_units(UNITS)
    stage = SharedMemory(Acc, UNITS * ITEMS)
    taken = SharedMemory(u32, 1)
    tiles = rows * segs
    summed = epoch * u32(2)  # a tile's flag once its sum is published
    whole = summed + u32(1)  # once its inclusive prefix is
    if UNIT_POS == 0:
        taken[0] = _ticket(tickets, tiles)
    sync_units()
    t = taken[0]
    while t < tiles:
        s = t % segs
        row = t // segs * n
        base = row + s * u32(UNITS * ITEMS)
        end = min(base + u32(UNITS * ITEMS), row + n)
        run = _staged(x, stage, base, end, UNITS, ITEMS)
        total = cube_reduce(run, "sum", PLANES, UNITS)
        if UNIT_POS == 0:
            if s == u32(0):
                prefixes[t] = total
            else:
                sums[t] = total
            fence_device()  # the value is visible before the flag that announces it
            atomic_store(flags, t, whole if s == u32(0) else summed)
        # the sum of the row's tiles before t: windows of UNITS tiles, nearest first
        carry = Acc(0)
        top = t  # the tiles below top and from the row's first on are still to be summed
        left = s
        while left > u32(0):
            avail = min(left, u32(UNITS))
            seen = u32(0)
            if UNIT_POS < avail:
                seen = atomic_load(flags, top - u32(1) - UNIT_POS)
            # the nearest tile that stops the window: 2 * its unit, + 1 where it is not ready
            # (it has published nothing yet), + 0 where it holds a prefix; 2 * UNITS if none
            stop = u32(2 * UNITS)
            if UNIT_POS < avail and seen != summed:
                stop = UNIT_POS * u32(2) + (u32(0) if seen == whole else u32(1))
            stop = cube_reduce(stop, "min", PLANES, UNITS)
            if stop % u32(2) == u32(0):  # every tile up to the stop, if any, is ready
                fence_device()  # the values announced by the flags seen
                v = Acc(0)
                if UNIT_POS < avail and UNIT_POS * u32(2) <= stop:
                    # volatile reads: a line cached by an earlier read may be stale
                    j = top - u32(1) - UNIT_POS
                    v = atomic_load(prefixes, j) if seen == whole else atomic_load(sums, j)
                carry += cube_reduce(v, "sum", PLANES, UNITS)
                if stop == u32(2 * UNITS):
                    left -= avail
                    top -= avail
                else:
                    left = u32(0)
        if UNIT_POS == 0 and s != u32(0):
            prefixes[t] = carry + total
            fence_device()
            atomic_store(flags, t, whole)
        acc = cube_exclusive_sum(run, PLANES, UNITS) + carry
        _scanned(out, stage, base, end, acc, EXCLUSIVE, UNITS, ITEMS)
        if UNIT_POS == 0:
            taken[0] = _ticket(tickets, tiles)
        sync_units()
        t = taken[0]
