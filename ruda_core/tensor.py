"""``RudaTensor``: device storage plus tensor metadata (shape, strides in elements, element)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .ir import Elem
from .runtime.client import ComputeClient, CopyDescriptor
from .runtime.layout import Strided
from .runtime.memory.handle import Handle

__all__ = ["RudaTensor"]


@dataclass(frozen=True, slots=True)
class RudaTensor(Strided):
    """A tensor on a device. Owns its memory through ``handle``; ``size``, ``span`` and
    ``is_contiguous`` follow the rules of :mod:`ruda_core.runtime.layout`."""

    handle: Handle
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    elem: Elem

    def __post_init__(self) -> None:
        self._check_rank()

    @classmethod
    def from_numpy(cls, client: ComputeClient, array: np.ndarray) -> RudaTensor:
        """A contiguous device copy of ``array``."""
        host = np.ascontiguousarray(array).reshape(np.shape(array))  # keeps a 0-d array 0-d
        elem = Elem.from_dtype(host.dtype)
        handle, strides = client.create_tensor_from_slice(host, host.shape, host.itemsize)
        return cls(handle, tuple(host.shape), strides, elem)

    @classmethod
    def empty(cls, client: ComputeClient, shape: tuple[int, ...], dtype: Any) -> RudaTensor:
        """An uninitialised contiguous tensor."""
        elem = Elem.from_dtype(dtype)
        handle, strides = client.empty_tensor(shape, elem.nbytes)
        return cls(handle, tuple(shape), strides, elem)

    def descriptor(self) -> CopyDescriptor:
        return CopyDescriptor(self.handle, self.shape, self.strides, self.elem.nbytes)

    def to_numpy(self, client: ComputeClient) -> np.ndarray:
        """Read the tensor back (waits); contiguous result of ``shape``."""
        raw = client.read_tensor([self.descriptor()])[0]
        return np.frombuffer(raw, dtype=self.elem.numpy).reshape(self.shape)
