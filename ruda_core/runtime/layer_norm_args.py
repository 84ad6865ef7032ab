"""The arguments of the native LayerNorm hooks of :class:`~ruda_core.runtime.Runtime`
(``layer_norm``, ``layer_norm_backward``): :class:`TensorBuffer`. Holds no logic."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Elem
from .layout import Strided
from .memory.handle import Handle

__all__ = ["TensorBuffer"]


@dataclass(frozen=True, slots=True)
class TensorBuffer(Strided):
    """A device tensor passed to or returned from native LayerNorm: a handle and its layout."""

    handle: Handle
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    elem: Elem
