"""LayerNorm forward and backward against the float64 NumPy reference on every local device.

Shapes cover one row, many rows of few features, features that are not a multiple of the cube
size, and large rows; element types f32, f64, f16 and bf16 (skipped as *unsupported* on a device
without them). Tolerances are :data:`ruda_core.testing.layer_norm_reference.TOLERANCE` of each
result's element type: mean and rstd are compared at f32's for f16 and bf16 input, since they
are f32.
"""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.ops import layer_norm, layer_norm_backward
from ruda_core.testing.layer_norm_reference import (
    TOLERANCE,
    assert_close,
    download,
    make_case,
    reference,
    upload,
)
from ruda_core.testing.markers import need

SHAPES = [(1, 7), (300, 24), (5, 1000), (3, 8192)]
DTYPES = [np.float32, np.float64, np.float16, Elem.BF16.numpy]
ACCUMULATOR = {Elem.F16: Elem.F32, Elem.BF16: Elem.F32, Elem.F32: Elem.F32, Elem.F64: Elem.F64}


def _elem(dtype: type) -> Elem:
    return Elem.from_dtype(dtype)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_forward_matches_reference(client, dtype, shape):
    elem = _elem(dtype)
    need(client, elem)
    case = make_case(shape, dtype)
    expected = reference(case)
    out, mean, rstd = layer_norm(
        client, upload(client, case.x), upload(client, case.weight), upload(client, case.bias)
    )
    acc = ACCUMULATOR[elem]
    assert (out.elem, mean.elem, rstd.elem) == (elem, acc, acc)
    assert (out.shape, mean.shape, rstd.shape) == (shape, shape[:1], shape[:1])
    assert_close("out", download(client, out), expected.out, TOLERANCE[elem])
    assert_close("mean", download(client, mean), expected.mean, TOLERANCE[acc])
    assert_close("rstd", download(client, rstd), expected.rstd, TOLERANCE[acc])


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_backward_matches_reference(client, dtype, shape):
    elem = _elem(dtype)
    need(client, elem)
    case = make_case(shape, dtype, seed=1)
    expected = reference(case)
    acc = ACCUMULATOR[elem].numpy
    grads = layer_norm_backward(
        client,
        upload(client, case.x),
        upload(client, case.weight),
        upload(client, case.grad),
        upload(client, expected.mean.astype(acc)),
        upload(client, expected.rstd.astype(acc)),
    )
    names = ("grad_input", "grad_weight", "grad_bias")
    wanted = (expected.grad_input, expected.grad_weight, expected.grad_bias)
    for name, buf, want in zip(names, grads, wanted, strict=True):
        assert buf.elem is elem, name
        assert_close(name, download(client, buf), want, TOLERANCE[elem])


@pytest.mark.parametrize(
    "dtype", [np.float32, np.float16, Elem.BF16.numpy], ids=lambda d: np.dtype(d).name
)
def test_without_bias(client, dtype):
    elem = _elem(dtype)
    need(client, elem)
    case = make_case((6, 1000), dtype, bias=False, seed=2)
    expected = reference(case)
    out, _, _ = layer_norm(client, upload(client, case.x), upload(client, case.weight))
    assert_close("out", download(client, out), expected.out, TOLERANCE[elem])


def test_forward_and_backward_chain(client):
    """The backward taking the forward's own mean and rstd, as training does."""
    case = make_case((17, 300), np.float32, seed=3)
    expected = reference(case, epsilon=1e-3)
    x, w = upload(client, case.x), upload(client, case.weight)
    out, mean, rstd = layer_norm(client, x, w, upload(client, case.bias), epsilon=1e-3)
    grads = layer_norm_backward(client, x, w, upload(client, case.grad), mean, rstd)
    assert_close("out", download(client, out), expected.out, TOLERANCE[Elem.F32])
    for name, buf, want in zip(
        ("grad_input", "grad_weight", "grad_bias"),
        grads,
        (expected.grad_input, expected.grad_weight, expected.grad_bias),
        strict=True,
    ):
        assert_close(name, download(client, buf), want, TOLERANCE[Elem.F32])


def test_large_mean_is_not_cancelled(client):
    """Rows with mean 1000 and spread 2: the two-pass variance keeps f32 accurate, where
    E[x^2] - E[x]^2 would lose about half of f32's digits to cancellation."""
    case = make_case((4, 512), np.float32, offset=1000.0, seed=4)
    expected = reference(case)
    out, _, rstd = layer_norm(
        client, upload(client, case.x), upload(client, case.weight), upload(client, case.bias)
    )
    # x - mean carries the rounding of a mean of 1000 (6e-5), relative to a spread of 2
    assert_close("out", download(client, out), expected.out, 1e-4)
    assert_close("rstd", download(client, rstd), expected.rstd, 1e-5)
