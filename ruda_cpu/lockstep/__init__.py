"""The lockstep runtime that generated NumPy kernels call (imported there as ``L``).

Values are vectors over the lanes of a batch of whole cubes (``values``), control flow is
an execution mask (``control``); a :class:`Batch`
gives a batch's builtins and memory (``batch``); ``memory``, ``atomics`` and ``plane``
implement accesses, atomics and plane operations under an execution mask; ``special`` holds
``erf``. Everything here is stateless between calls and safe to use from several threads at
once, each with its own batches.
"""

from .atomics import (
    atomic_add,
    atomic_and,
    atomic_cas,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_sub,
    atomic_swap,
    atomic_xor,
)
from .batch import Batch, LaunchShape, Segmented
from .bits import (
    bitcast,
    find_first_set,
    leading_zeros,
    mul_hi,
    popcount,
    reverse_bits,
    saturating_add,
    saturating_sub,
    trailing_zeros,
)
from .control import iter_mask, mask_and, mask_andnot, merge, most, range_value, trip_count
from .memory import load, load_ro, load_seg, report_oob, store, store_seg
from .plane import (
    plane_all,
    plane_any,
    plane_broadcast,
    plane_exclusive_sum,
    plane_inclusive_sum,
    plane_max,
    plane_min,
    plane_prod,
    plane_shuffle,
    plane_sum,
)
from .special import erf, erfc, lgamma, remainder
from .values import (
    Lanes,
    add,
    arr,
    cast,
    eq,
    fma,
    ge,
    gt,
    le,
    lt,
    mul,
    ne,
    select,
    sub,
)

__all__ = [
    "Batch",
    "Lanes",
    "LaunchShape",
    "Segmented",
    "add",
    "arr",
    "atomic_add",
    "atomic_and",
    "atomic_cas",
    "atomic_max",
    "atomic_min",
    "atomic_or",
    "atomic_sub",
    "atomic_swap",
    "atomic_xor",
    "bitcast",
    "cast",
    "eq",
    "erf",
    "erfc",
    "find_first_set",
    "fma",
    "ge",
    "gt",
    "iter_mask",
    "le",
    "leading_zeros",
    "lgamma",
    "load",
    "load_ro",
    "load_seg",
    "lt",
    "mask_and",
    "mask_andnot",
    "merge",
    "most",
    "mul",
    "mul_hi",
    "ne",
    "plane_all",
    "plane_any",
    "plane_broadcast",
    "plane_exclusive_sum",
    "plane_inclusive_sum",
    "plane_max",
    "plane_min",
    "plane_prod",
    "plane_shuffle",
    "plane_sum",
    "popcount",
    "range_value",
    "remainder",
    "report_oob",
    "reverse_bits",
    "saturating_add",
    "saturating_sub",
    "select",
    "store",
    "store_seg",
    "sub",
    "trailing_zeros",
    "trip_count",
]
