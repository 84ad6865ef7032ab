"""The gradients of LayerNorm checked against finite differences of the forward, and the
determinism of the backward, on every local device.

The finite-difference check runs in f64: for random directions ``v`` it compares the central
difference ``(L(p + h v) - L(p - h v)) / 2h`` of ``L = sum(output * grad)`` with the analytic
``<dL/dp, v>`` for each of input, weight and bias. With ``h = 1e-5`` the truncation error is
about ``h**2`` and the rounding error about ``1e-16 / h`` relative to ``|L|``; the bound is 1e-7,
relative to the scale of the terms of ``<dL/dp, v>``.
"""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.ops import layer_norm, layer_norm_backward
from ruda_core.testing.layer_norm_reference import download, make_case, upload
from ruda_core.testing.markers import need

STEP = 1e-5
BOUND = 1e-7


def _loss(client, x, weight, bias, grad) -> float:
    out, _, _ = layer_norm(
        client, upload(client, x), upload(client, weight), upload(client, bias), epsilon=1e-3
    )
    return float((download(client, out) * grad).sum())


@pytest.mark.parametrize("shape", [(3, 29), (2, 300)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_gradients_match_finite_differences(client, shape):
    need(client, Elem.F64)
    case = make_case(shape, np.float64, seed=5)
    params = {"input": case.x, "weight": case.weight, "bias": case.bias}
    _, mean, rstd = layer_norm(
        client,
        upload(client, case.x),
        upload(client, case.weight),
        upload(client, case.bias),
        epsilon=1e-3,
    )
    grads = layer_norm_backward(
        client,
        upload(client, case.x),
        upload(client, case.weight),
        upload(client, case.grad),
        mean,
        rstd,
    )
    analytic = dict(zip(params, (download(client, g) for g in grads), strict=True))
    rng = np.random.default_rng(6)
    for name, value in params.items():
        for _ in range(2):
            direction = rng.normal(size=value.shape)
            shifted = {}
            for sign in (1.0, -1.0):
                moved = dict(params, **{name: value + sign * STEP * direction})
                shifted[sign] = _loss(
                    client, moved["input"], moved["weight"], moved["bias"], case.grad
                )
            numeric = (shifted[1.0] - shifted[-1.0]) / (2 * STEP)
            terms = analytic[name] * direction
            scale = max(1.0, float(np.abs(terms).sum()))
            error = abs(numeric - float(terms.sum())) / scale
            assert error <= BOUND, f"d/d{name}: finite difference off by {error:.2e}"


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=lambda d: np.dtype(d).name)
def test_backward_is_deterministic(client, dtype):
    """Two runs of the backward on the same inputs give the same bits (no atomics)."""
    need(client, Elem.from_dtype(dtype))
    case = make_case((257, 24), dtype, seed=7)
    x, w = upload(client, case.x), upload(client, case.weight)
    _, mean, rstd = layer_norm(client, x, w, upload(client, case.bias))
    grad = upload(client, case.grad)
    first = [download(client, g) for g in layer_norm_backward(client, x, w, grad, mean, rstd)]
    second = [download(client, g) for g in layer_norm_backward(client, x, w, grad, mean, rstd)]
    for a, b in zip(first, second, strict=True):
        assert a.tobytes() == b.tobytes()
