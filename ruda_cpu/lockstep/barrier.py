"""Asynchronous barriers (``mbarrier``) and bulk copies over the cubes of a batch: the
reference model of ``MBAR_*``, ``BULK_COPY`` and ``TENSOR_COPY`` (see :mod:`ruda_core.ir.ops`).

:class:`Barriers` is the state of one batch of one kernel: per barrier array (a shared ``u64``
array, whose words the model leaves alone) and per cube, each barrier's init count, phase,
pending arrivals and transaction bytes, and the bulk copies issued and not landed. A copy reads
its source at issue and fills its destination with the poison pattern (so a read before the
wait shows); it completes its bytes on the barrier at the first wait on that barrier, and its
elements land when the barrier's phase completes, after the model checked that nobody wrote
the destination meanwhile. The units of a cube run in step, so a wait whose phase has not
completed when the units reach it can never complete: the model raises instead of hanging.
Each rule the model can see raises :class:`BarrierFault` (the executor names the kernel).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ruda_core.ir import BULK_ALIGN_NBYTES, MAX_ARRIVALS, TENSOR_ROW_NBYTES

from .batch import Batch, Segmented
from .poison import pattern_bits
from .values import arr

__all__ = [
    "BarrierFault",
    "Barriers",
    "barriers",
    "barriers_end",
    "bulk_copy",
    "mbar_arrive",
    "mbar_expect_tx",
    "mbar_init",
    "mbar_wait",
    "tensor_copy",
]


class BarrierFault(RuntimeError):
    """A kernel broke a rule of the asynchronous barriers or bulk copies (the message says
    which)."""


class _Copy:
    """One bulk copy of one unit: where its elements go in ``dst.data``, the elements as read at
    issue, its bytes and whether they completed on its barrier."""

    __slots__ = ("at", "counted", "dst", "key", "nbytes", "values")

    def __init__(self, dst: Segmented, at: np.ndarray, values: np.ndarray, key: int) -> None:
        self.dst, self.at, self.values, self.key = dst, at, values, key
        self.nbytes = values.nbytes
        self.counted = False


class _Array:
    """The barriers of one barrier array in every cube of a batch; barrier ``i`` of cube ``c``
    is entry ``c * n + i`` of each flat array."""

    __slots__ = ("copies", "count", "n", "pending", "phase", "tx", "words")

    def __init__(self, words: Segmented, cubes: int) -> None:
        self.words = words  # held so that its id keys this state for the batch's lifetime
        self.n = words.length
        self.count = np.zeros(cubes * self.n, dtype=np.int64)  # 0: not initialised
        self.pending = np.zeros(cubes * self.n, dtype=np.int64)
        self.phase = np.zeros(cubes * self.n, dtype=np.int64)
        self.tx = np.zeros(cubes * self.n, dtype=np.int64)
        self.copies: list[_Copy] = []


class _Store:
    """One bulk store of one unit: its source's elements as read at issue and where they lie in
    ``src.data``, where they go in ``dst``, and the unit and bulk group it belongs to."""

    __slots__ = ("at", "dst", "group", "lane", "src", "to", "values")

    def __init__(
        self, src: Segmented, at: np.ndarray, dst: np.ndarray, to: slice, lane: int, group: int
    ) -> None:
        self.src, self.at, self.dst, self.to = src, at, dst, to
        self.values = src.data[at].copy()
        self.lane, self.group = lane, group


class Barriers:
    """The barrier and bulk store state of one batch of the kernel ``kernel``."""

    __slots__ = ("arrays", "groups", "kernel", "stores", "units")

    def __init__(self, g: Batch, kernel: str) -> None:
        self.kernel = kernel
        self.units = g.shape.units
        self.arrays: dict[int, _Array] = {}
        #: the number of each lane's open bulk group (its commits so far)
        self.groups = np.zeros(g.n, dtype=np.int64)
        self.stores: list[_Store] = []

    def array(self, g: Batch, words: Segmented) -> _Array:
        state = self.arrays.get(id(words))
        if state is None:
            state = self.arrays[id(words)] = _Array(words, g.cubes)
        return state

    def lanes(self, g: Batch, m: Any) -> np.ndarray:
        """The active lanes of ``m``."""
        if m is None:
            return np.arange(g.n)
        if m is False:
            return np.zeros(0, dtype=np.intp)
        lanes: np.ndarray = np.flatnonzero(m)
        return lanes

    def keys(self, st: _Array, lanes: np.ndarray, i: Any, what: str, ready: bool = True) -> Any:
        """The flat barrier entry of each lane of ``lanes`` for the index ``i``; with ``ready``,
        raise when one is not initialised."""
        index = _at(i, lanes)
        if ((index < 0) | (index >= st.n)).any():
            bad = int(index[(index < 0) | (index >= st.n)][0])
            raise BarrierFault(f"{what} names barrier {bad} of an array of {st.n} barriers")
        keys = lanes // self.units * st.n + index
        if ready and (st.count[keys] == 0).any():
            bad = int(index[st.count[keys] == 0][0])
            raise BarrierFault(
                f"{what} uses barrier {bad} before mbarrier.init(); initialise it by one unit "
                "and sync_units() before any other use"
            )
        return keys

    def arrive(self, st: _Array, keys: np.ndarray, what: str) -> None:
        """One arrival per entry of ``keys``, in order; a phase completes when its arrivals
        and bytes are all in, and the arrivals left count towards the next."""
        for key, arrivals in zip(*np.unique(keys, return_counts=True), strict=True):
            left = int(arrivals)
            while left:
                take = min(left, int(st.pending[key]))
                st.pending[key] -= take
                left -= take
                if st.pending[key] or st.tx[key]:
                    if left:
                        raise BarrierFault(
                            f"{what} arrives {left} more times on barrier {key % st.n} than its "
                            f"count ({int(st.count[key])}) in one phase, whose "
                            f"{int(st.tx[key])} transaction bytes are still pending"
                        )
                    continue
                self.complete(st, int(key))

    def complete(self, st: _Array, key: int) -> None:
        """The phase of ``key`` completes: its counted copies land, the barrier re-arms."""
        for copy in [c for c in st.copies if c.key == key and c.counted]:
            data = copy.dst.data
            bits = data[copy.at].view(f"u{data.itemsize}")
            if (bits != pattern_bits(data.dtype)).any():
                raise BarrierFault(
                    f"the destination of a bulk copy on barrier {key % st.n} was written before "
                    "the copy's phase completed; it must not be read or written until the "
                    "mbarrier.wait that sees the phase complete"
                )
            data[copy.at] = copy.values
            st.copies.remove(copy)
        st.phase[key] += 1
        st.pending[key] = st.count[key]


def _at(v: Any, lanes: np.ndarray) -> np.ndarray:
    """The ``int64`` value of ``v`` at each of ``lanes``."""
    values = np.asarray(arr(v)).astype(np.int64)
    return np.broadcast_to(values, (lanes.shape[0],)) if values.ndim == 0 else values[lanes]


def barriers(g: Batch, kernel: str) -> Barriers:
    """The barrier state of a new batch."""
    return Barriers(g, kernel)


def barriers_end(b: Barriers) -> None:
    """Raise when the kernel ends with bulk copies that have not landed or bulk stores that no
    wait completed."""
    if b.stores:
        raise BarrierFault(
            f"the kernel ends with {len(b.stores)} bulk stores that no mbarrier.bulk_wait "
            "completed; mbarrier.bulk_commit() and mbarrier.bulk_wait(0) before the kernel ends"
        )
    for st in b.arrays.values():
        if st.copies:
            key = st.copies[0].key
            raise BarrierFault(
                f"the kernel ends with {len(st.copies)} bulk copies pending (the first on "
                f"barrier {key % st.n}); every copy must complete its phase and be "
                "waited for (mbarrier.wait) before the kernel ends"
            )


def mbar_init(g: Batch, b: Barriers, words: Segmented, i: Any, count: Any, m: Any) -> None:
    st = b.array(g, words)
    lanes = b.lanes(g, m)
    keys = b.keys(st, lanes, i, "mbarrier.init", ready=False)
    counts = _at(count, lanes)
    if ((counts < 1) | (counts > MAX_ARRIVALS)).any():
        bad = int(counts[(counts < 1) | (counts > MAX_ARRIVALS)][0])
        raise BarrierFault(f"mbarrier.init() needs a count from 1 to {MAX_ARRIVALS}, got {bad}")
    unique, times = np.unique(keys, return_counts=True)
    if (times > 1).any():
        raise BarrierFault(
            f"mbarrier.init() of barrier {int(unique[times > 1][0]) % st.n} by "
            f"{int(times.max())} units of a cube at once; one unit initialises a barrier"
        )
    if np.isin([c.key for c in st.copies], unique).any():
        raise BarrierFault("mbarrier.init() of a barrier with bulk copies pending on it")
    st.count[keys] = counts
    st.pending[keys] = counts
    st.phase[keys] = 0
    st.tx[keys] = 0


def mbar_arrive(g: Batch, b: Barriers, words: Segmented, i: Any, m: Any) -> None:
    st = b.array(g, words)
    lanes = b.lanes(g, m)
    b.arrive(st, b.keys(st, lanes, i, "mbarrier.arrive"), "mbarrier.arrive")


def mbar_expect_tx(g: Batch, b: Barriers, words: Segmented, i: Any, nbytes: Any, m: Any) -> None:
    st = b.array(g, words)
    lanes = b.lanes(g, m)
    keys = b.keys(st, lanes, i, "mbarrier.arrive_expect_tx")
    np.add.at(st.tx, keys, _at(nbytes, lanes))
    b.arrive(st, keys, "mbarrier.arrive_expect_tx")


def mbar_wait(g: Batch, b: Barriers, words: Segmented, i: Any, parity: Any, m: Any) -> None:
    st = b.array(g, words)
    lanes = b.lanes(g, m)
    keys = b.keys(st, lanes, i, "mbarrier.wait")
    for key in np.unique(keys).tolist():
        for copy in st.copies:  # the copies in flight on the barrier complete their bytes
            if copy.key == key and not copy.counted:
                copy.counted = True
                st.tx[key] -= copy.nbytes
        if st.pending[key] == 0 and st.tx[key] == 0:
            b.complete(st, key)
    waiting = (st.phase[keys] & 1) == (_at(parity, lanes) & 1)
    if waiting.any():
        key = int(keys[waiting][0])
        tx = int(st.tx[key])
        lacks = (
            f"{tx} transaction bytes" if tx >= 0 else f"{-tx} bytes copied beyond those announced"
        )
        raise BarrierFault(
            f"mbarrier.wait() on barrier {key % st.n} for its phase of parity "
            f"{int(st.phase[key]) & 1} can never return: every unit of the cube is waiting and "
            f"the phase lacks {int(st.pending[key])} arrivals and {lacks} (the bytes of "
            "arrive_expect_tx must equal the bytes its bulk copies bring)"
        )


def _check_run(
    k: int, size: int, d: int, s: int, dst_length: int, src_length: int, what: str
) -> None:
    """Raise unless a bulk copy of ``k`` elements of ``size`` bytes from element ``s`` of an
    array of ``src_length`` to element ``d`` of one of ``dst_length`` is aligned and inside."""
    if (
        k < 1
        or (k * size) % BULK_ALIGN_NBYTES
        or (d * size) % BULK_ALIGN_NBYTES
        or (s * size) % BULK_ALIGN_NBYTES
    ):
        raise BarrierFault(
            f"{what} of {k} elements ({k * size} bytes) from element {s} to element {d}: both "
            f"runs must start 16-byte aligned and the size must be a positive multiple of "
            f"{BULK_ALIGN_NBYTES} bytes"
        )
    if d + k > dst_length or s + k > src_length:
        raise BarrierFault(
            f"{what} of {k} elements from element {s} of an array of {src_length} to element "
            f"{d} of an array of {dst_length}: out of bounds"
        )


def _issue(
    st: _Array, dst: Segmented, where: np.ndarray, values: np.ndarray, key: int, what: str
) -> None:
    """A copy of ``values`` to the elements ``where`` of ``dst`` is in flight on barrier
    ``key``: its destination holds the poison pattern until the copy lands."""
    if any(np.isin(where, c.at).any() for c in st.copies if c.dst is dst):
        raise BarrierFault(f"{what} into elements another bulk copy has not written yet")
    st.copies.append(_Copy(dst, where, values, key))
    dst.data.view(f"u{dst.data.itemsize}")[where] = pattern_bits(dst.data.dtype)


def bulk_copy(
    g: Batch,
    b: Barriers,
    dst: Segmented,
    dst_at: Any,
    src: np.ndarray,
    src_at: Any,
    n: Any,
    words: Segmented,
    i: Any,
    m: Any,
) -> None:
    st = b.array(g, words)
    lanes = b.lanes(g, m)
    keys = b.keys(st, lanes, i, "mbarrier.bulk_copy")
    size = dst.data.itemsize
    at, start, count = _at(dst_at, lanes), _at(src_at, lanes), _at(n, lanes)
    for lane, key, d, s, k in zip(lanes, keys, at, start, count, strict=True):
        _check_run(k, size, d, s, dst.length, src.shape[0], "mbarrier.bulk_copy()")
        where = int(lane) // b.units * dst.length + int(d) + np.arange(int(k))
        _issue(st, dst, where, src[s : s + k].copy(), int(key), "mbarrier.bulk_copy()")


#: The alignment of a tensor copy's destination: the 128-byte swizzle's repeat of 8 rows.
_SWIZZLE_ATOM_NBYTES = 8 * TENSOR_ROW_NBYTES


def _swizzled_box(box_rows: int, box_cols: int, nbytes: int) -> np.ndarray:
    """Where element ``(r, c)`` of a box (flattened row-major) lands, in elements from the
    destination's start: row ``r``'s 16-byte chunk ``q`` at chunk ``q ^ (r % 8)``."""
    per_chunk = BULK_ALIGN_NBYTES // nbytes
    r, c = np.divmod(np.arange(box_rows * box_cols), box_cols)
    chunk = (c // per_chunk) ^ (r % 8)
    at: np.ndarray = r * box_cols + chunk * per_chunk + c % per_chunk
    return at


def tensor_copy(
    g: Batch,
    b: Barriers,
    dst: Segmented,
    dst_at: Any,
    src: np.ndarray,
    rows: Any,
    cols: Any,
    row: Any,
    col: Any,
    box_rows: Any,
    box_cols: Any,
    words: Segmented,
    i: Any,
    m: Any,
) -> None:
    st = b.array(g, words)
    lanes = b.lanes(g, m)
    keys = b.keys(st, lanes, i, "mbarrier.tensor_copy")
    size = dst.data.itemsize
    n_rows, n_cols, br, bc = int(rows), int(cols), int(box_rows), int(box_cols)
    if (n_cols * size) % BULK_ALIGN_NBYTES or n_rows * n_cols > src.shape[0]:
        raise BarrierFault(
            f"mbarrier.tensor_copy() of a {n_rows} x {n_cols} matrix from an array of "
            f"{src.shape[0]} elements: a row must be a multiple of {BULK_ALIGN_NBYTES} bytes "
            f"({n_cols * size} here) and the matrix inside its array"
        )
    matrix = src[: n_rows * n_cols].reshape(n_rows, n_cols)
    place = _swizzled_box(br, bc, size)
    at, first, left = _at(dst_at, lanes), _at(row, lanes), _at(col, lanes)
    for lane, key, d, r0, c0 in zip(lanes, keys, at, first, left, strict=True):
        if (d * size) % _SWIZZLE_ATOM_NBYTES or d + br * bc > dst.length:
            raise BarrierFault(
                f"mbarrier.tensor_copy() of a {br} x {bc} box to element {d} of a SharedMemory "
                f"of {dst.length}: the box must start {_SWIZZLE_ATOM_NBYTES}-byte aligned and "
                "lie inside it"
            )
        box = np.zeros((br, bc), dtype=src.dtype)
        inside = matrix[r0 : r0 + br, c0 : c0 + bc]
        box[: inside.shape[0], : inside.shape[1]] = inside
        values = np.empty(br * bc, dtype=src.dtype)
        values[place] = box.reshape(-1)
        where = int(lane) // b.units * dst.length + int(d) + np.arange(br * bc)
        _issue(st, dst, where, values, int(key), "mbarrier.tensor_copy()")


def bulk_fence(g: Batch, b: Barriers, m: Any) -> None:
    """Nothing to model: a bulk store here reads its source when it is issued, after every
    earlier store of the batch."""


def bulk_store(
    g: Batch,
    b: Barriers,
    dst: np.ndarray,
    dst_at: Any,
    src: Segmented,
    src_at: Any,
    n: Any,
    m: Any,
) -> None:
    lanes = b.lanes(g, m)
    size = src.data.itemsize
    at, start, count = _at(dst_at, lanes), _at(src_at, lanes), _at(n, lanes)
    for lane, d, s, k in zip(
        lanes.tolist(), at.tolist(), start.tolist(), count.tolist(), strict=True
    ):
        _check_run(k, size, d, s, dst.shape[0], src.length, "mbarrier.bulk_store()")
        where = lane // b.units * src.length + s + np.arange(k)
        b.stores.append(_Store(src, where, dst, slice(d, d + k), lane, int(b.groups[lane])))


def bulk_commit(g: Batch, b: Barriers, m: Any) -> None:
    b.groups[b.lanes(g, m)] += 1


def bulk_wait(g: Batch, b: Barriers, n: Any, m: Any) -> None:
    """The stores of the groups of each active lane but its newest ``n`` closed ones and its
    open one complete: their sources must still hold what they held at issue."""
    waiting = np.zeros(g.n, dtype=bool)
    waiting[b.lanes(g, m)] = True
    done = [p for p in b.stores if waiting[p.lane] and p.group < b.groups[p.lane] - int(n)]
    for store in done:
        if not np.array_equal(store.src.data[store.at], store.values, equal_nan=True):
            raise BarrierFault(
                "the source of a bulk store was written before the mbarrier.bulk_wait that "
                "completes its group; it must not change until then"
            )
        store.dst[store.to] = store.values
        b.stores.remove(store)
