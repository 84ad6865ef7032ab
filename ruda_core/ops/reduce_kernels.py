# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""The device-wide reduction kernel of :mod:`.reduce` (and of :mod:`.scan`'s tile sums), in the
kernel language.

:func:`reduce_segments` folds *segments* of a contiguous array: row ``r`` of ``rows`` rows of
``n`` elements is cut into ``segs`` segments of ``span`` elements (the last one shorter), and
``out[r * segs + s]`` receives the sum, least or greatest element of segment ``s`` of row ``r``,
in the element type ``Out`` (each element converted first). One cube folds one segment at a
time and the cubes stride over all ``rows * segs`` segments, so any count of cubes covers any
shape. The cube walks its segment ``UNITS * ITEMS * LINE`` elements at a time (``ITEMS``
unrolled reads of ``LINE`` elements per unit, one vector read each where ``LINE > 1``, which
needs every segment to start on a line; consecutive units read consecutive lines; only the
last step tests each element against the segment's end), each unit folding its values in
order, then combines the units with :func:`.cube_fold.cube_reduce` (the language's
``units_sum`` / ``units_min`` / ``units_max`` where the device has planes, ``PLANES``).

A whole-array reduction is two launches of it: ``segs`` segments of one row (per-cube partials),
then one segment over the partials. A row reduction (``axis=-1``) is one launch with ``segs =
1``. Float ``min`` and ``max`` propagate NaN as NumPy does: a segment holding a NaN gives NaN.
Launch shapes and argument checks are :mod:`.reduce`'s; nothing here checks arguments.
"""

from __future__ import annotations

from ..lang import (
    RUDA_COUNT,
    RUDA_POS,
    UNIT_POS,
    Array,
    Comptime,
    ElemVar,
    Numeric,
    cube_units,
    func,
    isnan,
    kernel,
    u32,
    unroll,
)
from .cube_fold import cube_reduce

__all__ = ["Out", "fold_units", "reduce_segments"]

#: The element a reduction computes in and writes.
Out = ElemVar("Out", Numeric)


@func
def fold_one(acc: Out, v: Out, KIND: Comptime[str], FLOAT: Comptime[bool]) -> Out:
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
    acc: Out,
    nan: Out,
    KIND: Comptime[str],
    FLOAT: Comptime[bool],
    PLANES: Comptime[bool],
    UNITS: Comptime[int],
) -> Out:
    """``acc`` combined over the cube's units, to every unit (a barrier: all units call it).
    For float ``min``/``max`` the result is ``nan`` (a NaN) when some unit holds a NaN, since the
    plane operations' NaN handling differs between devices."""
    if KIND == "sum" or not FLOAT:
        return cube_reduce(acc, KIND, PLANES, UNITS)
    bad = cube_reduce(u32(1) if isnan(acc) else u32(0), "max", PLANES, UNITS)
    total = cube_reduce(Out(0) if isnan(acc) else acc, KIND, PLANES, UNITS)
    return nan if bad != u32(0) else total


@kernel
def reduce_segments(
    x: Array[Numeric],
    out: Array[Out],
    rows: u32,
    n: u32,
    segs: u32,
    span: u32,
    nan: Out,
    KIND: Comptime[str],
    FLOAT: Comptime[bool],
    PLANES: Comptime[bool],
    UNITS: Comptime[int],
    ITEMS: Comptime[int],
    LINE: Comptime[int],
):
    cube_units(UNITS)
    stride = u32(UNITS * LINE)  # between a unit's reads within a step
    step = stride * u32(ITEMS)
    work = rows * segs
    w = RUDA_POS
    while w < work:
        row = w // segs
        start = row * n + (w % segs) * span
        end = min(start + span, row * n + n)
        # min/max start from the segment's first element (segments are never empty), so no
        # identity of the type is needed
        acc = Out(0) if KIND == "sum" else Out(x[start])
        base = start + UNIT_POS * u32(LINE)
        whole = u32(ITEMS - 1) * stride + u32(LINE - 1)  # a step reads up to base + whole
        while base < end and end - base > whole:  # whole steps: no test per read
            for j in unroll(range(ITEMS)):
                if LINE == 1:
                    acc = fold_one(acc, Out(x[base + u32(j) * stride]), KIND, FLOAT)
                else:  # segments start on lines: one vector read
                    line = x.load_line((base + u32(j) * stride) // u32(LINE), LINE)
                    for q in unroll(range(LINE)):
                        acc = fold_one(acc, Out(line[q]), KIND, FLOAT)
            base += step
        for j in unroll(range(ITEMS)):  # the last step, partial
            for q in unroll(range(LINE)):
                i = base + u32(j) * stride + u32(q)
                if i < end:
                    acc = fold_one(acc, Out(x[i]), KIND, FLOAT)
        total = fold_units(acc, nan, KIND, FLOAT, PLANES, UNITS)
        if UNIT_POS == 0:
            out[w] = total
        w += RUDA_COUNT
