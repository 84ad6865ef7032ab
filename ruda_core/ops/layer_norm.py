"""LayerNorm over the last axis: :func:`layer_norm` and :func:`layer_norm_backward`.

Both take a contiguous 2-D ``input`` of shape ``(rows, features)`` (the leading axes of a larger
tensor flattened into ``rows``) as a :class:`~ruda_core.runtime.layer_norm_args.TensorBuffer` or a
:class:`~ruda_core.tensor.RudaTensor`, and return :class:`TensorBuffer` values, the type of the
``Runtime`` LayerNorm hooks. Semantics are PyTorch's ``torch.nn.functional.layer_norm`` and its
gradients, per row ``r``::

    mean[r] = sum(x[r, :]) / features
    rstd[r] = 1 / sqrt(sum((x[r, :] - mean[r]) ** 2) / features + epsilon)   # biased variance
    out[r, j] = (x[r, j] - mean[r]) * rstd[r] * weight[j] + bias[j]

Element types: ``input``, ``weight``, ``bias``, ``grad``, ``out`` and the three gradients share
one float type (f16, bf16, f32 or f64, where the device supports it). ``mean`` and ``rstd`` have
shape ``(rows,)`` and the accumulator type: f32 for f16, bf16 and f32 input, f64 for f64 input
(as PyTorch's CUDA kernels keep them in f32 for half input). Every sum is accumulated in that
type and each result is rounded to its element type once.

Dispatch: when ``client.runtime.has_native_layer_norm()`` is true, the checked operands are
passed to ``client.runtime.layer_norm`` / ``layer_norm_backward`` and their results returned as
they are; otherwise ruda's portable kernels (:mod:`.layer_norm_kernels`) run on the client's
stream. :func:`portable_layer_norm` and :func:`portable_layer_norm_backward` always run the
portable kernels: a native implementation's fallback for operands it does not cover.

Both functions check every operand before anything is enqueued and then return at once: results
are computed asynchronously, and faults of the enqueued kernels surface at the next ``sync()``
or read on the client's stream, like any ``launch``. Since the checked shapes keep every access
in bounds, the portable kernels are enqueued with ``launch_unchecked``: ``BoundsCheckMode``
(``RUDA_BOUNDS_CHECK=validate``) turns the checks back on. They are thread-safe in the way
launches are. The gradients are deterministic: the same inputs on the same device give the same
bits.
"""

from __future__ import annotations

import math

from ..ir import Elem
from ..lang import ArrayArg
from ..runtime import ComputeClient, LayoutError, RudaCount, RudaDim
from ..runtime.layer_norm_args import TensorBuffer
from .geometry import accumulator, row_geometry
from .layer_norm_kernels import (
    layer_norm_forward,
    layer_norm_grad_affine_finish,
    layer_norm_grad_affine_partials,
    layer_norm_grad_input,
)
from .operands import (
    Operand,
    as_buffer,
    check_elem,
    check_epsilon,
    check_float,
    check_shape,
)

__all__ = [
    "CHUNK_ROWS",
    "MAX_CHUNKS",
    "layer_norm",
    "layer_norm_backward",
    "portable_layer_norm",
    "portable_layer_norm_backward",
]

#: Rows each first-pass unit of the weight and bias gradients sums, at least.
CHUNK_ROWS = 32
#: The most row chunks the weight and bias gradients are split into.
MAX_CHUNKS = 128
#: Units per cube of the per-feature kernels.
_FEATURE_BLOCK = 256

Outputs = tuple[TensorBuffer, TensorBuffer, TensorBuffer]


def layer_norm(
    client: ComputeClient,
    input: Operand,
    weight: Operand,
    bias: Operand | None = None,
    epsilon: float = 1e-5,
) -> Outputs:
    """Normalise each row of ``input`` and apply ``weight`` and ``bias``.

    :param input: ``(rows, features)``, contiguous, float, ``features >= 1``; ``rows`` may be 0.
    :param weight: ``(features,)``, of ``input``'s element type.
    :param bias: ``(features,)`` of that type, or None for no bias.
    :param epsilon: added to the variance; a finite number >= 0, cast to the accumulator type.
    :returns: ``(output, mean, rstd)``: ``output`` like ``input``; ``mean`` and ``rstd`` of
        shape ``(rows,)`` in the accumulator type (f64 for f64 input, else f32). New buffers,
        written asynchronously.
    :raises TypeError: for an operand that is not a ``TensorBuffer`` or ``RudaTensor``.
    :raises LayoutError: for a wrong rank or shape, a non-contiguous operand, or a handle
        smaller than its tensor.
    :raises LaunchConfigError: for a non-float or mismatched element type or a bad epsilon.
    :raises UnsupportedFeature: when the device lacks ``input``'s element type.
    """
    x, w, b, eps = _forward_operands("layer_norm", client, input, weight, bias, epsilon)
    runtime = client.runtime
    if runtime.has_native_layer_norm():
        out, mean, rstd = runtime.layer_norm(client, x, w, b, eps)
        return out, mean, rstd
    return _portable_forward(client, x, w, b, eps)


