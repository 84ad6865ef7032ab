"""Kernels more than one WebGPU test module launches."""

from __future__ import annotations

from ruda_core.lang import ABSOLUTE_POS, Array, f32, kernel


@kernel
def add(a: Array[f32], b: Array[f32], c: Array[f32]):
    i = ABSOLUTE_POS
    if i < c.len():
        c[i] = a[i] + b[i]
