"""``sort`` and ``argsort`` of the NumPy reference device, computed by NumPy itself.

The native implementations that :func:`ruda_core.ops.sort` and :func:`ruda_core.ops.argsort`
take on ``cpu`` (the plugin's ``ruda_native_ops``): the portable radix sort runs each of its
passes as a kernel in lockstep, hundreds of times slower than ``numpy.sort`` on the same host.

Stream order and memory: each views its operand without a copy through DLPack, whose export
waits on the host for the work queued on that memory (so the sort sees what earlier launches
wrote, on the stream that last used it), sorts on the calling thread, and hands NumPy's new
array to the device as the result's memory, again without a copy (nothing queued can touch
memory that is new); an operand a failed kernel poisoned raises that failure at the call. The
call thus waits for the operand's pending work instead of joining a stream's queue as a host
task would: on this device the stream's workers and the caller share the same cores, so a
queued task would only add a thread in the sort's way, and the two copies a read and a write
make would cost more than the sort itself.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ruda_core.runtime import ComputeClient
from ruda_core.tensor import RudaTensor

__all__ = ["argsort", "sort"]


def sort(client: ComputeClient, x: RudaTensor) -> RudaTensor:
    """The elements of ``x`` in ascending order, as a new 1-D tensor of ``x``'s type: NumPy's
    stable order for floats (NaN last, each with its own bits; ``-0.0`` and ``0.0`` in input
    order), NumPy's fastest sort for integers (whose equal elements are indistinguishable)."""
    host = _view(x)
    ordered = np.sort(host, kind="stable") if x.elem.is_float else np.sort(host)
    return RudaTensor.from_dlpack(ordered, client)


def argsort(client: ComputeClient, x: RudaTensor) -> RudaTensor:
    """The indices that sort ``x`` (``numpy.argsort(x, kind="stable")``), as a new 1-D i64
    tensor."""
    host = _view(x)
    return RudaTensor.from_dlpack(np.argsort(host, kind="stable").astype(np.int64), client)


def _view(x: RudaTensor) -> np.ndarray:
    """The elements of ``x`` in row-major order: its memory itself, once the work queued on it
    has run (the export waits for it)."""
    # RudaTensor.__dlpack__ is typed to return an object, NumPy's stubs ask for a capsule
    return np.from_dlpack(cast(Any, x)).reshape(-1)
