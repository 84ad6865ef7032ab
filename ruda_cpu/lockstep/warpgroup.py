"""Warpgroup matrices (``wgmma``) over the warpgroups of a batch: the reference model of
``WGMMA_*`` (see :mod:`ruda_core.ir.ops`).

A batch's cubes have a multiple of 128 units, so lane ``k`` is unit ``k % 128`` of warpgroup
``k // 128`` of the batch. :class:`Warpgroups` is the state of one batch of one kernel: its
accumulators (one ``(warpgroups, 64, n)`` ``f32`` array each) and the products issued and not
yet complete. ``mma_async`` reads its operand tiles when it is issued; the product lands in the
accumulator at the ``wait`` that completes its group, which first reads the tiles again and
raises if they changed. Each rule of the IR the model can see raises :class:`WarpgroupFault`
(the executor names the kernel): an operation reached by some units of a warpgroup only or
with operands that differ between them, a fill or store of an accumulator with products
pending, a ``mma_async`` after a write of its accumulator with no ``fence`` between, a
misaligned operand or one outside its shared array, a kernel that ends with products pending,
and a cube whose unit count is not a multiple of 128.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ruda_core.ir import (
    SWIZZLE_ATOM,
    WARPGROUP_K,
    WARPGROUP_M,
    WARPGROUP_UNITS,
    operand_indices,
    swizzle,
    warpgroup_product,
)

from .batch import Batch, Segmented
from .values import arr

__all__ = [
    "Accumulator",
    "WarpgroupFault",
    "Warpgroups",
    "warpgroups",
    "warpgroups_end",
    "wgmma_commit",
    "wgmma_fence",
    "wgmma_fill",
    "wgmma_mma",
    "wgmma_store",
    "wgmma_wait",
]


class WarpgroupFault(RuntimeError):
    """A kernel broke a rule of the warpgroup matrix operations (the message says which)."""


class Accumulator:
    """One accumulator of every warpgroup of a batch."""

    __slots__ = ("name", "pending", "unfenced", "value")

    def __init__(self, name: str, groups: int, n: int) -> None:
        self.name = name
        self.value = np.zeros((groups, WARPGROUP_M, n), dtype=np.float32)
        #: products issued into it and not complete, per warpgroup
        self.pending = np.zeros(groups, dtype=np.int64)
        #: written or read by units since the warpgroup's last fence
        self.unfenced = np.ones(groups, dtype=bool)


class _Product:
    """One ``mma_async`` of some warpgroups: its operands as read at issue, where it read
    them, and which warpgroups have not completed it."""

    __slots__ = ("a", "acc", "b", "group", "reads", "remaining", "wgs")

    def __init__(
        self,
        acc: Accumulator,
        wgs: np.ndarray,
        group: np.ndarray,
        operands: tuple[np.ndarray, np.ndarray],
        reads: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    ) -> None:
        self.acc = acc
        self.wgs = wgs
        self.group = group
        self.a, self.b = operands
        self.reads = reads
        self.remaining = np.ones(len(wgs), dtype=bool)


class Warpgroups:
    """The warpgroup state of one batch of the kernel ``kernel``."""

    __slots__ = ("accumulators", "count", "groups", "kernel", "products")

    def __init__(self, g: Batch, kernel: str) -> None:
        units = g.shape.units
        if units % WARPGROUP_UNITS:
            raise WarpgroupFault(
                f"wgmma needs cubes of a multiple of {WARPGROUP_UNITS} units (whole "
                f"warpgroups); this launch has {units} units per cube"
            )
        self.kernel = kernel
        self.count = g.n // WARPGROUP_UNITS
        #: the number of the open group of each warpgroup (commits so far)
        self.groups = np.zeros(self.count, dtype=np.int64)
        self.accumulators: list[Accumulator] = []
        self.products: list[_Product] = []

    def accumulator(self, name: str, n: int) -> Accumulator:
        acc = Accumulator(name, self.count, n)
        self.accumulators.append(acc)
        return acc

    def active(self, m: Any, what: str) -> np.ndarray:
        """The warpgroups with an active lane; each must have all its lanes active."""
        if m is None:
            return np.arange(self.count)
        if m is False:
            return np.zeros(0, dtype=np.intp)
        grid = np.asarray(m, dtype=bool).reshape(self.count, WARPGROUP_UNITS)
        some, every = grid.any(axis=1), grid.all(axis=1)
        if (some & ~every).any():
            w = int(np.flatnonzero(some & ~every)[0])
            raise WarpgroupFault(
                f"{what} was reached by {int(grid[w].sum())} of the 128 units of warpgroup {w} "
                "of a cube; every unit of a warpgroup must reach it (uniform control flow)"
            )
        active: np.ndarray = np.flatnonzero(some)
        return active

    def per_group(self, v: Any, wgs: np.ndarray, what: str) -> np.ndarray:
        """The value of ``v`` in each of the warpgroups ``wgs`` (uniform over each)."""
        v = arr(v)
        if np.ndim(v) == 0:
            return np.full(len(wgs), int(v), dtype=np.int64)
        grid = np.asarray(v).astype(np.int64).reshape(self.count, WARPGROUP_UNITS)[wgs]
        if (grid != grid[:, :1]).any():
            raise WarpgroupFault(
                f"{what} differs between the units of a warpgroup; it must be the same on all"
            )
        values: np.ndarray = grid[:, 0]
        return values

    def settled(self, acc: Accumulator, wgs: np.ndarray, what: str) -> None:
        """Raise when ``acc`` has products pending in one of ``wgs``."""
        pending = acc.pending[wgs]
        if pending.any():
            raise WarpgroupFault(
                f"{what} of accumulator '{acc.name}' while {int(pending.max())} of its "
                "products are pending; wgmma.commit() and wgmma.wait(0) first (an accumulator "
                "must not be touched between mma_async and the wait that completes it)"
            )


def warpgroups(g: Batch, kernel: str) -> Warpgroups:
    """The warpgroup state of a new batch (raises when its cubes are not whole warpgroups)."""
    return Warpgroups(g, kernel)


def warpgroups_end(wg: Warpgroups) -> None:
    """The kernel's end: every product must be complete."""
    for acc in wg.accumulators:
        if acc.pending.any():
            raise WarpgroupFault(
                f"the kernel ends with {int(acc.pending.sum())} products pending on accumulator "
                f"'{acc.name}'; every mma_async must be committed and waited for "
                "(wgmma.commit(), wgmma.wait(0)) before the kernel ends"
            )


