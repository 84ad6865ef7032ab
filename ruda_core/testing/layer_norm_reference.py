"""The float64 NumPy reference of LayerNorm and its gradients, the tolerance a device's results
are held to, and host <-> device helpers: what the conformance suite's LayerNorm tests and ruda's
own ops tests compare with.

The reference computes from the inputs exactly as the device receives them (already rounded to
their element type), in float64, with PyTorch's formulas (biased variance).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ruda_core.ir import Elem
from ruda_core.runtime import ComputeClient, CopyDescriptor
from ruda_core.runtime.layer_norm_args import TensorBuffer

#: Allowed error of a result of each element type, relative to max(1, max |reference|) of the
#: whole result (sums cancel, so an element-wise relative bound is not meaningful): about 4 ulps
#: of f16 or bf16 at 1.0 (their results are rounded once from f32), 17 ulps of f32 and 4500 ulps
#: of f64. That is 10x (f16, f32) to 300x (f64) the largest errors measured on the NumPy device
#: and PoCL, over rows of up to 8192 elements and columns of up to 4096 rows; for bf16, 10x the
#: largest measured on the NumPy device and Intel's OpenCL over rows of up to 8192 elements.
TOLERANCE = {Elem.F16: 4e-3, Elem.BF16: 3e-2, Elem.F32: 2e-6, Elem.F64: 1e-12}


@dataclass(frozen=True)
class Case:
    """Inputs of one LayerNorm test, rounded to their element type."""

    x: np.ndarray
    weight: np.ndarray
    bias: np.ndarray | None
    grad: np.ndarray


@dataclass(frozen=True)
class Expected:
    """float64 results of the reference."""

    out: np.ndarray
    mean: np.ndarray
    rstd: np.ndarray
    grad_input: np.ndarray
    grad_weight: np.ndarray
    grad_bias: np.ndarray


def make_case(
    shape: tuple[int, int],
    dtype: np.dtype,
    *,
    bias: bool = True,
    offset: float = 3.0,
    seed: int = 0,
) -> Case:
    """Random inputs of ``shape`` in ``dtype``: ``x`` with mean ``offset`` and spread 2."""
    rng = np.random.default_rng(seed)
    features = shape[1]
    return Case(
        x=rng.normal(offset, 2.0, shape).astype(dtype),
        weight=rng.normal(1.0, 0.5, features).astype(dtype),
        bias=rng.normal(0.0, 1.0, features).astype(dtype) if bias else None,
        grad=rng.normal(0.0, 1.0, shape).astype(dtype),
    )


def reference(case: Case, epsilon: float = 1e-5) -> Expected:
    """LayerNorm forward and backward in float64."""
    x = case.x.astype(np.float64)
    w = case.weight.astype(np.float64)
    dy = case.grad.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    rstd = 1.0 / np.sqrt(var + epsilon)
    xhat = (x - mean) * rstd
    out = xhat * w
    if case.bias is not None:
        out = out + case.bias.astype(np.float64)
    g = dy * w
    grad_input = rstd * (
        g - g.mean(axis=1, keepdims=True) - xhat * (g * xhat).mean(axis=1, keepdims=True)
    )
    return Expected(
        out=out,
        mean=mean[:, 0],
        rstd=rstd[:, 0],
        grad_input=grad_input,
        grad_weight=(dy * xhat).sum(axis=0),
        grad_bias=dy.sum(axis=0),
    )


def upload(client: ComputeClient, array: np.ndarray) -> TensorBuffer:
    """A contiguous device copy of ``array``."""
    host = np.ascontiguousarray(array)
    handle, strides = client.create_tensor_from_slice(host, host.shape, host.itemsize)
    return TensorBuffer(handle, host.shape, strides, Elem.from_dtype(host.dtype))


def download(client: ComputeClient, buf: TensorBuffer) -> np.ndarray:
    """``buf`` read back (waits) as an array of its shape and element type."""
    desc = CopyDescriptor(buf.handle, buf.shape, buf.strides, buf.elem.nbytes)
    raw = client.read_tensor([desc])[0]
    return np.frombuffer(raw, buf.elem.numpy).reshape(buf.shape)


def relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    """max |actual - expected| / max(1, max |expected|)."""
    if expected.size == 0:
        return 0.0
    scale = max(1.0, float(np.abs(expected).max()))
    return float(np.abs(actual.astype(np.float64) - expected).max()) / scale


def assert_close(name: str, actual: np.ndarray, expected: np.ndarray, tol: float) -> None:
    """``actual`` is within ``tol`` of ``expected`` relative to max(1, max |expected|)."""
    assert actual.shape == expected.shape, f"{name}: shape {actual.shape} != {expected.shape}"
    error = relative_error(actual, expected)
    assert error <= tol, f"{name}: relative error {error:.3e} exceeds {tol:.1e}"
