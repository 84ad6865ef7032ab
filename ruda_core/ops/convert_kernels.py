# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""Elementwise kernels the operations share, in the kernel language: :func:`converted` writes
an array as another element type (``bincount``'s counts as its result type, a narrow sort's
values as the 32-bit type that holds them)."""

from __future__ import annotations

from ..lang import Array, ElemVar, grid_stride, kernel, u32

__all__ = ["converted"]

#: The element read, and the element written.
Source = ElemVar("Source")
Target = ElemVar("Target")


@kernel
def converted(x: Array[Source], out: Array[Target], n: u32):
    """``out[i] = x[i]`` in ``out``'s type, as the kernel language converts (a bool as 0 or 1)."""
    for i in grid_stride(n):
        out[i] = Target(x[i])
