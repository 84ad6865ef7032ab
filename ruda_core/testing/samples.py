# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""Sample kernels that tests and benchmarks share, each defined once: the tree reduction of
DESIGN.md (``block_sum``), ``saxpy``, the element-generic ``axpy`` and ``increment``."""

from __future__ import annotations

from ..lang import (
    ABSOLUTE_POS,
    RUDA_POS,
    UNIT_POS,
    Array,
    Comptime,
    Float,
    SharedMemory,
    f32,
    kernel,
    sync_units,
    u32,
)

__all__ = ["axpy", "block_sum", "increment", "saxpy"]


@kernel
def block_sum(x: Array[f32], out: Array[f32], BLOCK: Comptime[int]):
    """``out[cube]`` = the sum of the cube's ``BLOCK`` elements of ``x`` (0 past its end):
    a shared-memory tree with a barrier per level, inside a while loop."""
    smem = SharedMemory(f32, BLOCK)
    i = ABSOLUTE_POS
    smem[UNIT_POS] = x[i] if i < x.len() else f32(0)
    sync_units()
    s = BLOCK // 2
    while s > 0:
        if s > UNIT_POS:
            smem[UNIT_POS] += smem[UNIT_POS + s]
        sync_units()
        s //= 2
    if UNIT_POS == 0:
        out[RUDA_POS] = smem[0]


@kernel
def saxpy(a: f32, x: Array[f32], y: Array[f32], out: Array[f32]):
    """``out = a * x + y`` over ``out``'s length."""
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]


@kernel
def axpy(x: Array[Float], y: Array[Float], alpha: Float):
    """``y += alpha * x`` in place, for any float element type."""
    i = ABSOLUTE_POS
    if i < y.len():
        y[i] = alpha * x[i] + y[i]


@kernel
def increment(x: Array[u32]):
    """Adds 1 to each element of ``x`` a unit's ``ABSOLUTE_POS`` reaches."""
    i = ABSOLUTE_POS
    if i < x.len():
        x[i] = x[i] + u32(1)
