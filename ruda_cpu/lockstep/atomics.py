"""Atomic read-modify-write operations on global buffers and shared memory.

The active, in-bounds lanes of a batch apply their operation to the target one after another
in some order; out-of-bounds lanes are dropped (their old value reads 0). Without a fetched
result the update is a ``np.<ufunc>.at`` (fast even under heavy contention). With one, each
lane receives the element's value from just before its own update, consistent with one
sequential order: the lanes of an address from the last to the first, the reverse of the units'
own, so that a kernel assuming that atomics apply in unit order (slots taken with
``atomic_add`` as if handed out in order) is as wrong here as on a GPU, which promises no
order:

* integer ADD/SUB: segmented exclusive prefix sums (exact, wrapping); XOR: prefix xor;
* AND/OR/MIN/MAX: a segmented log-step scan (exact: these operations are idempotent);
* float ADD/SUB: sequential accumulation (rounds over the small groups, ``accumulate`` over
  each large one), so every old value is a true intermediate sum;
* SWAP: the previous lane's value; CAS: vectorised when the compare value is uniform within
  an address, else one round per contending lane;
* INC_WRAP/DEC_WRAP (``u32`` counters modulo ``limit + 1``): one round per contending lane, in
  closed form over a large group whose lanes share one limit.
"""

from __future__ import annotations

from collections.abc import Callable
from math import isqrt
from typing import Any

import numpy as np
import numpy.typing as npt

from .batch import Batch, Segmented
from .memory import _intp, _unsigned
from .values import arr, is_float

__all__ = [
    "atomic_add",
    "atomic_and",
    "atomic_cas",
    "atomic_dec_wrap",
    "atomic_inc_wrap",
    "atomic_max",
    "atomic_min",
    "atomic_or",
    "atomic_sub",
    "atomic_swap",
    "atomic_xor",
]


class _Selection:
    """The active, in-bounds lanes of one atomic: flat ``addr`` into ``data``, their values."""

    __slots__ = ("addr", "cmps", "data", "lanes", "n", "vals")

    def __init__(self, g: Batch, target: Any, idx: Any, v: Any, m: Any, cmp: Any) -> None:
        self.n = g.n
        base = None
        if isinstance(target, Segmented):
            self.data, length, base = target.data, target.length, target.base
        else:
            self.data, length = target, target.shape[0]
        if isinstance(idx, np.generic):
            i = int(idx)
            keep: Any = m if 0 <= i < length else False
            u = np.full(self.n, i if 0 <= i < length else 0, dtype=np.intp)
        else:
            u = _unsigned(arr(idx))
            inside = u < length
            keep = inside if m is None else inside & m
            u = _intp(u)  # out-of-bounds lanes are never selected below
        flat = u if base is None else base + u
        if keep is None or (keep is not False and keep.all()):
            self.lanes = None
            self.addr = flat
        else:
            self.lanes = np.flatnonzero(keep) if keep is not False else np.zeros(0, np.intp)
            self.addr = flat[self.lanes]
        self.vals = self._pick(v)
        self.cmps = None if cmp is None else self._pick(cmp)

    def _pick(self, v: Any) -> Any:
        v = arr(v)
        if isinstance(v, np.generic) or self.lanes is None:
            return v
        return v[self.lanes]

    def full(self, v: Any) -> np.ndarray:
        """``v`` (scalar or per selected lane) as an array over the selected lanes."""
        return np.broadcast_to(v, self.addr.shape) if isinstance(v, np.generic) else v

    def scatter_old(self, order: np.ndarray, old: np.ndarray) -> np.ndarray:
        out = np.zeros(self.n, dtype=self.data.dtype)
        out[order if self.lanes is None else self.lanes[order]] = old
        return out


