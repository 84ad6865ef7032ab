# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""The scan kernel of :mod:`.scan` (cumulative sums), in the kernel language.

:func:`scan_segments` cuts rows as :func:`.reduce_kernels.reduce_segments` does (``rows`` rows of
``n`` elements, ``segs`` segments of ``span`` per row, the last one shorter) and writes the
inclusive or exclusive running sum of each segment into ``out``, in ``Out``, starting from
``carries[r * segs + s]`` (``HAS_CARRY``: the sum of everything before the segment in its row)
or from 0. One cube scans one segment at a time, ``UNITS * ITEMS`` elements per step: the step is
read into shared memory with consecutive units at consecutive elements, each unit adds its
``ITEMS`` consecutive elements in order, :func:`.cube_fold.cube_exclusive_sum` gives each unit
the sum of the units before it, and the step is written back the way it was read; a running
carry links the steps of a segment.

A scan of long rows is three launches (:mod:`.scan`): tile sums (:func:`reduce_segments`), an
exclusive scan of those (this kernel again, or the same three launches for many tiles), then
this kernel with the carries. Launch shapes and checks are :mod:`.scan`'s.
"""

from __future__ import annotations

from ..lang import (
    RUDA_COUNT,
    RUDA_POS,
    UNIT_POS,
    Array,
    Comptime,
    Numeric,
    SharedMemory,
    cube_units,
    kernel,
    sync_units,
    u32,
    unroll,
)
from .cube_fold import cube_exclusive_sum, cube_reduce
from .reduce_kernels import Out

__all__ = ["scan_segments"]


@kernel
def scan_segments(
    x: Array[Numeric],
    carries: Array[Out],
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
    stage = SharedMemory(Out, UNITS * ITEMS)
    mine = UNIT_POS * u32(ITEMS)
    work = rows * segs
    w = RUDA_POS
    while w < work:
        row = w // segs
        start = row * n + (w % segs) * span
        end = min(start + span, row * n + n)
        carry = carries[w] if HAS_CARRY else Out(0)
        base = start
        while base < end:
            for j in unroll(range(ITEMS)):
                k = u32(j * UNITS) + UNIT_POS
                i = base + k
                stage[k] = Out(x[i]) if i < end else Out(0)
            sync_units()
            run = Out(0)
            for j in unroll(range(ITEMS)):
                run += stage[mine + u32(j)]
            acc = cube_exclusive_sum(run, PLANES, UNITS) + carry
            carry += cube_reduce(run, "sum", PLANES, UNITS)
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
                    out[i] = stage[k]
            sync_units()
            base += u32(UNITS * ITEMS)
        w += RUDA_COUNT
