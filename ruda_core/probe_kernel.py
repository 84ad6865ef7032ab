# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""The kernels every device must build and run before it counts as usable
(:mod:`ruda_core.probe`). Kept apart so that importing ruda does not import the kernel language."""

from __future__ import annotations

from .lang import ABSOLUTE_POS, Array, f32, kernel, u32, u64

__all__ = ["ruda_probe", "ruda_probe_wide"]


@kernel
def ruda_probe(out: Array[u32], scale: f32) -> None:
    """``out[i] = i * scale + 1``: an integer store, a float multiply and a cast."""
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = u32(f32(i) * scale) + u32(1)


@kernel
def ruda_probe_wide(x: Array[u64], out: Array[u64]) -> None:
    """``out = x * 3 + 1`` in lines of eight u64, the widest vectors ruda writes (512 bits): a
    compiler whose vector ABI does not match its own built-ins fails here and nowhere in the
    first probe (PoCL 3 with LLVM 14 on AMD's AVX-512 CPUs, which that LLVM does not know)."""
    i = ABSOLUTE_POS
    if i < x.len() // 8:
        out.store_line(i, x.load_line(i, 8) * u64(3) + u64(1))
