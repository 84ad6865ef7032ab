"""The portable LayerNorm (``portable_layer_norm``, whatever the runtime supplies) on CUDA at
the benchmark's shapes: every kernel variant a GPU plans (a plane per row, a cube per row, the
strided kernels, lines of 16 bytes) against the float64 reference, bf16 as well, and
deterministic gradients.

Skips (saying why) without CuPy or a GPU; fails instead when ``RUDA_REQUIRE`` names cuda.
"""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.ops import portable_layer_norm, portable_layer_norm_backward
from ruda_core.testing.layer_norm_reference import (
    TOLERANCE,
    assert_close,
    download,
    make_case,
    reference,
    upload,
)

SHAPES = [(8192, 1024), (8192, 4096), (4096, 16384), (33, 1000), (7, 200000)]


@pytest.fixture
def cuda(open_device):
    return open_device("cuda:0")


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_f32_matches_reference(cuda, shape):
    case = make_case(shape, np.float32, seed=20)
    expected = reference(case)
    x, w = upload(cuda, case.x), upload(cuda, case.weight)
    out, mean, rstd = portable_layer_norm(cuda, x, w, upload(cuda, case.bias))
    grads = portable_layer_norm_backward(cuda, x, w, upload(cuda, case.grad), mean, rstd)
    tol = TOLERANCE[Elem.F32]
    assert_close("out", download(cuda, out), expected.out, tol)
    assert_close("rstd", download(cuda, rstd), expected.rstd, tol)
    assert_close("grad_input", download(cuda, grads[0]), expected.grad_input, tol)
    assert_close("grad_weight", download(cuda, grads[1]), expected.grad_weight, tol)
    again = portable_layer_norm_backward(cuda, x, w, upload(cuda, case.grad), mean, rstd)
    for first, second in zip(grads, again, strict=True):
        assert download(cuda, first).tobytes() == download(cuda, second).tobytes()


@pytest.mark.parametrize("shape", SHAPES[:3], ids=lambda s: f"{s[0]}x{s[1]}")
def test_bf16_matches_reference(cuda, shape):
    case = make_case(shape, Elem.BF16.numpy, seed=21)
    expected = reference(case)
    x, w = upload(cuda, case.x), upload(cuda, case.weight)
    out, mean, rstd = portable_layer_norm(cuda, x, w, upload(cuda, case.bias))
    grads = portable_layer_norm_backward(cuda, x, w, upload(cuda, case.grad), mean, rstd)
    tol = TOLERANCE[Elem.BF16]
    assert_close("out", download(cuda, out), expected.out, tol)
    assert_close("rstd", download(cuda, rstd), expected.rstd, TOLERANCE[Elem.F32])
    assert_close("grad_input", download(cuda, grads[0]), expected.grad_input, tol)
    assert_close("grad_bias", download(cuda, grads[2]), expected.grad_bias, tol)