def portable_layer_norm(
    client: ComputeClient,
    input: Operand,
    weight: Operand,
    bias: Operand | None = None,
    epsilon: float = 1e-5,
) -> Outputs:
    """:func:`layer_norm` through ruda's portable kernels, whatever the runtime supplies: what a
    native implementation falls back to for operands it does not cover, and its baseline.
    Same contract and errors as :func:`layer_norm`."""
    x, w, b, eps = _forward_operands("layer_norm", client, input, weight, bias, epsilon)
    return _portable_forward(client, x, w, b, eps)


def layer_norm_backward(
    client: ComputeClient,
    input: Operand,
    weight: Operand,
    grad: Operand,
    mean: Operand,
    rstd: Operand,
) -> Outputs:
    """The gradients of :func:`layer_norm` given the gradient of its output.

    :param input: the forward's ``input``: ``(rows, features)``, contiguous, float.
    :param weight: the forward's ``weight``: ``(features,)``, of ``input``'s element type.
    :param grad: the gradient of the forward's ``output``: like ``input``.
    :param mean: the forward's ``mean``: ``(rows,)``, in the accumulator type.
    :param rstd: the forward's ``rstd``: ``(rows,)``, in the accumulator type.
    :returns: ``(grad_input, grad_weight, grad_bias)`` of the shapes and element type of
        ``input``, ``weight`` and ``weight``; ``grad_bias`` is returned whether or not the
        forward had a bias. New buffers, written asynchronously.
    :raises TypeError, LayoutError, LaunchConfigError, UnsupportedFeature: as
        :func:`layer_norm`, for every operand.
    """
    x, w, g, mu, inv = _backward_operands(client, input, weight, grad, mean, rstd)
    runtime = client.runtime
    if runtime.has_native_layer_norm():
        grad_input, grad_weight, grad_bias = runtime.layer_norm_backward(client, x, w, g, mu, inv)
        return grad_input, grad_weight, grad_bias
    return _portable_backward(client, x, w, g, mu, inv)


def portable_layer_norm_backward(
    client: ComputeClient,
    input: Operand,
    weight: Operand,
    grad: Operand,
    mean: Operand,
    rstd: Operand,
) -> Outputs:
    """:func:`layer_norm_backward` through ruda's portable kernels, whatever the runtime
    supplies (see :func:`portable_layer_norm`). Same contract and errors."""
    x, w, g, mu, inv = _backward_operands(client, input, weight, grad, mean, rstd)
    return _portable_backward(client, x, w, g, mu, inv)


def _forward_operands(
    op: str,
    client: ComputeClient,
    input: Operand,
    weight: Operand,
    bias: Operand | None,
    epsilon: float,
) -> tuple[TensorBuffer, TensorBuffer, TensorBuffer | None, float]:
    x = _input(op, client, input)
    w = _affine(op, "weight", weight, x)
    b = None if bias is None else _affine(op, "bias", bias, x)
    return x, w, b, check_epsilon(op, epsilon)


def _backward_operands(
    client: ComputeClient,
    input: Operand,
    weight: Operand,
    grad: Operand,
    mean: Operand,
    rstd: Operand,
) -> tuple[TensorBuffer, TensorBuffer, TensorBuffer, TensorBuffer, TensorBuffer]:
    op = "layer_norm_backward"
    x = _input(op, client, input)
    w = _affine(op, "weight", weight, x)
    g = as_buffer(op, "grad", grad)
    check_shape(op, "grad", g, x.shape)
    check_elem(op, "grad", g, x.elem, "the input's element type")
    acc = accumulator(x.elem)
    stats = []
    for name, value in (("mean", mean), ("rstd", rstd)):
        buf = as_buffer(op, name, value)
        check_shape(op, name, buf, (x.shape[0],))
        check_elem(op, name, buf, acc, f"the accumulator type of {x.elem} input")
        stats.append(buf)
    return x, w, g, stats[0], stats[1]


