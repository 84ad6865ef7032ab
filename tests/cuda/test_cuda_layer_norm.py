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
from ruda_core.runtime.layer_norm_args import TensorBuffer
from tests.ops.reference import (
    TOLERANCE,
    Case,
    assert_close,
    download,
    make_case,
    reference,
    upload,
)

SHAPES = [(8192, 1024), (8192, 4096), (4096, 16384), (33, 1000), (7, 200000)]
#: bf16 keeps 8 bits of mantissa: about 4 ulps at 1.0, as f16's bound is for its 11 bits.
BF16_TOLERANCE = 3e-2


@pytest.fixture
def cuda(open_device):
    return open_device("cuda:0")


def _bf16(client, array: np.ndarray) -> tuple[TensorBuffer, np.ndarray]:
    """``array`` rounded to bf16 (truncated) on the device, and those values as float64."""
    bits = (np.ascontiguousarray(array, np.float32).view(np.uint32) >> 16).astype(np.uint16)
    handle, strides = client.create_tensor_from_slice(bits, array.shape, 2)
    values = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return TensorBuffer(handle, tuple(array.shape), strides, Elem.BF16), values


def _read_bf16(client, buf: TensorBuffer) -> np.ndarray:
    raw = download(client, TensorBuffer(buf.handle, buf.shape, buf.strides, Elem.I16))
    return (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


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
    case = make_case(shape, np.float32, seed=21)
    (x, xv), (w, wv), (b, bv), (g, gv) = (
        _bf16(cuda, a) for a in (case.x, case.weight, case.bias, case.grad)
    )
    rounded = Case(x=xv, weight=wv, bias=bv, grad=gv)
    expected = reference(rounded)
    out, mean, rstd = portable_layer_norm(cuda, x, w, b)
    grads = portable_layer_norm_backward(cuda, x, w, g, mean, rstd)
    assert_close("out", _read_bf16(cuda, out), expected.out, BF16_TOLERANCE)
    assert_close("rstd", download(cuda, rstd), expected.rstd, TOLERANCE[Elem.F32])
    assert_close("grad_input", _read_bf16(cuda, grads[0]), expected.grad_input, BF16_TOLERANCE)
    assert_close("grad_bias", _read_bf16(cuda, grads[2]), expected.grad_bias, BF16_TOLERANCE)
