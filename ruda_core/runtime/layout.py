"""Tensor layouts: strides, spans and contiguity, one rule for every record that carries them.

A layout is a ``shape`` (extents) and ``strides`` (in elements) of one rank; the element at
index ``i`` lives at offset ``sum(i[d] * strides[d])``. The rules are NumPy's:

* **contiguous**: the elements, in row-major order, lie at offsets 0, 1, 2 …: every axis of
  extent above 1 has the stride of the product of the extents after it. An axis of extent 1 may
  have any stride (its index is always 0), and a layout without elements is contiguous whatever
  its strides.
* **pitched**: row-major with padded rows: the innermost axis of extent above 1 has stride 1 and
  every outer such axis a stride at least the span of the axes inside it. Contiguous layouts are
  pitched; this is what the built-in runtimes read as is (``Runtime.can_read_tensor``).
* **span**: the elements a layout addresses, one more than its largest offset (0 without
  elements): what its memory must hold.

:class:`Strided` gives these as properties to the records that carry a layout (``TensorArg``,
``RudaTensor``, ``TensorBuffer``, ``CopyDescriptor``). This module computes only: it checks
nothing about memory and imports no other runtime module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..errors import LayoutError

__all__ = ["Strided", "contiguous_strides", "is_contiguous", "is_contiguous_or_pitched", "span"]


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides, in elements, of a contiguous tensor of ``shape`` (an extent of 0
    counts as 1, as in NumPy)."""
    strides = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        strides[k] = strides[k + 1] * max(shape[k + 1], 1)
    return tuple(strides)


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether the layout is contiguous (see the module docstring); False for ranks that
    differ."""
    if len(shape) != len(strides):
        return False
    if 0 in shape:
        return True
    expected = 1
    for n, s in zip(reversed(shape), reversed(strides), strict=True):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def is_contiguous_or_pitched(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether the layout is pitched: row-major, last stride 1, rows possibly padded (see the
    module docstring); False for ranks that differ."""
    if len(shape) != len(strides):
        return False
    if 0 in shape:
        return True
    inner = 0  # the span of the axes inside; 0 until the innermost axis of extent above 1
    for n, s in zip(reversed(shape), reversed(strides), strict=True):
        if n == 1:
            continue
        if (s != 1) if inner == 0 else (s < inner):
            return False
        inner = s * n
    return True


def span(shape: Sequence[int], strides: Sequence[int]) -> int:
    """Elements addressed by the layout: one more than its largest offset, 0 without
    elements."""
    total = 1
    for n, s in zip(shape, strides, strict=True):
        if n == 0:
            return 0
        total += (n - 1) * s
    return total


class Strided:
    """What a record with ``shape`` and ``strides`` (in elements) derives from its layout."""

    __slots__ = ()

    shape: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def rank(self) -> int:
        """Number of axes."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def span(self) -> int:
        """Elements addressed: one more than the largest offset (0 without elements)."""
        return span(self.shape, self.strides)

    @property
    def is_contiguous(self) -> bool:
        """Whether the elements lie row-major at offsets 0, 1, 2 … (extent-1 axes may have any
        stride)."""
        return is_contiguous(self.shape, self.strides)

    def _check_rank(self) -> None:
        """:raises LayoutError: when shape and strides differ in rank."""
        if len(self.shape) != len(self.strides):
            raise LayoutError(f"shape {self.shape} and strides {self.strides} differ in rank")