class _Groups:
    """The selected lanes sorted by address: group ``k`` is ``first[k] ..= last[k]``."""

    __slots__ = ("addr", "base", "first", "gid", "last", "order", "rank")

    def __init__(self, sel: _Selection) -> None:
        addr = sel.addr
        k = addr.shape[0]
        # the lanes of an address last to first: a stable sort of the lanes reversed
        if k and addr.max() < 65536:
            backwards = np.argsort(addr[::-1].astype(np.uint16), kind="stable")  # a radix sort
        else:
            backwards = np.argsort(addr[::-1], kind="stable")
        self.order: npt.NDArray[np.intp] = np.subtract(k - 1, backwards, dtype=np.intp)
        self.addr = addr[self.order]
        new = np.empty(k, dtype=bool)
        new[:1] = True
        np.not_equal(self.addr[1:], self.addr[:-1], out=new[1:])
        self.first = np.flatnonzero(new)
        self.last = np.append(self.first[1:], k) - 1
        self.gid = np.cumsum(new) - 1
        self.rank = np.arange(k) - self.first[self.gid]
        self.base = sel.data[self.addr[self.first]]

    def sorted(self, v: np.ndarray) -> np.ndarray:
        return v[self.order]


def _prefix_group(grp: _Groups, vs: np.ndarray, op: np.ufunc, inverse: np.ufunc) -> tuple[Any, Any]:
    """Old values and group results for a group operation ``op`` with inverse ``inverse``
    (wrapping add/sub, xor): exact exclusive scans."""
    inc = op.accumulate(vs, dtype=vs.dtype)
    exc = inverse(inc, vs)
    offset = exc[grp.first]
    old = op(grp.base[grp.gid], inverse(exc, offset[grp.gid]))
    final = op(grp.base, inverse(inc[grp.last], offset))
    return old, final


def _idempotent(grp: _Groups, vs: np.ndarray, op: np.ufunc) -> tuple[Any, Any]:
    """Segmented log-step scan for AND/OR/MIN/MAX (exact in any association order)."""
    inc = vs.copy()
    longest = int((grp.last - grp.first).max()) + 1
    d = 1
    while d < longest:
        nxt = inc.copy()
        reach = grp.rank[d:] >= d
        nxt[d:][reach] = op(inc[d:][reach], inc[:-d][reach])
        inc = nxt
        d *= 2
    prev = np.empty_like(inc)
    prev[1:] = inc[:-1]
    base_l = grp.base[grp.gid]
    later = grp.rank > 0
    old = base_l.copy()
    old[later] = op(base_l[later], prev[later])
    return old, op(grp.base, inc[grp.last])


def _sequential(
    grp: _Groups,
    vs: np.ndarray,
    cs: np.ndarray | None,
    step: Callable[[Any, Any, Any], Any],
    fold: Callable[[Any, np.ndarray, Any], tuple[Any, Any]],
    largest: int,
) -> tuple[Any, Any]:
    """Apply the lanes one after another within each group: one vectorised round per rank for
    groups of at most ``largest`` lanes, ``fold`` for each larger group."""
    state = grp.base.copy()
    old = np.empty_like(vs)
    sizes = grp.last - grp.first + 1
    for k in np.flatnonzero(sizes > largest):
        s, e = grp.first[k], grp.last[k] + 1
        old[s:e], state[k] = fold(state[k], vs[s:e], None if cs is None else cs[s:e])
    small = np.flatnonzero(sizes[grp.gid] <= largest)
    by_rank = small[np.argsort(grp.rank[small], kind="stable")]
    bounds = np.cumsum(np.bincount(grp.rank[by_rank]))
    start = 0
    for end in bounds.tolist():
        lanes = by_rank[start:end]
        g = grp.gid[lanes]
        cur = state[g]
        old[lanes] = cur
        state[g] = step(cur, vs[lanes], None if cs is None else cs[lanes])
        start = end
    return old, state


def _accumulate(op: np.ufunc) -> Callable[[Any, np.ndarray, Any], tuple[Any, Any]]:
    def fold(state: Any, vs: np.ndarray, _cs: Any) -> tuple[Any, Any]:
        acc = op.accumulate(np.concatenate((np.asarray(state)[None], vs)))
        return acc[:-1], acc[-1]

    return fold


def _cas_fold(state: Any, vs: np.ndarray, cs: np.ndarray) -> tuple[Any, Any]:
    old = np.empty_like(vs)
    for j in range(vs.shape[0]):
        old[j] = state
        if state == cs[j]:
            state = vs[j]
    return old, state


