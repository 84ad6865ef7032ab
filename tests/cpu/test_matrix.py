"""The reference device's cooperative matrices follow the IR's definition to the bit: each of
the k sums rounds to the accumulator's type (not one rounding of the exact result), tf32 inputs
round to nearest with ties away from zero, and several planes keep their own tiles."""

from __future__ import annotations

import numpy as np

from ruda_core.ir import Elem, MatrixLayout, round_tf32
from ruda_core.lang import ArrayArg
from ruda_core.runtime import RudaCount, RudaDim
from ruda_core.testing.matrix_kernels import cmma_tile
from ruda_core.testing.runner import read_array

ROW = MatrixLayout.ROW_MAJOR


def _product(cpu, a, b, c, k, tf32=False, dim=32):
    """``a`` (16 x k) times ``b`` (k x 16) plus ``c``, dense row-major tiles, per plane."""
    at = np.array([0, k, 0, 16, 0, 16, 0, 16], np.uint32)
    arrays = [a, b, c, np.zeros_like(c), at]
    args = [
        ArrayArg(cpu.create_from_slice(x), x.size, elem=Elem.from_dtype(x.dtype)) for x in arrays
    ]
    spec = dict(M=16, N=16, K=k, TF32=tf32, LA=ROW, LB=ROW, LC=ROW, LOUT=ROW)
    cmma_tile.launch(cpu, RudaCount(1), RudaDim(dim), *args, **spec)
    return read_array(cpu, args[3].handle, c.dtype).reshape(-1, 16, 16)


def test_each_product_of_k_rounds_to_the_accumulator(cpu):
    a = np.zeros((16, 16), np.float16)
    b = np.zeros((16, 16), np.float16)
    a[0, :2] = 1.0
    b[:2, 0] = 0.5
    c = np.zeros((16, 16), np.float16)
    c[0, 0] = 1024.0  # f16's spacing at 1024 is 1: 1024.5 rounds back to 1024, twice
    d = _product(cpu, a.ravel(), b.ravel(), c.ravel(), 16)
    assert d[0, 0, 0] == 1024.0  # one rounding of the exact 1025 would give 1025


def test_tf32_inputs_round_to_nearest_ties_away(cpu):
    x = np.float32([1 + 2**-11, 1 + 2**-12, -(1 + 3 * 2**-11), np.inf])
    np.testing.assert_array_equal(
        round_tf32(x), np.float32([1 + 2**-10, 1, -(1 + 2 * 2**-10), np.inf])
    )
    a = np.zeros((16, 8), np.float32)
    a[0, 0] = 1 + 2**-11
    b = np.zeros((8, 16), np.float32)
    b[0, 0] = 1.0
    d = _product(cpu, a.ravel(), b.ravel(), np.zeros(256, np.float32), 8, tf32=True)
    assert d[0, 0, 0] == np.float32(1 + 2**-10)


def test_planes_keep_their_own_tiles(cpu):
    rng = np.random.default_rng(1)
    a = rng.integers(-3, 4, (2, 16, 16)).astype(np.float16)
    b = rng.integers(-3, 4, (2, 16, 16)).astype(np.float16)
    c = rng.integers(-3, 4, (2, 16, 16)).astype(np.float32)
    d = _product(cpu, a.ravel(), b.ravel(), c.ravel(), 16, dim=64)
    np.testing.assert_array_equal(d, a.astype(np.float32) @ b.astype(np.float32) + c)
