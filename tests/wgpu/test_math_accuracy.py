"""The float math functions WebGPU computes through ruda's own helpers or a driver's builtins,
against the NumPy device within the float table's tolerance (16 ulp for f32 and 2 for f16, or
that many epsilons absolutely below 1; infinities and NaN matching): over both signs, from
near 0 to the edge of overflow, and at arguments where drivers' builtins were off (lavapipe's
exp by 25 ulp near 87, its asinh infinite from 1.8e19, its sinh and cosh infinite from 88.7
though finite to 89.4). Subnormal arguments are left out: a device may flush them."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

pytest.importorskip("wgpu")

import ruda_core as ruda
from ruda_core.ir import Elem
from ruda_core.lang import (
    ABSOLUTE_POS,
    Array,
    Float,
    asinh,
    cbrt,
    cosh,
    exp,
    exp2,
    expm1,
    kernel,
    lgamma,
    log,
    log2,
    log10,
    pow,
    sinh,
    tanh,
)
from ruda_core.testing.tolerance import OpClass, assert_matches

_FUNCTIONS: dict[str, Callable[[float], float]] = {
    "exp": exp,
    "exp2": exp2,
    "expm1": expm1,
    "sinh": sinh,
    "cosh": cosh,
    "tanh": tanh,
    "asinh": asinh,
    "cbrt": cbrt,
    "log": log,
    "log2": log2,
    "log10": log10,
    "lgamma": lgamma,
}


def _unary(fn: Callable[[float], float]) -> object:
    @kernel
    def apply(a: Array[Float], out: Array[Float]):
        i = ABSOLUTE_POS
        if i < out.len():
            out[i] = fn(a[i])

    return apply


_KERNELS = {name: _unary(fn) for name, fn in _FUNCTIONS.items()}


@kernel
def powers(a: Array[Float], b: Array[Float], out: Array[Float]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = pow(a[i], b[i])


#: Arguments where drivers' builtins were off, by function (f32).
_FAILED = {
    "exp": [24.244266510009766, 55.5738525390625, 86.77725219726562, 88.72283, -87.33, -103.0],
    "expm1": [30.338178634643555, 48.90949630737305, 0.3, -0.3, 1e-6],
    "sinh": [88.8, 89.0, 89.4, -89.0, 89.41, 1e-6],
    "cosh": [88.8, 89.0, 89.4, -89.4, 89.41],
    "asinh": [1e19, 1e20, 1e30, -1e30, 3e38, -3.4028235e38],
    "cbrt": [3.2993572e38, -3.0353170e38, 3.4028235e38],
    "lgamma": [-2.1915955e-26, -1e-30, -3e-38, -1e-6, 1e-30],
}


def _log_uniform(rng: np.random.Generator, low: float, high: float, n: int) -> np.ndarray:
    """``n`` magnitudes log-uniform in [low, high], of random signs."""
    magnitudes = np.exp(rng.uniform(np.log(low), np.log(high), n))
    return magnitudes * rng.choice([-1.0, 1.0], n)


def _arguments(name: str, dtype: type[np.floating]) -> np.ndarray:
    """Arguments of ``name`` for ``dtype``: log-uniform from near 0 to past overflow, both
    edges of exp's range in particular, the known failures and the special values."""
    rng = np.random.default_rng(7)
    info = np.finfo(dtype)
    top, bottom = np.log(float(info.max)), np.log(float(info.tiny))
    if name in ("exp", "expm1", "sinh", "cosh", "tanh"):
        parts = [
            _log_uniform(rng, 1e-6, 1.1 * top, 2000),
            rng.uniform(top - 2, top + 2, 500),
            rng.uniform(bottom - 1, bottom + 2, 500),
        ]
    elif name == "exp2":
        parts = [_log_uniform(rng, 1e-6, 130.0, 2000)]
    else:
        parts = [_log_uniform(rng, float(info.tiny), float(info.max), 2000)]
    if name.startswith("log"):
        parts = [np.abs(parts[0])]
    if dtype is np.float32:
        parts.append(np.array(_FAILED.get(name, [])))
    specials = [0.0, 1.0, -1.0, float(info.max), -float(info.max), np.inf, -np.inf, np.nan]
    return np.concatenate([*parts, specials]).astype(dtype)


def _run(client: object, k: object, *args: np.ndarray) -> np.ndarray:
    out = ruda.asarray(np.zeros_like(args[0]), client)
    k.launch(client, -(-len(args[0]) // 64), 64, *(ruda.asarray(a, client) for a in args), out)
    return out.numpy()


_DTYPES = [pytest.param(np.float32, id="f32"), pytest.param(np.float16, id="f16")]


@pytest.mark.parametrize("dtype", _DTYPES)
@pytest.mark.parametrize("name", list(_FUNCTIONS))
def test_math_function_matches_the_reference_within_tolerance(
    client, open_device, name: str, dtype: type[np.floating]
):
    if dtype is np.float16 and Elem.F16 not in client.features().elems:
        pytest.skip(f"{client.device} has no f16")
    a = _arguments(name, dtype)
    with np.errstate(all="ignore"):
        want = _run(open_device("cpu"), _KERNELS[name], a)
    got = _run(client, _KERNELS[name], a)
    elem = Elem.F32 if dtype is np.float32 else Elem.F16
    assert_matches(got, want, elem, OpClass.TRANSCENDENTAL, what=name, inputs=[a])


@pytest.mark.parametrize("dtype", _DTYPES)
def test_pow_matches_the_reference_within_tolerance(client, open_device, dtype):
    """Bases over the whole normal range and exponents that keep most powers finite, the
    whole parts of large exponents too, and bases near 1 raised high."""
    if dtype is np.float16 and Elem.F16 not in client.features().elems:
        pytest.skip(f"{client.device} has no f16")
    rng = np.random.default_rng(11)
    info = np.finfo(dtype)
    base = np.exp(rng.uniform(np.log(float(info.tiny)), np.log(float(info.max)), 3000))
    reach = np.log(float(info.max)) / np.maximum(np.abs(np.log(base)), 1e-3)
    power = rng.uniform(-1, 1, 3000) * reach
    spread = 2.0 ** rng.integers(-info.nmant, -4, 1000).astype(np.float64)
    near_one = (1 + rng.uniform(-1, 1, 1000) * spread).astype(dtype).astype(np.float64)
    near_one[near_one == 1] = 1 + float(info.eps)
    high = rng.uniform(-1, 1, 1000) * np.log(float(info.max)) / np.abs(np.log(near_one))
    a = np.concatenate([base, near_one]).astype(dtype)
    b = np.concatenate([power, high]).astype(dtype)
    with np.errstate(all="ignore"):
        want = _run(open_device("cpu"), powers, a, b)
    got = _run(client, powers, a, b)
    elem = Elem.F32 if dtype is np.float32 else Elem.F16
    assert_matches(got, want, elem, OpClass.TRANSCENDENTAL, what="pow", inputs=[a, b])