def wgmma_fill(g: Batch, wg: Warpgroups, acc: Accumulator, value: Any, m: Any) -> None:
    wgs = wg.active(m, "wgmma.fill")
    wg.settled(acc, wgs, "wgmma.fill")
    values = np.broadcast_to(arr(value), (g.n,)).reshape(wg.count, WARPGROUP_UNITS)[wgs, 0]
    acc.value[wgs] = values.astype(np.float32)[:, None, None]
    acc.unfenced[wgs] = True


def wgmma_fence(g: Batch, wg: Warpgroups, m: Any) -> None:
    wgs = wg.active(m, "wgmma.fence")
    for acc in wg.accumulators:
        acc.unfenced[wgs] = False


def _operand_reads(
    wg: Warpgroups,
    mem: Segmented,
    at: np.ndarray,
    wgs: np.ndarray,
    index: np.ndarray,
    what: str,
) -> np.ndarray:
    """Absolute indices into ``mem.data`` of the logical operand ``index`` of each warpgroup."""
    stored = swizzle(index)
    outside = (stored < 0) | (stored >= mem.length)
    if outside.any():
        k = int(np.flatnonzero(outside.reshape(len(wgs), -1).any(axis=1))[0])
        raise WarpgroupFault(
            f"wgmma.mma_async's {what} at {int(at[k])} reaches element "
            f"{int(stored[k].max())} of a shared array of {mem.length}; the tile must lie "
            "inside it"
        )
    per_cube = mem.per // WARPGROUP_UNITS
    base = (wgs // per_cube * mem.length).reshape((-1,) + (1,) * (index.ndim - 1))
    absolute: np.ndarray = base + stored
    return absolute


def wgmma_mma(
    g: Batch,
    wg: Warpgroups,
    acc: Accumulator,
    a_mem: Segmented,
    a_at: Any,
    b_mem: Segmented,
    b_at: Any,
    block: int,
    m: Any,
) -> None:
    wgs = wg.active(m, "wgmma.mma_async")
    if not len(wgs):
        return
    unfenced = acc.unfenced[wgs]
    if unfenced.any():
        raise WarpgroupFault(
            f"wgmma.mma_async into accumulator '{acc.name}' after units wrote or read it "
            "(wgmma.fill, wgmma.store or the kernel's start) with no wgmma.fence() between"
        )
    a_at_g = wg.per_group(a_at, wgs, "wgmma.mma_async's a_at")
    b_at_g = wg.per_group(b_at, wgs, "wgmma.mma_async's b_at")
    bad_a = (a_at_g % WARPGROUP_K != 0) | (a_at_g % SWIZZLE_ATOM >= 64)
    bad_b = b_at_g % SWIZZLE_ATOM != 0
    if bad_a.any() or bad_b.any():
        raise WarpgroupFault(
            f"wgmma.mma_async needs a_at % 16 == 0, a_at % 512 < 64 and b_at % 512 == 0; got "
            f"a_at {int(a_at_g[0])}, b_at {int(b_at_g[0])}"
        )
    n = acc.value.shape[2]
    a_index, b_index = operand_indices(a_at_g, b_at_g, block, n)
    a_reads = _operand_reads(wg, a_mem, a_at_g, wgs, a_index, "A")
    b_reads = _operand_reads(wg, b_mem, b_at_g, wgs, b_index, "B")
    operands = (a_mem.data[a_reads], b_mem.data[b_reads])
    reads = (a_mem.data, a_reads, b_mem.data, b_reads)
    wg.products.append(_Product(acc, wgs, wg.groups[wgs].copy(), operands, reads))
    acc.pending[wgs] += 1


def wgmma_commit(g: Batch, wg: Warpgroups, m: Any) -> None:
    wg.groups[wg.active(m, "wgmma.commit")] += 1


def _same(now: np.ndarray, then: np.ndarray) -> bool:
    """Whether two operand reads hold the same bits (NaNs included)."""
    width = f"u{now.dtype.itemsize}"
    return bool(np.array_equal(now.view(width), then.view(width)))


def wgmma_wait(g: Batch, wg: Warpgroups, n: int, m: Any) -> None:
    wgs = wg.active(m, "wgmma.wait")
    limit = np.full(wg.count, np.iinfo(np.int64).min, dtype=np.int64)
    limit[wgs] = wg.groups[wgs] - n  # groups below this one complete
    for p in wg.products:
        done = p.remaining & (p.group < limit[p.wgs])
        if not done.any():
            continue
        a_data, a_reads, b_data, b_reads = p.reads
        if not (
            _same(a_data[a_reads[done]], p.a[done]) and _same(b_data[b_reads[done]], p.b[done])
        ):
            raise WarpgroupFault(
                f"an operand tile of a wgmma.mma_async into '{p.acc.name}' was written before "
                "the wgmma.wait that completes it; the tiles must not change until then"
            )
        sel = p.wgs[done]
        p.acc.value[sel] = warpgroup_product(p.a[done], p.b[done], p.acc.value[sel])
        p.acc.pending[sel] -= 1
        p.remaining &= ~done
    wg.products = [p for p in wg.products if p.remaining.any()]


def wgmma_store(
    g: Batch,
    wg: Warpgroups,
    mem: np.ndarray | Segmented,
    offset: Any,
    acc: Accumulator,
    stride: Any,
    rows: Any,
    cols: Any,
    m: Any,
) -> None:
    wgs = wg.active(m, "wgmma.store")
    wg.settled(acc, wgs, "wgmma.store")
    acc.unfenced[wgs] = True
    n = acc.value.shape[2]
    at, step, nrows, ncols = (
        wg.per_group(v, wgs, "wgmma.store's " + what)[:, None, None]
        for v, what in ((offset, "offset"), (stride, "stride"), (rows, "rows"), (cols, "cols"))
    )
    r = np.arange(WARPGROUP_M, dtype=np.int64)[None, :, None]
    c = np.arange(n, dtype=np.int64)[None, None, :]
    index = at + r * step + c
    base: np.ndarray | int = 0
    if isinstance(mem, Segmented):  # each warpgroup's cube's segment
        data, length = mem.data, mem.length
        base = (wgs // (mem.per // WARPGROUP_UNITS) * length)[:, None, None]
    else:
        data, length = mem, mem.shape[0]
    inside = (r < nrows) & (c < ncols) & (index >= 0) & (index < length)
    data[(base + index)[inside]] = acc.value[wgs][inside]