def _cas_uniform(grp: _Groups, vs: np.ndarray, cs: np.ndarray) -> tuple[Any, Any] | None:
    """CAS where every lane of a group compares with the same value: the lanes that succeed
    are a prefix of the group, each writing the value the next one compares against."""
    c_first = cs[grp.first]
    if not (cs == c_first[grp.gid]).all():
        return None
    broken = np.empty(vs.shape[0], dtype=bool)
    broken[1:] = vs[:-1] != cs[1:]
    broken[grp.first] = grp.base != c_first
    count = np.cumsum(broken)
    success = count == (count - broken)[grp.first][grp.gid]
    wins = np.add.reduceat(success.astype(np.intp), grp.first)
    settled = np.where(wins > 0, vs[np.maximum(grp.first + wins - 1, 0)], grp.base)
    before = np.empty_like(vs)  # a winner's old value: what the lane before it wrote, bit for bit
    before[1:] = vs[:-1]  # (a comparand equal to it may be the other zero)
    before[grp.first] = grp.base
    return np.where(success, before, settled[grp.gid]), settled


def _cas_step(state: Any, v: Any, c: Any) -> Any:
    return np.where(state == c, v, state)


def _inc_wrap_step(state: Any, limit: Any, _c: Any) -> Any:
    return np.where(state >= limit, 0, state + 1).astype(state.dtype)


def _dec_wrap_step(state: Any, limit: Any, _c: Any) -> Any:
    return np.where((state == 0) | (state > limit), limit, state - 1).astype(state.dtype)


def _wrap_fold(up: bool) -> Callable[[Any, np.ndarray, Any], tuple[Any, Any]]:
    """One group of counter updates (``up``: INC_WRAP, else DEC_WRAP): the counter's successive
    values, in closed form when every lane has the same limit (once in range, the counter runs
    modulo ``limit + 1``)."""
    step = _inc_wrap_step if up else _dec_wrap_step

    def fold(state: Any, vs: np.ndarray, _cs: Any) -> tuple[Any, Any]:
        if not (vs == vs[0]).all():
            old = np.empty_like(vs)
            for j in range(vs.shape[0]):
                old[j] = state
                state = step(np.asarray(state), vs[j], None)
            return old, state
        start, limit = int(state), int(vs[0])
        k = np.arange(vs.shape[0] + 1, dtype=np.int64)
        if start <= limit:
            seq = start + k if up else start - k
        else:  # the first update brings the counter into range
            seq = k - 1 if up else limit - (k - 1)
        seq %= limit + 1
        seq[0] = start
        values = seq.astype(vs.dtype)
        return values[:-1], values[-1]

    return fold


#: Kinds applied lane after lane (their result depends on the order).
_ORDERED = frozenset({"cas", "inc_wrap", "dec_wrap"})


def _rmw(
    kind: str, g: Batch, target: Any, idx: Any, v: Any, m: Any, fetch: bool, cmp: Any = None
) -> Any:
    if m is False:
        return None
    sel = _Selection(g, target, idx, v, m, cmp)
    data = sel.data
    floats = is_float(data.dtype)
    if not fetch and kind not in _ORDERED:
        if kind == "swap":
            data[sel.addr] = sel.vals
        else:
            _AT[kind, floats].at(data, sel.addr, sel.vals)
        return None
    if sel.addr.shape[0] == 0:
        return np.zeros(sel.n, dtype=data.dtype)
    grp = _Groups(sel)
    vs = grp.sorted(sel.full(sel.vals))
    if kind == "cas":
        cs = grp.sorted(sel.full(sel.cmps))
        result = _cas_uniform(grp, vs, cs)
        if result is None:
            largest = max(16, isqrt(vs.shape[0]))
            result = _sequential(grp, vs, cs, _cas_step, _cas_fold, largest)
    elif kind in ("inc_wrap", "dec_wrap"):
        up = kind == "inc_wrap"
        step = _inc_wrap_step if up else _dec_wrap_step
        largest = max(16, isqrt(vs.shape[0]))
        result = _sequential(grp, vs, None, step, _wrap_fold(up), largest)
    elif kind == "swap":
        old = np.empty_like(vs)
        old[1:] = vs[:-1]
        old[grp.first] = grp.base
        result = old, vs[grp.last]
    elif kind == "xor":
        result = _prefix_group(grp, vs, np.bitwise_xor, np.bitwise_xor)
    elif kind in ("add", "sub") and not floats:
        result = _prefix_group(grp, vs if kind == "add" else -vs, np.add, np.subtract)
    elif kind in ("add", "sub"):
        fold: np.ufunc = np.add if kind == "add" else np.subtract
        largest = max(16, isqrt(vs.shape[0]))
        result = _sequential(grp, vs, None, lambda s, x, _c: fold(s, x), _accumulate(fold), largest)
    else:
        result = _idempotent(grp, vs, _AT[kind, floats])
    old, final = result
    data[grp.addr[grp.first]] = final
    return sel.scatter_old(grp.order, old)


