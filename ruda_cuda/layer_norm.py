"""The CUDA runtime's native LayerNorm: :func:`layer_norm` and :func:`layer_norm_backward`, the
bodies of ``CudaRuntime.layer_norm`` / ``layer_norm_backward``.

They take operands already checked by :mod:`ruda_core.ops.layer_norm` and keep its contract
(shapes, element types, f32 ``mean``/``rstd``, deterministic gradients). f32, f16 and bf16 rows
that a :class:`~.layer_norm_plan.RowClass` covers run the kernels of ``layer_norm.cu``,
enqueued with ``ComputeClient.launch`` on the client's stream; f64, and rows too wide to hold
in registers, run the portable kernels (``portable_layer_norm``). The backward is two
launches: the input gradient with one row of f32 weight and bias partial sums per block, then
their reduction in a fixed order; the number of blocks depends only on ``rows``, the row class
and the device's multiprocessor count, so the same inputs on the same device give the same
bits. Returns at once; faults surface at the next sync or read, as for any launch. Imports no
driver.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from ruda_core.ir import Elem
from ruda_core.ops import portable_layer_norm, portable_layer_norm_backward
from ruda_core.runtime import Binding, ComputeClient, RudaCount, RudaDim
from ruda_core.runtime.layer_norm_args import TensorBuffer

from .layer_norm_plan import backward_blocks, backward_class, forward_class, vector_width
from .layer_norm_tasks import ELEMS, FINISH_DIM, backward_task, finish_task, forward_task

__all__ = ["layer_norm", "layer_norm_backward"]

Outputs = tuple[TensorBuffer, TensorBuffer, TensorBuffer]


def layer_norm(
    client: ComputeClient,
    x: TensorBuffer,
    weight: TensorBuffer,
    bias: TensorBuffer | None,
    epsilon: float,
) -> Outputs:
    """``(output, mean, rstd)`` of checked operands (see the module docstring)."""
    rows, features = x.shape
    elem = x.elem
    if elem not in ELEMS:
        return portable_layer_norm(client, x, weight, bias, epsilon)
    out = _empty(client, x.shape, elem)
    operands = (x, weight, out) if bias is None else (x, weight, bias, out)
    row_class = forward_class(features, vector_width(features, elem.nbytes, _addresses(operands)))
    if row_class is None:
        return portable_layer_norm(client, x, weight, bias, epsilon)
    mean = _empty(client, (rows,), Elem.F32)
    rstd = _empty(client, (rows,), Elem.F32)
    if rows:
        client.launch(
            forward_task(elem, row_class),
            RudaCount(-(-rows // row_class.rows_per_block)),
            RudaDim(row_class.block_threads),
            _bindings(x, weight, weight if bias is None else bias, out, mean, rstd),
            (
                np.uint32(rows),
                np.uint32(features),
                np.float32(epsilon),
                np.int32(bias is not None),
            ),
        )
    return out, mean, rstd


def layer_norm_backward(
    client: ComputeClient,
    x: TensorBuffer,
    weight: TensorBuffer,
    grad: TensorBuffer,
    mean: TensorBuffer,
    rstd: TensorBuffer,
) -> Outputs:
    """``(grad_input, grad_weight, grad_bias)`` of checked operands (see the module
    docstring)."""
    rows, features = x.shape
    elem = x.elem
    if elem not in ELEMS:
        return portable_layer_norm_backward(client, x, weight, grad, mean, rstd)
    grad_input = _empty(client, x.shape, elem)
    operands = (x, weight, grad, grad_input)
    row_class = backward_class(features, vector_width(features, elem.nbytes, _addresses(operands)))
    if row_class is None:
        return portable_layer_norm_backward(client, x, weight, grad, mean, rstd)
    blocks = backward_blocks(rows, row_class, client.properties().compute_units)
    # partial rows are written with the row's vectors: their alignment is the pool's
    partial_weight = _empty(client, (blocks, features), Elem.F32)
    partial_bias = _empty(client, (blocks, features), Elem.F32)
    grad_weight = _empty(client, (features,), elem)
    grad_bias = _empty(client, (features,), elem)
    if rows:
        client.launch(
            backward_task(elem, row_class),
            RudaCount(blocks),
            RudaDim(row_class.block_threads),
            _bindings(x, weight, grad, mean, rstd, grad_input, partial_weight, partial_bias),
            (np.uint32(rows), np.uint32(features)),
        )
    client.launch(
        finish_task(elem),
        RudaCount(-(-features // FINISH_DIM[0])),
        RudaDim(*FINISH_DIM),
        _bindings(partial_weight, partial_bias, grad_weight, grad_bias),
        (np.uint32(features), np.uint32(blocks if rows else 0)),
    )
    return grad_input, grad_weight, grad_bias


def _empty(client: ComputeClient, shape: tuple[int, ...], elem: Elem) -> TensorBuffer:
    handle, strides = client.empty_tensor(shape, elem.nbytes)
    return TensorBuffer(handle, shape, strides, elem)


def _addresses(buffers: tuple[TensorBuffer, ...]) -> list[int]:
    """Device addresses of the buffers (a CUDA page's resource is its pointer)."""
    addresses = []
    for buf in buffers:
        binding = buf.handle.binding()
        addresses.append(cast(int, binding.resource) + binding.offset_bytes)
    return addresses


def _bindings(*buffers: TensorBuffer) -> list[Binding]:
    return [buf.handle.binding() for buf in buffers]
