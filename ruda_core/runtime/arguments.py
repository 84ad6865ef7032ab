"""``LaunchArgs``: the arguments of one kernel launch, as one record from the client to the
backend's launch hooks.

``ComputeClient.launch``, ``launch_unchecked`` and ``prepare`` build it once per call from the
launch ABI of :mod:`ruda_core.ir.kernel`; ``ComputeServer`` hands it to ``_launch`` and
``_prepare`` as it came, except where the server itself changes the launch: a Validate launch
gets its report binding and length added, and a dynamic count read back on the host becomes
static (each a new record). This module holds no logic and imports no driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .dims import RudaCount, RudaDim

if TYPE_CHECKING:
    from .memory.handle import Binding

__all__ = ["LaunchArgs"]


class LaunchArgs(NamedTuple):
    """What one launch passes to its kernel, besides the kernel itself.

    A ``NamedTuple`` rather than a frozen dataclass: one is built on every launch, and a tuple
    is Python's cheapest immutable record (a hook may unpack it in one step,
    ``count, dim, bindings, scalars, metadata = args``). The sequences are the caller's, not
    copies: they must not change while the launch is queued (``prepare`` freezes them).

    :param count: the cubes to launch: static, or dynamic (read from a binding) where the backend
        sets ``resolves_dynamic_counts``.
    :param dim: the units of each cube.
    :param bindings: one per ``Array``/``Tensor`` parameter, in parameter order.
    :param scalars: one NumPy scalar of the parameter's type per scalar parameter, in order.
    :param metadata: the ``u32`` lengths, shapes and strides of
        ``KernelDefinition.metadata_layout()``.
    """

    count: RudaCount  # type: ignore[assignment]  # shadows tuple.count, which no caller needs
    dim: RudaDim
    bindings: Sequence[Binding]
    scalars: Sequence[np.generic]
    metadata: Sequence[int]
