"""LayerNorm on the device under test, through ``ruda_core.ops``: the runtime's native hooks
where it claims them (``Runtime.has_native_layer_norm``), else ruda's portable kernels, and the
portable kernels always. Forward and backward results are within the tolerance of each result's
element type of a float64 reference (:mod:`ruda_core.testing.layer_norm_reference`), and the
gradients are the same bits when the same call is made again."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.ops import (
    layer_norm,
    layer_norm_backward,
    portable_layer_norm,
    portable_layer_norm_backward,
)
from ruda_core.runtime import ComputeClient
from ruda_core.runtime.layer_norm_args import TensorBuffer
from ruda_core.testing.layer_norm_reference import (
    TOLERANCE,
    assert_close,
    download,
    make_case,
    reference,
    upload,
)
from ruda_core.testing.markers import need

#: one row, rows of a width no vector divides, and rows wider than one cube holds
SHAPES = [(1, 7), (33, 1000), (4, 4097)]
ELEMS = [Elem.F32, Elem.F16, Elem.BF16]
Outputs = tuple[TensorBuffer, TensorBuffer, TensorBuffer]
#: the two ways in: the dispatching functions and the portable ones
PATHS: dict[str, tuple[Callable[..., Outputs], Callable[..., Outputs]]] = {
    "dispatch": (layer_norm, layer_norm_backward),
    "portable": (portable_layer_norm, portable_layer_norm_backward),
}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("elem", ELEMS, ids=str)
def test_layer_norm_and_its_gradients_match_the_float64_reference(
    client: ComputeClient, elem: Elem, shape: tuple[int, int], path: str
) -> None:
    need(client, elem)
    forward, backward = PATHS[path]
    case = make_case(shape, elem.numpy, seed=3)
    expected = reference(case)
    x, w, b = (upload(client, a) for a in (case.x, case.weight, case.bias))
    out, mean, rstd = forward(client, x, w, b)
    assert_close("out", download(client, out), expected.out, TOLERANCE[elem])
    assert_close("mean", download(client, mean), expected.mean, TOLERANCE[Elem.F32])
    assert_close("rstd", download(client, rstd), expected.rstd, TOLERANCE[Elem.F32])
    stats = [upload(client, v.astype(np.float32)) for v in (expected.mean, expected.rstd)]
    grads = backward(client, x, w, upload(client, case.grad), *stats)
    names = ("grad_input", "grad_weight", "grad_bias")
    values = (expected.grad_input, expected.grad_weight, expected.grad_bias)
    for name, got, want in zip(names, grads, values, strict=True):
        assert_close(name, download(client, got), want, TOLERANCE[elem])


@pytest.mark.parametrize("path", list(PATHS))
def test_layer_norm_gradients_are_the_same_bits_every_time(
    client: ComputeClient, path: str
) -> None:
    _, backward = PATHS[path]
    case = make_case((300, 96), np.float32, seed=4)
    expected = reference(case)
    x, w, dy = (upload(client, a) for a in (case.x, case.weight, case.grad))
    stats = [upload(client, v.astype(np.float32)) for v in (expected.mean, expected.rstd)]
    first, second = (backward(client, x, w, dy, *stats) for _ in range(2))
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(download(client, a), download(client, b))
