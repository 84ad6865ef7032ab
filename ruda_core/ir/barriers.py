"""Asynchronous barriers and bulk copies (Hopper's ``mbarrier`` and ``cp.async.bulk``): the
limits their operations share. The operations are written in :mod:`~ruda_core.ir.ops`; this
module holds data only.
"""

from __future__ import annotations

from .types import Elem

__all__ = ["BARRIER_ELEM", "BULK_ALIGN_NBYTES", "MAX_ARRIVALS"]

#: The element type of a barrier array: one 8-byte word per barrier in shared memory.
BARRIER_ELEM = Elem.U64
#: The alignment of both runs of a bulk copy and the granule of its size, in bytes.
BULK_ALIGN_NBYTES = 16
#: The largest init count of a barrier (PTX's ``mbarrier`` limit, ``2**20 - 1``).
MAX_ARRIVALS = 2**20 - 1
