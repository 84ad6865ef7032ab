# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""The device-wide reduction kernels of :mod:`.reduce` (and of :mod:`.scan`'s tile sums), in the
kernel language.

:func:`fold_segment` folds one *segment* of a contiguous array with a whole cube: ``UNITS * ITEMS
* LINE`` elements at a time (``ITEMS`` unrolled reads of ``LINE`` elements per unit, one vector
read each where ``LINE > 1``, which needs the segment to start on a line; consecutive units read
consecutive lines; only the last step tests each element against the segment's end), each unit
folding its values in order (a sum of lines: one running sum per lane), then the units through
:func:`.cube_fold.cube_reduce` (the language's ``units_sum`` / ``units_min`` / ``units_max`` where
the device has planes, ``PLANES``).

* :func:`reduce_segments`: row ``r`` of ``rows`` rows of ``n`` elements is cut into ``segs``
  segments of ``span`` elements (the last one shorter), and ``out[r * segs + s]`` receives the
  sum, least or greatest element of segment ``s`` of row ``r``, computed in ``Acc`` (each
  element converted first) and converted to ``Out`` once, where written. The cubes stride over
  all ``rows * segs`` segments, so any count of cubes covers any shape. A row reduction
  (``axis=-1``) is one launch with ``segs = 1``; a whole-array reduction two: per-cube partials
  (in ``Acc``), then one segment over them.
* :func:`reduce_whole`: a whole-array reduction in one launch on a device with memory fences,
  one segment per cube. Each cube writes its partial (in ``Acc``), fences it and takes a ticket
  from ``tickets[0]`` (zero before the launch); the cube that takes the last ticket folds the
  partials, in order, into ``out[0]`` and sets the ticket word back to zero for the next launch.

``Acc`` is ``Out``, or a wider type for a narrow ``Out`` (:func:`.primitive_inputs.fold_elem`:
bool, 8- and 16-bit integers in 32 bits, f16 in f32), so that the cube folds see 32- and 64-bit
values only; ``min``/``max`` of bool are then "all" and "any". Float ``min`` and ``max``
propagate NaN as NumPy does: a segment holding a NaN gives NaN. Launch shapes and argument
checks are :mod:`.reduce`'s; nothing here checks arguments.
"""

from __future__ import annotations

from ..lang import (
    RUDA_COUNT,
    RUDA_POS,
    UNIT_POS,
    Array,
    Comptime,
    ElemVar,
    Line,
    Numeric,
    SharedMemory,
    atomic_add,
    cube_units,
    fence_device,
    func,
    isnan,
    kernel,
    sync_units,
    u32,
    unroll,
)
from .cube_fold import cube_reduce

__all__ = [
    "Acc",
    "Data",
    "Out",
    "fold_segment",
    "fold_units",
    "reduce_segments",
    "reduce_whole",
]

#: The element a reduction computes in (and its partials' element).
Acc = ElemVar("Acc", Numeric)
#: The element a reduction writes (bool too).
Out = ElemVar("Out")
#: The element of a kernel's input (bool too); apart from ``Item``, which each call of
#: :func:`fold_segment` binds (``reduce_whole`` folds its input, then its partials).
Data = ElemVar("Data")
#: The element of the array a segment is folded from (the input, or ``Acc`` for the partials).
Item = ElemVar("Item")


@func
def fold_one(acc: Acc, v: Acc, KIND: Comptime[str], FLOAT: Comptime[bool]) -> Acc:
    """``acc`` combined with ``v``; float ``min``/``max`` keep a NaN once one is seen."""
    if KIND == "sum":
        return acc + v
    if KIND == "min":
        if FLOAT:
            return v if v < acc or isnan(v) else acc
        return min(acc, v)
    if FLOAT:
        return v if v > acc or isnan(v) else acc
    return max(acc, v)


@func
def fold_units(
    acc: Acc,
    nan: Acc,
    KIND: Comptime[str],
    FLOAT: Comptime[bool],
    PLANES: Comptime[bool],
    UNITS: Comptime[int],
) -> Acc:
    """``acc`` combined over the cube's units, to every unit (a barrier: all units call it).
    For float ``min``/``max`` the result is ``nan`` (a NaN) when some unit holds a NaN, since the
    plane operations' NaN handling differs between devices."""
    if KIND == "sum" or not FLOAT:
        return cube_reduce(acc, KIND, PLANES, UNITS)
    bad = cube_reduce(u32(1) if isnan(acc) else u32(0), "max", PLANES, UNITS)
    total = cube_reduce(Acc(0) if isnan(acc) else acc, KIND, PLANES, UNITS)
    return nan if bad != u32(0) else total


@func
def fold_segment(
    x: Array[Item],
    start: u32,
    end: u32,
    nan: Acc,
    KIND: Comptime[str],
    FLOAT: Comptime[bool],
    PLANES: Comptime[bool],
    UNITS: Comptime[int],
    ITEMS: Comptime[int],
    LINE: Comptime[int],
    LANES: Comptime[bool],
) -> Acc:
    """The ``KIND`` of ``x[start:end]`` (not empty; ``start`` on a line where ``LINE > 1``) in
    ``Acc``, to every unit of the cube (a barrier: all units call it). With ``LANES`` (a sum of
    lines of ``Acc`` itself) each unit keeps a running sum per lane: one vector addition per
    line where the target has them (CPU drivers), and chains of additions a lane long."""
    stride = u32(UNITS * LINE)  # between a unit's reads within a step
    step = stride * u32(ITEMS)
    # min/max start from the segment's first element, so no identity of the type is needed
    acc = Acc(0) if KIND == "sum" else Acc(x[start])
    base = start + UNIT_POS * u32(LINE)
    whole = u32(ITEMS - 1) * stride + u32(LINE - 1)  # a step reads up to base + whole
    if LANES:
        lanes = Line.splat(Acc(0), LINE)
        while base < end and end - base > whole:  # whole steps: no test per read
            for j in unroll(range(ITEMS)):
                lanes = lanes + x.load_line((base + u32(j) * stride) // u32(LINE), LINE)
            base += step
        acc = lanes.sum()
    else:
        while base < end and end - base > whole:
            for j in unroll(range(ITEMS)):
                if LINE == 1:
                    acc = fold_one(acc, Acc(x[base + u32(j) * stride]), KIND, FLOAT)
                else:  # segments start on lines: one vector read
                    line = x.load_line((base + u32(j) * stride) // u32(LINE), LINE)
                    for q in unroll(range(LINE)):
                        acc = fold_one(acc, Acc(line[q]), KIND, FLOAT)
            base += step
    for j in unroll(range(ITEMS)):  # the last step, partial
        for q in unroll(range(LINE)):
            i = base + u32(j) * stride + u32(q)
            if i < end:
                acc = fold_one(acc, Acc(x[i]), KIND, FLOAT)
    return fold_units(acc, nan, KIND, FLOAT, PLANES, UNITS)


@kernel
def reduce_segments(
    x: Array[Data],
    out: Array[Out],
    rows: u32,
    n: u32,
    segs: u32,
    span: u32,
    nan: Acc,
    KIND: Comptime[str],
    FLOAT: Comptime[bool],
    PLANES: Comptime[bool],
    UNITS: Comptime[int],
    ITEMS: Comptime[int],
    LINE: Comptime[int],
    LANES: Comptime[bool],
):
    cube_units(UNITS)
    work = rows * segs
    w = RUDA_POS
    while w < work:
        row = w // segs
        start = row * n + (w % segs) * span
        end = min(start + span, row * n + n)
        total = fold_segment(x, start, end, nan, KIND, FLOAT, PLANES, UNITS, ITEMS, LINE, LANES)
        if UNIT_POS == 0:
            out[w] = Out(total)
        w += RUDA_COUNT


@kernel
def reduce_whole(
    x: Array[Data],
    out: Array[Out],
    partials: Array[Acc],
    tickets: Array[u32],
    n: u32,
    span: u32,
    nan: Acc,
    KIND: Comptime[str],
    FLOAT: Comptime[bool],
    PLANES: Comptime[bool],
    UNITS: Comptime[int],
    ITEMS: Comptime[int],
    LINE: Comptime[int],
    LANES: Comptime[bool],
):
    cube_units(UNITS)
    last = SharedMemory(u32, 1)
    start = RUDA_POS * span
    end = min(start + span, n)
    total = fold_segment(x, start, end, nan, KIND, FLOAT, PLANES, UNITS, ITEMS, LINE, LANES)
    if UNIT_POS == 0:
        partials[RUDA_POS] = total
        fence_device()  # the partial is visible before the ticket that counts it
        last[0] = atomic_add(tickets, 0, u32(1))
    sync_units()
    if last[0] == RUDA_COUNT - u32(1):  # the last cube: every partial is written
        fence_device()
        total = fold_segment(
            partials, u32(0), RUDA_COUNT, nan, KIND, FLOAT, PLANES, UNITS, ITEMS, 1, False
        )
        if UNIT_POS == 0:
            out[0] = Out(total)
            tickets[0] = u32(0)  # ready for the next launch on this stream
