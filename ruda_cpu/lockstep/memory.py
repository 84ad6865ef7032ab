"""Loads and stores of global buffers, shared memory and local arrays, for a batch of lanes.

Every access is safe whatever the index: an index outside the NumPy buffer (or outside the
lane's segment of shared or local memory) reads 0 and drops the write, and negative indices
never wrap. Loads ignore the execution mask (an inactive lane's value is never observed);
stores write only active lanes. When several active lanes store to one element, one of them
wins. Loads return new arrays, except :func:`load_ro`, which may return a view of a buffer the
kernel never writes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .batch import Batch, Segmented
from .values import Lanes, Split, Units, arr, unit_runs, unit_spans

__all__ = ["load", "load_ro", "load_seg", "report_oob", "store", "store_seg"]


def _unsigned(idx: np.ndarray) -> np.ndarray:
    """The index vector with negative values seen as huge ones (so one ``< length`` test
    checks both bounds)."""
    if idx.dtype.kind == "u":
        return idx
    if idx.dtype.kind == "b":
        return idx.view(np.uint8)
    return idx.view(f"u{idx.dtype.itemsize}")


def _intp(u: np.ndarray) -> np.ndarray:
    """An unsigned index vector as ``intp`` (values >= 2**63 turn negative: callers mask them).
    NumPy gathers and scatters through ``intp`` indices fastest: it converts others first, and
    a scatter through ``uint32`` costs twice the conversion and the ``intp`` one together."""
    return u.view(np.intp) if u.dtype.itemsize == 8 else u.astype(np.intp)


def _valid_range(start: int, step: int, n: int, length: int) -> tuple[int, int]:
    """The lanes ``[j0, j1)`` of ``start + step*j`` that fall in ``[0, length)``."""
    if step > 0:
        j0 = -(start // step)
        j1 = -((start - length) // step)
    else:
        j0 = -((length - 1 - start) // -step)
        j1 = start // -step + 1
    return min(max(j0, 0), n), min(max(j1, 0), n)


def _slice(buf: np.ndarray, start: int, step: int, n: int) -> np.ndarray:
    """The view ``buf[start + step*j for j in range(n)]`` (all in bounds)."""
    last = start + step * (n - 1)
    if step > 0:
        return buf[start : last + 1 : step]
    return buf[last : start + 1 : -step][::-1]


def _load_lanes(buf: np.ndarray, idx: Lanes, view: bool) -> Any:
    j0, j1 = _valid_range(idx.start, idx.step, idx.n, buf.shape[0])
    if j0 == 0 and j1 == idx.n:
        part = _slice(buf, idx.start, idx.step, idx.n)
        return part if view else part.copy()
    out = np.zeros(idx.n, dtype=buf.dtype)
    if j0 < j1:
        out[j0:j1] = _slice(buf, idx.start + idx.step * j0, idx.step, j1 - j0)
    return out


def _gather(data: np.ndarray, flat: np.ndarray, bad: np.ndarray) -> Any:
    """``data[flat]`` with the ``bad`` lanes (whose ``flat`` is a safe dummy) set to 0."""
    out = data.take(flat)
    out[bad] = 0
    return out


def _split_inside(idx: Split, length: int) -> tuple[np.ndarray, np.ndarray] | None:
    """For a Split index whose every element is in ``[0, length)``: its per-cube and per-unit
    parts as ``intp`` (exact, no wrap-around); None otherwise."""
    span = idx.span()
    if span is None or span[0] < 0 or span[1] >= length:
        return None
    return idx.cube.astype(np.intp), np.asarray(arr(idx.unit), dtype=np.intp).reshape(-1)


def _run_width(unit: np.ndarray) -> int:
    """The width of the runs of consecutive elements that ``unit`` (one cube's offsets) is
    made of, each run starting where the last one ended in the units (1: none)."""
    n = unit.shape[0]
    if n < 2:
        return 1
    breaks = np.flatnonzero(np.diff(unit) != 1)
    width = int(breaks[0]) + 1 if breaks.shape[0] else n
    if width < 2 or n % width:
        return 1
    rows = unit.reshape(-1, width)
    if (rows - rows[:, :1] != np.arange(width)).any():
        return 1
    return width


#: The shortest run of consecutive elements worth copying as a row (shorter ones gather).
_MIN_RUN = 16


def _split_rows(buf: np.ndarray, idx: Split) -> tuple[np.ndarray, np.ndarray] | None:
    """For a Split index wholly in bounds that reads runs of at least ``_MIN_RUN`` consecutive
    elements (a row per cube, or per row of a 2-D cube): a writable (positions, width) view of
    ``buf`` whose row ``p`` starts at element ``p``, and the start of each run, in lane order;
    None for other indices."""
    parts = _split_inside(idx, buf.shape[0])
    if parts is None or isinstance(idx.unit, np.generic):
        return None
    cube, unit = parts
    width = _run_width(unit)
    if width < _MIN_RUN:
        return None
    size = buf.strides[0]
    rows = as_strided(buf, (buf.shape[0] - width + 1, width), (size, size))
    return rows, (cube[:, None] + unit[::width][None, :]).reshape(-1)


#: The most axes a grid of :func:`_grid` may have (a 3-D cube's units, or the cubes of a
#: batch laid over a 3-D array).
_MAX_AXES = 3


def _grid(a: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """``a`` (a 1-D ``intp`` array) as a grid: the shape and the positive element strides
    such that ``a`` lists ``a[0] + sum(i[k] * strides[k])`` over the indices ``i`` of
    ``shape`` in C order; at most ``_MAX_AXES`` axes; None when ``a`` is no such grid."""
    shape: list[int] = []
    strides: list[int] = []
    while a.shape[0] > 1:
        step = int(a[1]) - int(a[0])
        if step <= 0 or len(shape) == _MAX_AXES:
            return None
        breaks = np.flatnonzero(np.diff(a) != step)
        width = int(breaks[0]) + 1 if breaks.shape[0] else a.shape[0]
        if a.shape[0] % width:
            return None
        rows = a.reshape(-1, width)
        if breaks.shape[0] and (rows - rows[:, :1] != a[:width] - a[0]).any():
            return None
        shape.insert(0, width)
        strides.insert(0, step)
        a = rows[:, 0]
    return tuple(shape), tuple(strides)


def _split_grid(buf: np.ndarray, idx: Split) -> np.ndarray | None:
    """For a Split index wholly in bounds whose per-cube and per-unit parts are grids (see
    :func:`_grid`; a cube position and unit positions times and plus uniform values): the
    writable strided view of ``buf`` whose elements in C order are the lanes' elements; None
    for other indices."""
    parts = _split_inside(idx, buf.shape[0])
    if parts is None or isinstance(idx.unit, np.generic):
        return None
    cube, unit = parts
    over_cubes, over_units = _grid(cube), _grid(unit)
    if over_cubes is None or over_units is None:
        return None
    size = buf.strides[0]
    strides = tuple(k * size for k in over_cubes[1] + over_units[1])
    start = int(cube[0]) + int(unit[0])
    return as_strided(buf[start:], over_cubes[0] + over_units[0], strides)


def _in_runs(dst: np.ndarray, src: Any) -> bool:
    """Whether ``dst`` and ``src`` are arrays of one type whose last axis, of two or more
    elements, is contiguous in both: runs along it can move as single ``void`` elements."""
    size = dst.itemsize
    return (
        isinstance(src, np.ndarray)
        and src.dtype == dst.dtype
        and dst.ndim > 1
        and dst.shape[-1] > 1
        and dst.strides[-1] == size
        and src.strides[-1] == size
    )


def _copy_runs(dst: np.ndarray, src: Any) -> None:
    """``dst[...] = src`` (``src`` of ``dst``'s shape, or a scalar). When both are arrays of one
    type whose last axis is contiguous, each run along it moves as one element of that many
    bytes (a ``void`` view): NumPy copies runs of a few small elements one short loop at a
    time (a 16x16 cube's rows of a grid: 75 against 106 µs for 2**18 f32)."""
    if _in_runs(dst, src):
        width = f"V{dst.shape[-1] * dst.itemsize}"
        np.copyto(dst.view(width), src.view(width))
    else:
        dst[...] = src


#: Eight true booleans, as the bytes of one ``uint64``.
_TRUE_BYTES = np.uint64(0x0101010101010101)


def _copy_runs_masked(dst: np.ndarray, src: Any, mask: np.ndarray) -> None:
    """``np.copyto(dst, src, where=mask)`` (``mask`` a boolean array of ``dst``'s shape). When
    :func:`_copy_runs` would move runs and each run's flags are whole ``uint64`` words, the runs
    whose every lane is active move as single elements and the few others, read again after,
    keep their inactive lanes' elements; with many such runs, the masked copy itself."""
    size, width = dst.itemsize, dst.shape[-1]
    if not _in_runs(dst, src) or width % 8 or not mask.flags.c_contiguous:
        np.copyto(dst, src, where=mask)
        return
    words = mask.view(np.uint64).reshape(-1, width // 8)
    whole = words[:, 0] == _TRUE_BYTES
    for k in range(1, width // 8):
        whole &= words[:, k] == _TRUE_BYTES
    some = np.flatnonzero(~whole)
    if 4 * some.shape[0] > whole.shape[0]:
        np.copyto(dst, src, where=mask)
        return
    runs = f"V{width * size}"
    np.copyto(dst.view(runs), src.view(runs), where=whole.reshape((*dst.shape[:-1], 1)))
    at = np.unravel_index(some, dst.shape[:-1])
    flags = mask.reshape(-1, width)[some]
    dst[at] = np.where(flags, src.reshape(-1, width)[some], dst[at])


def _load(buf: np.ndarray, idx: Any, view: bool) -> Any:
    if type(idx) is Lanes:
        return _load_lanes(buf, idx, view)
    if type(idx) is Units:
        one = idx.one
        part = _load_lanes(buf, one, True) if type(one) is Lanes else _load(buf, one, True)
        return np.tile(part, idx.cubes)
    if type(idx) is Split:
        grid = _split_grid(buf, idx)
        if grid is not None:
            if view and grid.flags.c_contiguous:
                return grid.reshape(-1)
            out = np.empty(grid.shape, dtype=buf.dtype)
            _copy_runs(out, grid)
            return out.reshape(-1)
        runs = _split_rows(buf, idx)
        if runs is not None:
            return runs[0][runs[1]].reshape(-1)
        idx = idx.array()
    length = buf.shape[0]
    if isinstance(idx, np.generic):
        i = int(idx)
        return buf[i] if 0 <= i < length else buf.dtype.type(0)
    if length == 0:
        return np.zeros(idx.shape[0], dtype=buf.dtype)
    u = _unsigned(idx)
    if u.max() < length:
        return buf.take(u)
    bad = u >= length
    return _gather(buf, np.where(bad, 0, u), bad)


def load(buf: np.ndarray, idx: Any) -> Any:
    """``buf[idx]`` per lane (0 where out of bounds), as a new value."""
    return _load(buf, idx, False)


def load_ro(g: Batch, buf: np.ndarray, idx: Any) -> Any:
    """:func:`load` for a buffer the kernel never writes: may return a view of it."""
    return _load(buf, idx, g.views)


def _store_lanes(buf: np.ndarray, idx: Lanes, v: Any, m: Any) -> None:
    j0, j1 = _valid_range(idx.start, idx.step, idx.n, buf.shape[0])
    if j0 >= j1:
        return
    view = _slice(buf, idx.start + idx.step * j0, idx.step, j1 - j0)
    v = arr(v)
    part = v if isinstance(v, np.generic) else v[j0:j1]
    if m is None:
        view[...] = part
    else:
        np.copyto(view, part, where=m[j0:j1])


def _last_active(v: Any, m: Any) -> Any:
    """The value of the highest active lane (the one that wins a uniform-address store)."""
    if isinstance(v, np.generic):
        return v
    v = arr(v)
    if m is None:
        return v[-1]
    return v[np.flatnonzero(m)[-1]]


def store(buf: np.ndarray, idx: Any, v: Any, m: Any) -> None:
    """``buf[idx] = v`` for the active lanes of mask ``m`` that are in bounds."""
    if m is False:
        return
    if type(idx) is Lanes:
        _store_lanes(buf, idx, v, m)
        return
    length = buf.shape[0]
    if type(idx) is Split:
        grid = _split_grid(buf, idx)
        if grid is not None:  # where elements repeat, one of their lanes wins
            v = arr(v)
            part = v if isinstance(v, np.generic) else v.reshape(grid.shape)
            if m is None:
                _copy_runs(grid, part)
            else:
                _copy_runs_masked(grid, part, m.reshape(grid.shape))
            return
        runs = _split_rows(buf, idx) if m is None else None
        if runs is not None:  # rows in lane order: where runs overlap, the later lane wins
            v = arr(v)
            runs[0][runs[1]] = v if isinstance(v, np.generic) else v.reshape(-1, runs[0].shape[1])
            return
        idx = idx.array()
    if isinstance(idx, np.generic):
        i = int(idx)
        if 0 <= i < length:
            buf[i] = _last_active(v, m)
        return
    u = _unsigned(arr(idx))
    v = arr(v)
    keep = u < length if m is None else (u < length) & m
    if m is None and keep.all():
        buf[_intp(u)] = v
    elif isinstance(v, np.generic):
        buf[_intp(u[keep])] = v
    else:
        buf[_intp(u[keep])] = v[keep]


_I64 = np.dtype(np.int64)


def _unit_array(seg: Segmented, idx: Any) -> np.ndarray | None:
    """The array over one cube's units of a Units index of shared memory (one segment per
    cube) that holds one; None for other indices."""
    if type(idx) is not Units:
        return None
    one = idx.one
    return one if isinstance(one, np.ndarray) and seg.per == one.shape[0] else None


def _straightened(seg: Segmented, idx: Any) -> Any:
    """A Units index of shared memory (one segment per cube) holding an array that steps
    evenly through the units, as a :class:`Lanes` one, so that the access becomes a 2-D slice;
    other indices unchanged. The array's elements are read as signed: an unsigned index that
    wrapped below zero (``UNIT_POS - d``) is out of bounds either way, since no segment is
    half as long as the index type's range. Found once per launch for each index (see
    :meth:`~ruda_cpu.lockstep.values.Units.derived`)."""
    one = _unit_array(seg, idx)
    if one is None:
        return idx
    length = seg.length
    return idx.derived(("straightened", length), lambda: _straighten(idx, one, length))


def _straighten(idx: Units, one: np.ndarray, length: int) -> Any:
    """:func:`_straightened` of ``idx`` (whose array is ``one``) in segments of ``length``."""
    n = one.shape[0]
    if n < 2 or length >= 1 << (8 * one.dtype.itemsize - 1):
        return idx
    signed = one.view(f"i{one.dtype.itemsize}") if one.dtype.kind == "u" else one
    start, step = int(signed[0]), int(signed[1]) - int(signed[0])
    if step == 0 or signed[-1] != start + step * (n - 1):
        return idx
    if not (np.diff(signed) == step).all():
        return idx
    return Units(Lanes(start, step, n, _I64), idx.cubes, idx.memo)


def _unit_picks(seg: Segmented, idx: Any) -> tuple[np.ndarray, np.ndarray | None] | None:
    """For a Units index of shared memory (one segment per cube) that holds an array over one
    cube's units: the ``intp`` element each unit reaches (0 where out of bounds) and the units
    out of bounds (None when there are none); None for other indices."""
    one = _unit_array(seg, idx)
    if one is None or not seg.length:
        return None
    u = _unsigned(one)
    if u.max() < seg.length:
        return _intp(u), None
    bad = u >= seg.length
    return _intp(np.where(bad, 0, u)), bad


#: The fewest units in a block of :func:`_swapped_blocks` beyond one: blocks of 2 and 4
#: elements cost less as a gather than as a copy of elements of that many bytes.
_MIN_BLOCK = 8


def _swapped_blocks(seg: Segmented, at: np.ndarray) -> np.ndarray | None:
    """For shared memory whose segments are as long as a cube has units, read through the
    elements ``at`` (one per unit) that are ``UNIT_POS ^ j`` for ``j`` 1 or a power of two of
    at least ``_MIN_BLOCK`` units (a butterfly's partner): every pair of neighbouring blocks of
    ``j`` elements swapped, as one copy of blocks seen as single elements of that many bytes
    (a ``void`` view) instead of a gather; None for other accesses."""
    units = seg.per
    j = int(at[0])
    if seg.length != units or not (j == 1 or j >= _MIN_BLOCK) or j & (j - 1) or units % (2 * j):
        return None
    if not (at == np.arange(units) ^ j).all():
        return None
    data = seg.data
    blocks = data.view(f"V{data.dtype.itemsize * j}") if j > 1 else data
    pairs = blocks.reshape(-1, 2)
    out = np.empty_like(pairs)
    out[:, 0] = pairs[:, 1]
    out[:, 1] = pairs[:, 0]
    return out.reshape(-1).view(data.dtype)


def _unit_columns(seg: Segmented, idx: Any) -> tuple[np.ndarray, int, int] | None:
    """For a Units index of shared memory (one segment per cube) that steps through the
    units: the (cubes, units) view of the in-bounds columns and their unit range
    ``[j0, j1)``; None for other indices."""
    if type(idx) is not Units or type(idx.one) is not Lanes or seg.per != idx.one.n:
        return None
    one = idx.one
    j0, j1 = _valid_range(one.start, one.step, one.n, seg.length)
    rows = seg.data.reshape(-1, seg.length)
    if j0 >= j1:
        return rows[:, :0], 0, 0
    first = one.start + one.step * j0
    last = first + one.step * (j1 - j0 - 1)
    if one.step > 0:
        return rows[:, first : last + 1 : one.step], j0, j1
    return rows[:, last : first + 1 : -one.step][:, ::-1], j0, j1


def _shifted_load(seg: Segmented, idx: Any, m: Any, transient: bool) -> np.ndarray | None:
    """For shared memory whose segments are as long as a cube has units, through a Units index
    ``UNIT_POS + start`` (``UNIT_POS - d``): lane ``k`` reads element ``k + start`` of the
    segments back to back, so the load is the data shifted by ``start``: when ``transient``
    (see :func:`load_seg`) and every unit of mask ``m`` reads within its segment, a view of the
    memory (the other units read whatever lies there, which no active lane observes); else one
    copy with the units out of their segment's bounds set to 0 (contiguous passes, where a copy
    per cube's columns costs per cube). None for other accesses."""
    if type(idx) is not Units or type(idx.one) is not Lanes:
        return None
    one = idx.one
    units = seg.per
    if one.step != 1 or one.n != units or seg.length != units:
        return None
    start = one.start
    data = seg.data
    n = data.shape[0]
    if transient and abs(start) < units and _covers_only(m, units, max(-start, 0), units - start):
        return seg.padded[units + start : units + start + n]
    if start == 0:
        return None
    out = np.empty(n, dtype=data.dtype)
    if abs(start) >= units:
        out[:] = 0
    elif start > 0:
        out[: n - start] = data[start:]
        out.reshape(-1, units)[:, units - start :] = 0
    else:
        out[-start:] = data[: n + start]
        out.reshape(-1, units)[:, :-start] = 0
    return out


def _covers_only(m: Any, units: int, j0: int, j1: int) -> bool:
    """Whether the lanes of mask ``m`` (over cubes of ``units`` units) are all units of
    ``[j0, j1)``: True for every unit when ``j0 == 0`` and ``j1 >= units``, else only for a
    :class:`~ruda_cpu.lockstep.values.UnitMask` whose runs lie there."""
    if j0 <= 0 and j1 >= units:
        return True
    runs = unit_runs(m)
    if runs is None or runs[0] != units:
        return False
    return all(j0 <= r0 and r1 <= j1 for r0, r1 in runs[1])


def load_seg(seg: Segmented, idx: Any, m: Any = None, transient: bool = False) -> Any:
    """``mem[idx]`` of each lane's own segment of shared or local memory (0 out of bounds).
    Only the lanes of mask ``m`` are read (others are 0) where ``m`` covers ranges of units
    (see :func:`~ruda_cpu.lockstep.values.unit_runs`); other masks read every lane.

    ``transient``: the caller observes the result only before anything stores to the memory
    (a temporary that one NumPy operation consumes, or a local read only before the next store),
    so it may be a view of the memory, whose inactive lanes hold anything."""
    length = seg.length
    if isinstance(idx, np.generic):
        i = int(idx)
        return seg.segment_column(i) if 0 <= i < length else seg.data.dtype.type(0)
    idx = _straightened(seg, idx)
    shifted = _shifted_load(seg, idx, m, transient)
    if shifted is not None:
        return shifted
    columns = _unit_columns(seg, idx)
    if columns is not None:
        view, j0, j1 = columns
        runs = unit_runs(m)
        if runs is not None and runs[0] == seg.per:
            out = np.empty((view.shape[0], seg.per), dtype=seg.data.dtype)
            for r0, r1, inside in unit_spans(seg.per, runs[1]):
                a, b = (max(r0, j0), min(r1, j1)) if inside else (r1, r1)
                if a >= b:
                    a = b = r1
                out[:, r0:a] = 0
                out[:, a:b] = view[:, a - j0 : b - j0]
                out[:, b:r1] = 0
            return out.reshape(-1)
        if j1 - j0 == seg.per:
            return view.flatten()
        out = np.zeros((view.shape[0], seg.per), dtype=seg.data.dtype)
        out[:, j0:j1] = view
        return out.reshape(-1)
    picks = _unit_picks(seg, idx)
    if picks is not None and picks[1] is None:
        swapped = _swapped_blocks(seg, picks[0])
        if swapped is not None:
            return swapped
    if picks is not None:
        at, outside = picks
        out = seg.data.reshape(-1, length).take(at, axis=1)
        if outside is not None:
            out[:, outside] = 0
        return out.reshape(-1)
    u = _unsigned(arr(idx))
    if length and u.max() < length:
        return seg.data.take(seg.base + _intp(u))
    bad = u >= length
    return _gather(seg.data, seg.base + _intp(np.where(bad, 0, u)), bad)


def store_seg(seg: Segmented, idx: Any, v: Any, m: Any) -> None:
    """``mem[idx] = v`` in each active lane's own segment (dropped out of bounds)."""
    if m is False:
        return
    idx = _straightened(seg, idx)
    columns = _unit_columns(seg, idx)
    if columns is not None:
        view, j0, j1 = columns
        if isinstance(v := arr(v), np.ndarray):
            v = v.reshape(-1, seg.per)[:, j0:j1]
        runs = unit_runs(m)
        if m is None:
            view[...] = v
        elif runs is not None and runs[0] == seg.per:
            for r0, r1 in runs[1]:  # only the units the mask covers
                a, b = max(r0, j0) - j0, min(r1, j1) - j0
                if a < b:
                    view[:, a:b] = v if isinstance(v, np.generic) else v[:, a:b]
        else:
            np.copyto(view, v, where=m.reshape(-1, seg.per)[:, j0:j1])
        return
    picks = _unit_picks(seg, idx)
    if m is None and picks is not None and picks[1] is None:
        v = arr(v)
        rows = seg.data.reshape(-1, seg.length)
        rows[:, picks[0]] = v.reshape(-1, seg.per) if isinstance(v, np.ndarray) else v
        return
    if isinstance(idx, np.generic):
        i = int(idx)
        if not 0 <= i < seg.length:
            return
        flat = seg.base + i
        keep = m
    else:
        u = _unsigned(arr(idx))
        flat = seg.base + _intp(u)
        inside = u < seg.length
        keep = inside if m is None else inside & m
        if m is None and keep.all():
            keep = None
    v = arr(v)
    if keep is None:
        seg.data[flat] = v
    elif isinstance(v, np.generic):
        seg.data[flat[keep]] = v
    else:
        seg.data[flat[keep]] = v[keep]


def _lane_value(v: Any, lane: int) -> int:
    if isinstance(v, np.generic):
        return int(v)
    return int(arr(v)[lane])


def report_oob(report: np.ndarray, m: Any, buffer_no: Any, index: Any, length: Any) -> None:
    """Record an out-of-bounds access of the lowest active lane of ``m`` in the Validate
    report buffer ``[flag, buffer_no, index_lo, index_hi, length_lo, length_hi]`` (u32), unless
    an earlier report set ``flag``."""
    if m is False or report.shape[0] < 6 or report[0] != 0:
        return
    lane = 0 if m is None else int(np.argmax(m))
    i, n = _lane_value(index, lane), _lane_value(length, lane)
    report[:6] = (1, int(buffer_no), i & 0xFFFFFFFF, i >> 32, n & 0xFFFFFFFF, n >> 32)
