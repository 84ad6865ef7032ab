"""The sanitizer's tracking: what generated kernels call, when sanitizing, before each access.

A kernel compiled to sanitize (``CpuCompiler.compile_sanitizing``) takes a
:class:`BatchSanitizer` after the batch and calls it before every load, store, atomic and
barrier with the access's site (a position in the kernel's ``SITES`` table of
``(file:line, array)``), the index and the execution mask. Lockstep execution makes each check
exact per barrier interval:

* **shared memory**: per element, the unit that last wrote it and the unit that read it (or a
  *several* marker) since the cube's last barrier, and whether anything of the cube wrote it at
  all; a non-atomic access that meets another unit's write (or a write that meets another
  unit's read) is a race; a read of an element nothing wrote is uninitialised. Atomics
  initialise an element but take no part in races;
* **local arrays**: whether the lane wrote the element;
* **device memory** (the array arguments) that the storage follows: whether something wrote the
  element before (a host write, a copy, an earlier launch, a unit of this launch), else a read
  of it, or an atomic that combines it, is uninitialised. The launch marks what it writes;
* **global memory** of the buffers a kernel writes, over the whole launch: the last writer and
  the readers of every element, with the barrier-or-fence *epoch* of the access: units of one
  cube are ordered by a barrier between their accesses, and a write that its unit published
  with ``fence_device`` before another unit reads it is trusted (the ticket pattern);
* **barriers**: every live unit of a cube (one that has not returned) must reach each barrier
  the cube reaches, in the same pass;
* **plane broadcasts and shuffles**: the lane a unit reads must be active with it;
* **bounds**: every index outside its array, also in checked launches.

Every finding is counted; the first ``SanitizerError.MAX_REPORTS`` are kept as
:class:`~ruda_core.errors.SanitizerFinding` rows. A :class:`LaunchSanitizer` belongs to one
launch on one thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ruda_core.errors import SanitizerError, SanitizerFinding

from .batch import Batch, Segmented
from .values import Lanes, Units, arr

__all__ = ["BatchSanitizer", "LaunchSanitizer"]

_NONE = -1  # no unit
_SEVERAL = -2  # more than one unit read the element

Position = tuple[tuple[int, int, int], tuple[int, int, int]]


class LaunchSanitizer:
    """The findings and global-memory history of one launch of kernel ``kernel``, whose
    accesses are the ``sites`` rows ``(file:line, array name)``."""

    def __init__(
        self,
        kernel: str,
        sites: tuple[tuple[str, str], ...],
        count: tuple[int, int, int],
        dim: tuple[int, int, int],
        written: Sequence[np.ndarray | None] = (),
    ) -> None:
        """``written``: per array argument, which of its elements something wrote (one row of
        ``bool`` per element, a flag per byte; None, or missing, where that is not followed),
        updated as the launch writes."""
        self.kernel = kernel
        self.sites = sites
        self.count = count
        self.dim = dim
        self.units = dim[0] * dim[1] * dim[2]
        self.found = 0
        self.kinds: dict[str, int] = {}
        self.findings: list[SanitizerFinding] = []
        self.epoch = 0  # counts barriers and fences of the launch
        self._globals: dict[int, _GlobalHistory] = {}
        self._written = written
        #: per unit of the launch, the epoch of its last fence_device (-1: none); made at the first
        self._fenced: np.ndarray | None = None

    def error(self) -> SanitizerError | None:
        """The launch's findings as one error, or None when it ran clean."""
        return SanitizerError(self.findings, self.found, self.kinds) if self.found else None

    def batch(self, g: Batch) -> BatchSanitizer:
        """The tracker that batch ``g``'s kernel call uses."""
        return BatchSanitizer(self, g)

    def position(self, unit: int) -> Position:
        """The (cube, unit) position triples of the launch's ``unit``-th unit."""
        cube, u = divmod(unit, self.units)
        cx, cy, _ = self.count
        dx, dy, _ = self.dim
        return (
            (cube % cx, cube // cx % cy, cube // (cx * cy)),
            (u % dx, u // dx % dy, u // (dx * dy)),
        )

    def note(
        self,
        kind: str,
        site: int,
        bad: np.ndarray,
        units: np.ndarray,
        index: np.ndarray | None = None,
        other: np.ndarray | None = None,
    ) -> None:
        """Count the findings where ``bad`` holds (over the access's lanes) and keep the first
        few: ``units`` are the launch's unit numbers, ``other`` the conflicting ones
        (``_SEVERAL`` for several readers, ``_NONE`` for none known)."""
        hits = np.flatnonzero(bad)
        if hits.shape[0] == 0:
            return
        self.found += int(hits.shape[0])
        self.kinds[kind] = self.kinds.get(kind, 0) + int(hits.shape[0])
        line, array = self.sites[site]
        for k in hits[: SanitizerError.MAX_REPORTS - len(self.findings)]:
            theirs: Position | str | None = None
            if other is not None:
                o = int(other[k])
                theirs = "several" if o == _SEVERAL else None if o == _NONE else self.position(o)
            self.findings.append(
                SanitizerFinding(
                    self.kernel,
                    kind,
                    line,
                    array,
                    -1 if index is None else int(index[k]),
                    self.position(int(units[k])),
                    theirs,
                )
            )

    def history(self, k: int, length: int) -> _GlobalHistory:
        """The history of global buffer ``k`` (``length`` elements), made at first use."""
        if k not in self._globals:
            self._globals[k] = _GlobalHistory(length)
        return self._globals[k]

    def unwritten(self, k: int, at: Any) -> np.ndarray | None:
        """Whether nothing wrote each element ``at`` of array argument ``k`` (None where that is
        not followed)."""
        written = self._marks(k)
        return None if written is None else ~written[at].all(axis=1)

    def wrote(self, k: int, at: Any) -> None:
        """The elements ``at`` of array argument ``k`` are written."""
        written = self._marks(k)
        if written is not None:
            written[at] = True

    def _marks(self, k: int) -> np.ndarray | None:
        """The marks of array argument ``k``'s elements (None where they are not followed)."""
        return self._written[k] if k < len(self._written) else None

    def fence(self, units: np.ndarray) -> None:
        """``units`` published their earlier global writes (``fence_device``)."""
        if self._fenced is None:
            cubes = self.count[0] * self.count[1] * self.count[2]
            self._fenced = np.full(cubes * self.units, -1, dtype=np.int64)
        self._fenced[units] = self.epoch
        self.epoch += 1

    def published(self, writers: np.ndarray, epochs: np.ndarray) -> np.ndarray:
        """Whether each writer fenced after its write of the given epoch."""
        if self._fenced is None:
            return np.zeros(writers.shape[0], dtype=bool)
        return np.asarray(self._fenced[np.maximum(writers, 0)] >= epochs) & (writers >= 0)


class _GlobalHistory:
    """Per element of one global buffer: the last writer, its epoch, the reader (or
    ``_SEVERAL``), the readers' cube (or ``_SEVERAL``) and their latest epoch."""

    __slots__ = ("r_cube", "r_epoch", "reader", "w_epoch", "writer")

    def __init__(self, length: int) -> None:
        self.writer = np.full(length, _NONE, dtype=np.int64)
        self.w_epoch = np.zeros(length, dtype=np.int64)
        self.reader = np.full(length, _NONE, dtype=np.int64)
        self.r_cube = np.full(length, _NONE, dtype=np.int64)
        self.r_epoch = np.zeros(length, dtype=np.int64)


class _SharedHistory:
    """Per element of one shared array of a batch: the writer and reader (unit in the cube,
    ``_SEVERAL``) since the cube's last barrier, the readers' plane (or ``_SEVERAL``), the
    plane-barrier epochs of the write and the latest read, and whether anything wrote it."""

    __slots__ = ("init", "r_epoch", "r_plane", "reader", "w_epoch", "writer")

    def __init__(self, size: int) -> None:
        self.writer = np.full(size, _NONE, dtype=np.int32)
        self.reader = np.full(size, _NONE, dtype=np.int32)
        self.r_plane = np.full(size, _NONE, dtype=np.int32)
        self.w_epoch = np.zeros(size, dtype=np.int64)
        self.r_epoch = np.zeros(size, dtype=np.int64)
        self.init = np.zeros(size, dtype=bool)

    def forget(self, cubes: np.ndarray, count: int) -> None:
        """A barrier of the ``cubes`` (a mask over ``count`` cubes): their elements' writers,
        readers and readers' planes start afresh (what was written stays written)."""
        for who in (self.writer, self.reader, self.r_plane):
            who.reshape(count, -1)[cubes] = _NONE


def _span(idx: Any, index: np.ndarray) -> slice | np.ndarray:
    """``index`` as a slice where it is the run ``start, start + 1, …`` of a lane vector of step
    1 that no lane left (so history arrays are read and written without a gather)."""
    if type(idx) is Lanes and idx.step == 1 and index.shape[0] == idx.n:
        return slice(idx.start, idx.start + idx.n)
    return index


def _distinct(idx: Any, per_cube: bool) -> bool:
    """Whether index ``idx`` reaches a different element on every lane: a lane vector with a
    step, or (``per_cube``: shared memory, a segment per cube) one repeated in every cube."""
    if type(idx) is Lanes:
        return idx.step != 0
    return per_cube and type(idx) is Units and type(idx.one) is Lanes and idx.one.step != 0


def _duplicates(
    flat: np.ndarray, who: np.ndarray, values: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """For one access's lanes: the elements that two different ``who`` reach (with different
    ``values``, when given), and per lane the ``who`` of an earlier lane that reached its element
    too (``_NONE`` where none did)."""
    partner = np.full(flat.shape[0], _NONE, dtype=np.int64)
    if flat.shape[0] < 2:
        return flat[:0], partner
    order = np.argsort(flat, kind="stable")
    f, w = flat[order], who[order]
    clash = (f[1:] == f[:-1]) & (w[1:] != w[:-1])
    if values is not None:
        v = values[order]
        clash &= v[1:] != v[:-1]
    partner[order[1:][clash]] = w[:-1][clash]
    return f[1:][clash], partner


class BatchSanitizer:
    """The checks of one batch ``g`` of a launch (see the module's contract)."""

    def __init__(self, launch: LaunchSanitizer, g: Batch) -> None:
        self.launch = launch
        self.g = g
        self.units = g.shape.units
        self.plane_dim = g.shape.plane_dim
        self.plane_epoch = 0  # counts the batch's plane barriers
        self._shared: dict[int, _SharedHistory] = {}
        self._local: dict[int, np.ndarray] = {}

    # --- helpers --------------------------------------------------------------------------------

    def _access(
        self, site: int, idx: Any, m: Any, length: int
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The active lanes and their in-bounds indices (``int64``); counts the others as
        out-of-bounds findings. None when no lane is active."""
        if m is False:
            return None
        n = self.g.n
        lanes = np.arange(n) if m is None else np.flatnonzero(m)
        raw = np.broadcast_to(arr(idx), (n,))
        if m is not None:
            raw = raw[lanes]
        if raw.dtype.kind == "u" and raw.dtype.itemsize == 8:
            index = raw.view(np.int64)  # values past 2**63 turn negative: out of bounds
        else:
            index = raw.astype(np.int64)
        bad = (index < 0) | (index >= length)
        if bad.any():
            self.launch.note("out-of-bounds", site, bad, self._unit_ids(lanes), index=index)
            keep = ~bad
            lanes, index = lanes[keep], index[keep]
        return lanes, index

    def _values(self, v: Any, lanes: np.ndarray) -> np.ndarray:
        """The stored value of each of ``lanes``."""
        values: np.ndarray = np.broadcast_to(arr(v), (self.g.n,))
        return values if lanes.shape[0] == self.g.n else values[lanes]

    def _unit_ids(self, lanes: np.ndarray) -> np.ndarray:
        return self.g.first * self.units + lanes

    def _shared_state(self, seg: Segmented) -> _SharedHistory:
        key = id(seg)
        if key not in self._shared:
            self._shared[key] = _SharedHistory(seg.data.shape[0])
        return self._shared[key]

    def _local_state(self, seg: Segmented) -> np.ndarray:
        key = id(seg)
        if key not in self._local:
            self._local[key] = np.zeros(seg.data.shape[0], dtype=bool)
        return self._local[key]

    def _other(self, lanes: np.ndarray, unit_in_cube: np.ndarray) -> np.ndarray:
        """Launch unit numbers of units ``unit_in_cube`` of the cubes of ``lanes``."""
        cube_first = (self.g.first + lanes // self.units) * self.units
        return np.where(unit_in_cube >= 0, cube_first + unit_in_cube, unit_in_cube)

    # --- shared memory and local arrays ---------------------------------------------------------

    def shared_read(
        self, site: int, seg: Segmented, idx: Any, m: Any, atomic: bool, length: Any = None
    ) -> None:
        """A load (``atomic``: an atomic load) of shared memory ``seg``; ``length``: the bound
        the checked launch compares the index with (default: the array's length)."""
        got = self._access(site, idx, m, seg.length if length is None else int(length))
        if got is None:
            return
        lanes, index = got
        s = self._shared_state(seg)
        flat = seg.base[lanes] + index
        ids = self._unit_ids(lanes)
        note = self.launch.note
        note("uninitialised read", site, ~s.init[flat], ids, index=index)
        if atomic:
            return
        unit = (lanes % self.units).astype(np.int32)
        plane = unit // self.plane_dim
        w = s.writer[flat]
        ordered = (w // self.plane_dim == plane) & (s.w_epoch[flat] < self.plane_epoch)
        note(
            "read-after-write race",
            site,
            (w >= 0) & (w != unit) & ~ordered,
            ids,
            index=index,
            other=self._other(lanes, w),
        )
        _note_readers(
            s.reader,
            s.r_plane,
            s.r_epoch,
            flat,
            unit,
            plane,
            self.plane_epoch,
            _distinct(idx, True),
        )

    def shared_write(
        self,
        site: int,
        seg: Segmented,
        idx: Any,
        m: Any,
        v: Any,
        atomic: bool,
        length: Any = None,
        updates: bool = False,
    ) -> None:
        """A store of ``v`` (``atomic``: any atomic update; ``updates``: one that combines the
        element's old value, which must have been written) to shared memory ``seg``. Units that
        store the value an element holds already do not race (a flag every unit sets)."""
        got = self._access(site, idx, m, seg.length if length is None else int(length))
        if got is None:
            return
        lanes, index = got
        s = self._shared_state(seg)
        flat = seg.base[lanes] + index
        if updates:
            unwritten = ~s.init[flat]
            self.launch.note(
                "uninitialised read", site, unwritten, self._unit_ids(lanes), index=index
            )
        s.init[flat] = True
        if atomic:
            return
        ids = self._unit_ids(lanes)
        unit = (lanes % self.units).astype(np.int32)
        note = self.launch.note
        w, r = s.writer[flat], s.reader[flat]
        plane, epoch = unit // self.plane_dim, self.plane_epoch
        values = self._values(v, lanes)
        partner = np.full(flat.shape[0], _NONE, dtype=np.int64)
        if not _distinct(idx, True):
            _, partner = _duplicates(flat, unit, values)
        clash = partner != _NONE
        w_ordered = (w // self.plane_dim == plane) & (s.w_epoch[flat] < epoch)
        note(
            "write-after-write race",
            site,
            ((w >= 0) & (w != unit) & ~w_ordered & (seg.data[flat] != values)) | clash,
            ids,
            index=index,
            other=self._other(lanes, np.where(clash, partner, w)),
        )
        r_ordered = (s.r_plane[flat] == plane) & (s.r_epoch[flat] < epoch)
        note(
            "write-after-read race",
            site,
            ((r == _SEVERAL) | ((r >= 0) & (r != unit))) & ~r_ordered,
            ids,
            index=index,
            other=self._other(lanes, r),
        )
        s.writer[flat] = unit
        s.w_epoch[flat] = epoch

    def shared_filled(self, seg: Segmented, m: Any) -> None:
        """A cooperative-matrix store to shared memory ``seg``: every element of the cubes of
        the lanes of ``m`` counts as written (the store's tile is not tracked)."""
        if m is False:
            return
        g = self.g
        here = np.ones(g.cubes, dtype=bool) if m is None else m.reshape(g.cubes, -1).any(axis=1)
        self._shared_state(seg).init.reshape(g.cubes, -1)[here] = True

    def line_bounds(self, site: int, line: Any, width: int, m: Any, lines: Any) -> None:
        """A line of ``width`` elements at line index ``line`` (unsigned) of an array of
        ``lines`` whole lines: the active lanes whose line is not whole in the array are out of
        bounds, reported at the line's last element (the elements of the other lanes are
        checked where they are accessed)."""
        if m is False:
            return
        n = self.g.n
        lanes = np.arange(n) if m is None else np.flatnonzero(m)
        raw = np.broadcast_to(arr(line), (n,))
        if m is not None:
            raw = raw[lanes]
        index = raw.astype(np.uint64)
        bad = index >= np.uint64(int(lines))
        if bad.any():  # the last element's index, read as int64 like other indices
            last = (index * np.uint64(width) + np.uint64(width - 1)).view(np.int64)
            self.launch.note("out-of-bounds", site, bad, self._unit_ids(lanes), index=last)

    def local_read(self, site: int, seg: Segmented, idx: Any, m: Any, length: Any = None) -> None:
        """A load of local array ``seg``: in bounds and written before by the lane."""
        got = self._access(site, idx, m, seg.length if length is None else int(length))
        if got is None:
            return
        lanes, index = got
        written = self._local_state(seg)[seg.base[lanes] + index]
        self.launch.note("uninitialised read", site, ~written, self._unit_ids(lanes), index=index)

    def local_write(self, site: int, seg: Segmented, idx: Any, m: Any, length: Any = None) -> None:
        """A store to local array ``seg``."""
        got = self._access(site, idx, m, seg.length if length is None else int(length))
        if got is not None:
            lanes, index = got
            self._local_state(seg)[seg.base[lanes] + index] = True

    # --- global memory --------------------------------------------------------------------------

    def global_bounds(
        self, site: int, buf: np.ndarray, idx: Any, m: Any, length: Any = None
    ) -> None:
        """An access of a global buffer that only its bounds concern."""
        self._access(site, idx, m, buf.shape[0] if length is None else int(length))

    def global_load(
        self, site: int, k: int, buf: np.ndarray, idx: Any, m: Any, length: Any = None
    ) -> None:
        """A load of global buffer ``k``, which the kernel never writes: in bounds, of an
        element something wrote."""
        got = self._access(site, idx, m, buf.shape[0] if length is None else int(length))
        if got is not None:
            lanes, index = got
            self._initialised(site, k, _span(idx, index), index, self._unit_ids(lanes))

    def global_atomic(
        self,
        site: int,
        k: int,
        buf: np.ndarray,
        idx: Any,
        m: Any,
        reads: bool,
        writes: bool,
        length: Any = None,
    ) -> None:
        """An atomic on global buffer ``k`` that ``reads`` the element's old value (a load, or
        an update that combines it: it must have been written) and ``writes`` it. Atomics
        never race."""
        got = self._access(site, idx, m, buf.shape[0] if length is None else int(length))
        if got is None:
            return
        lanes, index = got
        if reads:
            self._initialised(site, k, index, index, self._unit_ids(lanes))
        if writes:
            self.launch.wrote(k, index)

    def global_filled(self, k: int, m: Any) -> None:
        """A cooperative-matrix or bulk store to global buffer ``k`` by the lanes of ``m``:
        every element counts as written (the store's tile is not tracked)."""
        if m is not False:
            self.launch.wrote(k, slice(None))

    def _initialised(self, site: int, k: int, at: Any, index: np.ndarray, ids: np.ndarray) -> None:
        """Report the reads of elements ``at`` (``index``) of buffer ``k`` that nothing wrote."""
        unwritten = self.launch.unwritten(k, at)
        if unwritten is not None:
            self.launch.note("uninitialised read", site, unwritten, ids, index=index)

    def _global_access(
        self, site: int, k: int, buf: np.ndarray, idx: Any, m: Any, length: Any
    ) -> tuple[Any, Any, Any, Any, np.ndarray, np.ndarray] | None:
        """An access of global buffer ``k`` checked against its bounds: the active lanes, their
        indices, the span of the buffer's history they touch, that history, and the lanes'
        unit ids and cubes; None when no lane in bounds takes part."""
        got = self._access(site, idx, m, buf.shape[0] if length is None else int(length))
        if got is None:
            return None
        lanes, index = got
        ids = self._unit_ids(lanes)
        history = self.launch.history(k, buf.shape[0])
        return lanes, index, _span(idx, index), history, ids, ids // self.units

    def global_read(
        self, site: int, k: int, buf: np.ndarray, idx: Any, m: Any, length: Any = None
    ) -> None:
        """A load of global buffer ``k``, which the kernel also writes."""
        got = self._global_access(site, k, buf, idx, m, length)
        if got is None:
            return
        _, index, at, h, ids, cube = got
        self._initialised(site, k, at, index, ids)
        launch = self.launch
        epoch = launch.epoch
        w, we = h.writer[at], h.w_epoch[at]
        ordered = (w // self.units == cube) & (we < epoch)
        racing = (w >= 0) & (w != ids) & ~ordered
        if racing.any():
            racing &= ~launch.published(w, we)
        launch.note("read-after-write race", site, racing, ids, index=index, other=w)
        _note_readers(
            h.reader, h.r_cube, h.r_epoch, at, ids, cube, epoch, _distinct(idx, False), index
        )

    def global_write(
        self, site: int, k: int, buf: np.ndarray, idx: Any, m: Any, v: Any, length: Any = None
    ) -> None:
        """A store of ``v`` to global buffer ``k``. Units that store the value an element holds
        already do not race (the same result written by every cube)."""
        got = self._global_access(site, k, buf, idx, m, length)
        if got is None:
            return
        lanes, index, at, h, ids, cube = got
        launch = self.launch
        epoch = launch.epoch
        w, we = h.writer[at], h.w_epoch[at]
        values = self._values(v, lanes)
        partner = np.full(index.shape[0], _NONE, dtype=np.int64)
        if not _distinct(idx, False):
            _, partner = _duplicates(index, ids, values)
        clash = partner != _NONE
        same_cube_before = (w // self.units == cube) & (we < epoch)
        launch.note(
            "write-after-write race",
            site,
            ((w >= 0) & (w != ids) & ~same_cube_before & (buf[at] != values)) | clash,
            ids,
            index=index,
            other=np.where(clash, partner, w),
        )
        r, rc, re = h.reader[at], h.r_cube[at], h.r_epoch[at]
        others_read = (r == _SEVERAL) | ((r >= 0) & (r != ids))
        launch.note(
            "write-after-read race",
            site,
            others_read & ~((rc == cube) & (re < epoch)),
            ids,
            index=index,
            other=r,
        )
        h.writer[at] = ids
        h.w_epoch[at] = epoch
        launch.wrote(k, at)

    # --- barriers and fences --------------------------------------------------------------------

    def barrier(self, site: int, m: Any, alive: Any) -> None:
        """``sync_units`` (or a reducing barrier) reached by the lanes of ``m``; ``alive`` the
        lanes that have not returned. Reports the live units of a cube that reached it without
        them, and starts a new interval for the shared memory of the cubes that reached it."""
        launch = self.launch
        launch.epoch += 1
        if m is False:
            return
        g = self.g
        shape = (g.cubes, self.units)
        here: np.ndarray = np.ones(shape, dtype=bool) if m is None else m.reshape(shape)
        live = np.ones(shape, dtype=bool) if alive is None else alive.reshape(shape)
        cubes_here: np.ndarray = np.asarray(here.any(axis=1))
        absent = live & ~here & cubes_here[:, None]
        if absent.any():
            cube_rows, unit_cols = np.nonzero(absent)
            lanes_absent = cube_rows * self.units + unit_cols
            first_here = here.argmax(axis=1)[cube_rows]
            launch.note(
                "divergent barrier",
                site,
                np.ones(lanes_absent.shape[0], dtype=bool),
                self._unit_ids(cube_rows * self.units + first_here),
                other=self._unit_ids(lanes_absent),
            )
        for s in self._shared.values():
            s.forget(cubes_here, g.cubes)

    def barrier_wait(self, m: Any) -> None:
        """An ``mbarrier.wait`` by the lanes of ``m`` returned: the accesses before the
        arrivals of the phase it saw are ordered before those after it. Starts a new interval
        for the shared memory of the cubes that waited (as ``sync_units`` does, without its
        check that every unit reaches it: a wait also orders the other units' later accesses,
        which lets some races go unreported)."""
        if m is False:
            return
        g = self.g
        here = np.ones(g.cubes, dtype=bool) if m is None else m.reshape(g.cubes, -1).any(axis=1)
        for s in self._shared.values():
            s.forget(here, g.cubes)

    def plane_read(self, site: int, op: Callable[..., Any], arg: Any, m: Any) -> None:
        """A broadcast or shuffle ``op`` (``arg``: its lane, delta or mask) run by the lanes of
        ``m``: reports each active lane whose source lane exists but is not active (its value
        is undefined on GPUs)."""
        if m is None or m is False:
            return
        g = self.g
        exists = np.asarray(op(g, np.ones(g.n, dtype=bool), arg, None), dtype=bool)
        source_active = np.asarray(op(g, m, arg, None), dtype=bool)
        bad = m & exists & ~source_active
        if bad.any():
            lanes = np.arange(g.n, dtype=np.int64)
            source = np.asarray(op(g, lanes, arg, None), dtype=np.int64)
            self.launch.note(
                "divergent plane shuffle",
                site,
                bad,
                self._unit_ids(lanes),
                other=self._unit_ids(source),
            )

    def plane_barrier(self) -> None:
        """``sync_plane``: orders the shared-memory accesses of the units of each plane."""
        self.plane_epoch += 1

    def fence_device(self, m: Any) -> None:
        """``fence_device`` by the lanes of ``m``: their earlier global writes are published."""
        if m is False:
            return
        lanes = np.arange(self.g.n) if m is None else np.flatnonzero(m)
        self.launch.fence(self._unit_ids(lanes))


def _note_readers(
    reader: np.ndarray,
    group: np.ndarray,
    epoch_of: np.ndarray,
    at: Any,
    units: np.ndarray,
    groups: np.ndarray,
    epoch: int,
    distinct: bool,
    index: np.ndarray | None = None,
) -> None:
    """Record that ``units`` (of ``groups``: planes or cubes) read the elements ``at`` in
    ``epoch``: an element read by a unit alone keeps that unit, by several units ``_SEVERAL``
    (and likewise its group). ``index`` (default ``at``) gives each unit's element where several
    units may read one."""
    r, g = reader[at], group[at]
    reader[at] = np.where((r == _NONE) | (r == units), units, _SEVERAL)
    group[at] = np.where((g == _NONE) | (g == groups), groups, _SEVERAL)
    epoch_of[at] = epoch
    if not distinct:
        where = at if index is None else index
        several, _ = _duplicates(where, units)
        reader[several] = _SEVERAL
        other, _ = _duplicates(where, groups)
        group[other] = _SEVERAL