def _portable_forward(
    client: ComputeClient, x: TensorBuffer, w: TensorBuffer, b: TensorBuffer | None, eps: float
) -> Outputs:
    rows, features = x.shape
    acc = accumulator(x.elem)
    out = _empty(client, x.shape, x.elem)
    mean = _empty(client, (rows,), acc)
    rstd = _empty(client, (rows,), acc)
    if rows > 0:
        geometry = row_geometry(client, features)
        layer_norm_forward.launch_unchecked(
            client,
            RudaCount(_row_cubes(client, rows)),
            RudaDim(geometry.block),
            _arg(x),
            _arg(w),
            _arg(w if b is None else b),
            _arg(out),
            _arg(mean),
            _arg(rstd),
            rows,
            features,
            eps,
            b is not None,
            PLANES=geometry.planes,
        )
    return out, mean, rstd


def _portable_backward(
    client: ComputeClient,
    x: TensorBuffer,
    w: TensorBuffer,
    g: TensorBuffer,
    mu: TensorBuffer,
    inv: TensorBuffer,
) -> Outputs:
    rows, features = x.shape
    grad_input = _empty(client, x.shape, x.elem)
    grad_weight = _empty(client, (features,), x.elem)
    grad_bias = _empty(client, (features,), x.elem)
    if rows > 0:
        geometry = row_geometry(client, features)
        layer_norm_grad_input.launch_unchecked(
            client,
            RudaCount(_row_cubes(client, rows)),
            RudaDim(geometry.block),
            _arg(x),
            _arg(w),
            _arg(g),
            _arg(mu),
            _arg(inv),
            _arg(grad_input),
            rows,
            features,
            PLANES=geometry.planes,
        )
    _grad_affine(client, x, g, mu, inv, grad_weight, grad_bias)
    return grad_input, grad_weight, grad_bias


def _grad_affine(
    client: ComputeClient,
    x: TensorBuffer,
    g: TensorBuffer,
    mean: TensorBuffer,
    rstd: TensorBuffer,
    grad_weight: TensorBuffer,
    grad_bias: TensorBuffer,
) -> None:
    """Enqueue the two passes of the weight and bias gradients (zeros when there are no
    rows). The chunking depends only on ``rows`` (on any device that allows 128 cubes along
    y), so every device adds in the same order."""
    rows, features = x.shape
    props = client.properties()
    chunks = min(max(1, -(-rows // CHUNK_ROWS)), MAX_CHUNKS, props.max_ruda_count[1])
    rows_per_chunk = max(1, -(-rows // chunks))
    chunks = max(1, -(-rows // rows_per_chunk))
    acc = mean.elem
    partial_weight = _empty(client, (chunks, features), acc)
    partial_bias = _empty(client, (chunks, features), acc)
    block = min(_FEATURE_BLOCK, props.max_units_per_ruda, props.max_ruda_dim[0])
    cubes = -(-features // block)
    layer_norm_grad_affine_partials.launch_unchecked(
        client,
        RudaCount(cubes, chunks),
        RudaDim(block),
        _arg(x),
        _arg(g),
        _arg(mean),
        _arg(rstd),
        _arg(partial_weight),
        _arg(partial_bias),
        rows,
        features,
        rows_per_chunk,
    )
    layer_norm_grad_affine_finish.launch_unchecked(
        client,
        RudaCount(cubes),
        RudaDim(block),
        _arg(partial_weight),
        _arg(partial_bias),
        _arg(grad_weight),
        _arg(grad_bias),
        features,
        chunks,
    )


def _input(op: str, client: ComputeClient, value: object) -> TensorBuffer:
    x = as_buffer(op, "input", value)
    if len(x.shape) != 2:
        raise LayoutError(
            f"{op}: input has shape {x.shape}; expected (rows, features): flatten the leading "
            "axes into rows"
        )
    if x.shape[1] == 0:
        raise LayoutError(f"{op}: input has shape {x.shape}; LayerNorm needs features >= 1")
    check_float(op, "input", x, client)
    return x


def _affine(op: str, name: str, value: object, x: TensorBuffer) -> TensorBuffer:
    buf = as_buffer(op, name, value)
    check_shape(op, name, buf, (x.shape[1],))
    check_elem(op, name, buf, x.elem, "the input's element type")
    return buf


def _empty(client: ComputeClient, shape: tuple[int, ...], elem: Elem) -> TensorBuffer:
    handle, strides = client.empty_tensor(shape, elem.nbytes)
    return TensorBuffer(handle, shape, strides, elem)


def _arg(buf: TensorBuffer) -> ArrayArg:
    return ArrayArg(buf.handle, math.prod(buf.shape), buf.elem)


def _row_cubes(client: ComputeClient, rows: int) -> int:
    """One cube per row, up to the device's cube count (the row kernels stride beyond it)."""
    return min(rows, client.properties().max_ruda_count[0])
