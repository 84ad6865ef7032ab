# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""The kernel every device must build and run before it counts as usable
(:mod:`ruda_core.probe`). Kept apart so that importing ruda does not import the kernel language."""

from __future__ import annotations

from .lang import ABSOLUTE_POS, Array, f32, kernel, u32

__all__ = ["ruda_probe"]


@kernel
def ruda_probe(out: Array[u32], scale: f32) -> None:
    """``out[i] = i * scale + 1``: an integer store, a float multiply and a cast."""
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = u32(f32(i) * scale) + u32(1)
