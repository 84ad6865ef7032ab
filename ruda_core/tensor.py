"""``RudaTensor``: device storage plus tensor metadata (shape, strides in elements, element)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import LayoutError
from .ir import Elem
from .runtime.client import ComputeClient, CopyDescriptor, contiguous_strides
from .runtime.memory.handle import Handle

__all__ = ["RudaTensor"]


@dataclass(frozen=True, slots=True)
class RudaTensor:
    """A tensor on a device. Owns its memory through ``handle``."""

    handle: Handle
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    elem: Elem

    def __post_init__(self) -> None:
        if len(self.shape) != len(self.strides):
            raise LayoutError(f"shape {self.shape} and strides {self.strides} differ in rank")

    @classmethod
    def from_numpy(cls, client: ComputeClient, array: np.ndarray) -> RudaTensor:
        """A contiguous device copy of ``array``."""
        host = np.ascontiguousarray(array)
        elem = Elem.from_dtype(host.dtype)
        handle, strides = client.create_tensor_from_slice(host, host.shape, host.itemsize)
        return cls(handle, tuple(host.shape), strides, elem)

    @classmethod
    def empty(cls, client: ComputeClient, shape: tuple[int, ...], dtype: Any) -> RudaTensor:
        """An uninitialised contiguous tensor."""
        elem = Elem.from_dtype(dtype)
        handle, strides = client.empty_tensor(shape, elem.nbytes)
        return cls(handle, tuple(shape), strides, elem)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def is_contiguous(self) -> bool:
        return self.strides == contiguous_strides(self.shape)

    def descriptor(self) -> CopyDescriptor:
        return CopyDescriptor(self.handle, self.shape, self.strides, self.elem.nbytes)

    def to_numpy(self, client: ComputeClient) -> np.ndarray:
        """Read the tensor back (waits); contiguous result of ``shape``."""
        raw = client.read_tensor([self.descriptor()])[0]
        return np.frombuffer(raw, dtype=self.elem.numpy).reshape(self.shape)