_AT: dict[tuple[str, bool], np.ufunc] = {
    ("add", False): np.add,
    ("add", True): np.add,
    ("sub", False): np.subtract,
    ("sub", True): np.subtract,
    ("min", False): np.minimum,
    ("min", True): np.fmin,
    ("max", False): np.maximum,
    ("max", True): np.fmax,
    ("and", False): np.bitwise_and,
    ("or", False): np.bitwise_or,
    ("xor", False): np.bitwise_xor,
}


def atomic_add(g: Batch, target: Any, idx: Any, v: Any, m: Any, fetch: bool) -> Any:
    """``target[idx] += v`` per active lane; the old values when ``fetch``, else None."""
    return _rmw("add", g, target, idx, v, m, fetch)


def atomic_sub(g: Batch, target: Any, idx: Any, v: Any, m: Any, fetch: bool) -> Any:
    """``target[idx] -= v`` per active lane."""
    return _rmw("sub", g, target, idx, v, m, fetch)


def atomic_min(g: Batch, target: Any, idx: Any, v: Any, m: Any, fetch: bool) -> Any:
    """``target[idx] = min(target[idx], v)`` (``fmin`` for floats) per active lane."""
    return _rmw("min", g, target, idx, v, m, fetch)


def atomic_max(g: Batch, target: Any, idx: Any, v: Any, m: Any, fetch: bool) -> Any:
    """``target[idx] = max(target[idx], v)`` (``fmax`` for floats) per active lane."""
    return _rmw("max", g, target, idx, v, m, fetch)


def atomic_and(g: Batch, target: Any, idx: Any, v: Any, m: Any, fetch: bool) -> Any:
    """``target[idx] &= v`` per active lane."""
    return _rmw("and", g, target, idx, v, m, fetch)


def atomic_or(g: Batch, target: Any, idx: Any, v: Any, m: Any, fetch: bool) -> Any:
    """``target[idx] |= v`` per active lane."""
    return _rmw("or", g, target, idx, v, m, fetch)


def atomic_xor(g: Batch, target: Any, idx: Any, v: Any, m: Any, fetch: bool) -> Any:
    """``target[idx] ^= v`` per active lane."""
    return _rmw("xor", g, target, idx, v, m, fetch)


def atomic_swap(g: Batch, target: Any, idx: Any, v: Any, m: Any, fetch: bool) -> Any:
    """``old = target[idx]; target[idx] = v`` per active lane."""
    return _rmw("swap", g, target, idx, v, m, fetch)


def atomic_cas(g: Batch, target: Any, idx: Any, cmp: Any, v: Any, m: Any, fetch: bool) -> Any:
    """``old = target[idx]; if old == cmp: target[idx] = v`` per active lane."""
    return _rmw("cas", g, target, idx, v, m, fetch, cmp)


def atomic_inc_wrap(g: Batch, target: Any, idx: Any, v: Any, m: Any, fetch: bool) -> Any:
    """``target[idx] = 0 if old >= v else old + 1`` per active lane (``u32``)."""
    return _rmw("inc_wrap", g, target, idx, v, m, fetch)


def atomic_dec_wrap(g: Batch, target: Any, idx: Any, v: Any, m: Any, fetch: bool) -> Any:
    """``target[idx] = v if old == 0 or old > v else old - 1`` per active lane (``u32``)."""
    return _rmw("dec_wrap", g, target, idx, v, m, fetch)
