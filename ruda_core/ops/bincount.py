"""``bincount``: how often each non-negative integer occurs in a tensor, as ``numpy.bincount``.

The length of the result depends on the largest value, so a call first reduces ``x`` on the
device (:mod:`.reduce`: its ``max``, and its ``min`` for signed types) and reads those two
numbers back, blocking until they are known; a negative value is then a ``ValueError``, as in
NumPy. The counts are :mod:`.bincount_kernels`': per-cube counters in shared memory added to the
global ones where the bins fit, else global atomics alone, in cubes and reads per unit chosen by
the autotuner per device, element type and size class above :data:`~.primitive_inputs.UNTUNED`
elements (a smaller count takes the first candidate, untuned). ``bool`` and 8- and 16-bit
integers are read as they are and counted as ``u32`` bins. This module never imports a driver.
"""

from __future__ import annotations

import builtins
import functools
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..autotune import Tunable, TunableSet, Tuner, anchor
from ..ir import Elem
from ..lang import ArrayArg
from ..runtime import ComputeClient, LayoutError, RudaCount, RudaDim
from ..tensor import RudaTensor
from .bincount_kernels import bincount_global, bincount_shared, converted
from .operands import U32_LIMIT
from .primitive_inputs import UNTUNED, cube_units, one_operand
from .reduce import max as device_max
from .reduce import min as device_min

__all__ = ["bincount"]

#: Candidates ``(counters in shared memory or not, units per cube, reads per unit per step)``.
BIN_SHAPES = ((True, 256, 4), (True, 1024, 4), (True, 256, 16), (False, 256, 4))
#: The cubes per compute unit of the device a count asks for (they stride over ``x``).
CUBES_PER_COMPUTE_UNIT = 8
#: The element types ``bincount`` takes: NumPy's, without u64 (which NumPy refuses too).
BIN_INPUTS = (Elem.BOOL, Elem.I8, Elem.U8, Elem.I16, Elem.U16, Elem.I32, Elem.U32, Elem.I64)
_TUNER = Tuner()


@dataclass(frozen=True, slots=True)
class Counting:
    """A count of ``n`` values into ``nbins`` bins, written as ``out``."""

    n: int
    nbins: int
    out: Elem


def bincount(*args: Any, minlength: int = 0) -> RudaTensor:
    """The number of occurrences of each value ``0 .. max(x)`` in the 1-D integer or bool
    tensor ``x`` (``bincount(x)`` or ``bincount(client, x)``), as ``numpy.bincount(x,
    minlength=minlength)``: a new 1-D tensor of ``max(max(x) + 1, minlength)`` counts, i64 (u32
    where the device lacks 64-bit integers), exact, on ``x``'s device. Blocks until ``x``'s least
    and greatest values are known (they size the result); the counts are then written
    asynchronously. The first call of a device, element type and size class above 2**18
    elements tunes the kernels (blocking).

    :raises ValueError: for a negative value in ``x`` or a negative ``minlength``.
    :raises TypeError: for an operand that is not a tensor (or, after a client, an array), or a
        ``minlength`` that is not an integer.
    :raises LayoutError: for an ``x`` that is not 1-D or not contiguous, or a result of ``2**32``
        or more bins.
    :raises LaunchConfigError: for another element type than bool, 8-, 16- and 32-bit integers
        and i64 (NumPy refuses u64 and floats too).
    :raises UnsupportedFeature: for an element type the device lacks.
    """
    client, x = one_operand("bincount", args, BIN_INPUTS)
    length = operator.index(minlength)
    if length < 0:
        raise ValueError(f"bincount: minlength is {length}; it must be non-negative")
    if len(x.shape) != 1:
        raise LayoutError(f"bincount: x has shape {x.shape}; it counts a 1-D tensor (flatten it)")
    out_elem = Elem.I64 if client.features().supports(Elem.I64) else Elem.U32
    n = x.shape[0]
    if n == 0:
        return RudaTensor.from_numpy(client, np.zeros(length, out_elem.numpy))
    most = int(device_max(x).numpy())
    if x.elem.is_signed:
        least = int(device_min(x).numpy())
        if least < 0:
            raise ValueError(
                f"bincount: x holds the negative value {least}; it counts values >= 0 only"
            )
    nbins = builtins.max(most + 1, length)
    if nbins >= U32_LIMIT:
        raise LayoutError(f"bincount: {nbins} bins; ruda counts fewer than 2**32 (u32 indices)")
    out = RudaTensor.empty(client, (nbins,), out_elem.numpy)
    _TUNER.execute(client, _tunable_set(), Counting(n, nbins, out_elem), x, out, tune=n > UNTUNED)
    return out


def _runner(shape: tuple[bool, int, int]) -> Callable[..., None]:
    shared, wanted, items = shape

    def run(client: ComputeClient, p: Counting, x: RudaTensor, out: RudaTensor) -> None:
        props = client.properties()
        units = cube_units(client, wanted)
        counts = client.create_from_slice(np.zeros(p.nbins, np.uint32))
        bins = ArrayArg(counts, p.nbins, Elem.U32)
        source = ArrayArg(x.handle, p.n, x.elem)
        cubes = builtins.min(
            math.ceil(p.n / (units * items)), CUBES_PER_COMPUTE_UNIT * props.compute_units
        )
        if shared and 4 * p.nbins <= props.max_shared_memory_nbytes:
            bincount_shared.launch_unchecked(
                client, RudaCount(cubes), RudaDim(units), source, bins, p.n, p.nbins, ITEMS=items
            )
        else:
            bincount_global.launch_unchecked(
                client, RudaCount(cubes), RudaDim(units), source, bins, p.n, ITEMS=items
            )
        converted.launch_unchecked(
            client,
            RudaCount(builtins.min(-(-p.nbins // 256), 65535)),
            RudaDim(256),
            bins,
            ArrayArg(out.handle, p.nbins, p.out),
            p.nbins,
        )

    return run


def _key(p: Counting, x: RudaTensor, out: RudaTensor) -> tuple[str, int, int]:
    return x.elem.value, anchor(p.n, 1 << 26), anchor(p.nbins, 1 << 20)


@functools.cache
def _tunable_set() -> TunableSet:
    """The candidates of every count (made once)."""
    tunables = [
        Tunable(f"{'shared' if s else 'global'}-{u}x{i}", _runner((s, u, i)))
        for s, u, i in BIN_SHAPES
    ]
    return TunableSet("ruda.ops.bincount", _key, tunables)
