"""Kernels written in the Python kernel language, compiled by the NumPy compiler."""

from __future__ import annotations

import numpy as np
import pytest
from launch_modes import run

from ruda_core.ir import ExecutionMode
from ruda_core.lang import (
    ABSOLUTE_POS,
    RUDA_POS,
    UNIT_POS,
    Array,
    atomic_add,
    f32,
    kernel,
    plane_sum,
    u32,
)
from ruda_core.runtime import ComputeClient
from ruda_core.testing.samples import axpy, block_sum


@pytest.mark.parametrize("mode", list(ExecutionMode), ids=lambda m: m.value)
def test_design_block_sum(cpu: ComputeClient, mode: ExecutionMode) -> None:
    x = np.arange(256 * 40 - 3, dtype=np.float32)
    arrays = [x, np.zeros(40, np.float32)]
    # in Validate mode an out-of-bounds access would raise its report
    _, out = run(cpu, block_sum.definition(BLOCK=256), arrays, count=40, dim=256, mode=mode)
    want = np.concatenate([x, np.zeros(3, np.float32)]).reshape(40, 256).sum(axis=1)
    assert (out == want).all()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_element_generic_axpy(cpu: ComputeClient, dtype: type) -> None:
    from ruda_core.lang import f16, f64

    elem = {np.float16: f16, np.float32: f32, np.float64: f64}[dtype]
    x = np.linspace(-2, 2, 1000).astype(dtype)
    defn = axpy.definition(Float=elem)
    _, y = run(cpu, defn, [x, np.ones(1000, dtype)], [0.5], 4, 256, ExecutionMode.CHECKED)
    want = (dtype(0.5) * x + np.ones(1000, dtype)).astype(dtype)
    assert (y == want).all()


@kernel
def histogram(x: Array[u32], bins: Array[u32], sums: Array[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        atomic_add(bins, x[i], u32(1))
    total = plane_sum(f32(1))
    if UNIT_POS == 0:
        sums[RUDA_POS] = total


def test_histogram_and_plane_sum(cpu: ComputeClient) -> None:
    x = np.random.default_rng(0).integers(0, 16, 1000).astype(np.uint32)
    arrays = [x, np.zeros(16, np.uint32), np.zeros(8, np.float32)]
    _, bins, sums = run(cpu, histogram.definition(), arrays, (), 8, 128, ExecutionMode.CHECKED)
    assert (bins == np.bincount(x, minlength=16)).all()
    assert (sums == 32).all()
