"""Running a branch over its active lanes alone, when they are few.

Generated code runs a branch that few lanes take (a reduction's ``if UNIT_POS < s`` once ``s``
is small) over those lanes only: :func:`subset` lists them, :func:`pick` gives each value the
branch uses at those lanes (and each shared or local array the segments of those lanes), the
branch runs with every picked lane active, and :func:`spread` puts back what it assigned to a
variable read after it. Every lane computes what it would over the whole batch: the same
operations on the same values, so results are equal bit for bit; only the work scales with the
lanes that act. This module holds no state.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .batch import Batch, Segmented
from .values import Lanes, UnitMask, Units, Value, arr, unit_runs

__all__ = ["SUBSET_FRACTION", "pick", "spread", "subset"]

#: A branch of the heaviest kind runs over its active lanes alone when they are at most this
#: fraction of the batch's lanes, a lighter one below its ``share`` of it (above, picking the
#: lanes and spreading values back costs more than the passes over every lane it saves).
SUBSET_FRACTION = 0.25


def subset(m: Any, share: float) -> np.ndarray | None:
    """The positions (``intp``, ascending) of the active lanes of the mask ``m`` of a branch
    when they are at most ``share * SUBSET_FRACTION`` of its lanes; None otherwise, for
    ``None`` (every lane), and for a mask covering ranges of units (see ``unit_runs``), under
    which shared-memory accesses already touch only those units' columns, cheaper than
    picking lanes."""
    if m is None or m is False or unit_runs(m) is not None:
        return None
    n = m.shape[0]
    most = share * SUBSET_FRACTION * n
    one = m.one if type(m) is UnitMask else None
    if one is None:
        if np.count_nonzero(m) > most:
            return None
        return np.flatnonzero(m)
    units = one.shape[0]
    cubes = n // units
    picked = np.flatnonzero(one)
    if picked.shape[0] * cubes > most:
        return None
    lanes: np.ndarray = np.arange(cubes, dtype=np.intp)[:, None] * units + picked[None, :]
    return lanes.reshape(-1)


def pick(lanes: np.ndarray, x: Any) -> Any:
    """``x`` (a value, or shared or local memory) at the lanes ``lanes`` of :func:`subset`: a
    uniform value as it is, a vector as a new array, memory as the segments of those lanes."""
    if isinstance(x, Segmented):
        return x.lanes(lanes)
    if isinstance(x, np.generic):
        return x
    if type(x) is Lanes:
        return x.at(lanes)
    if type(x) is Units:
        one = x.one
        units = one.n if isinstance(one, Lanes) else one.shape[0]
        return pick(lanes % units, one)
    return np.asarray(arr(x))[lanes]


def spread(g: Batch, lanes: np.ndarray, new: Value, old: Value) -> np.ndarray:
    """The value over all of ``g``'s lanes of a variable that held ``old`` and that a branch run
    over the lanes ``lanes`` alone assigned ``new`` (at those lanes): bits copied as they are."""
    new = arr(new)
    out = np.empty(g.n, dtype=np.result_type(new))
    out[...] = arr(old)
    out[lanes] = new
    return out
