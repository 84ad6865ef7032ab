"""Checking the tensors an operation is given, before anything is enqueued.

An operand is a :class:`~ruda_core.runtime.layer_norm_args.TensorBuffer` or a
:class:`~ruda_core.tensor.RudaTensor`; both become a ``TensorBuffer``. An operation runs on the
client of its first operand's device (:func:`client_and_operands`) and returns ``RudaTensor``
values (:func:`as_tensors`). The checks raise
``TypeError`` for an object that is neither, :class:`~ruda_core.runtime.InvalidHandle` for one
on another device than the operation's, :class:`~ruda_core.runtime.LayoutError` for a
shape, stride or size problem, :class:`~ruda_core.runtime.LaunchConfigError` for a wrong element
type or parameter value, and :class:`~ruda_core.runtime.UnsupportedFeature` for an element type
the device lacks. Each message names the operation and the operand. This module launches
nothing.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ir import Elem
from ..runtime import (
    ComputeClient,
    InvalidHandle,
    LaunchConfigError,
    LayoutError,
    UnsupportedFeature,
)
from ..runtime.device_names import device_name
from ..runtime.layer_norm_args import TensorBuffer
from ..runtime.layout import is_contiguous
from ..tensor import RudaTensor

__all__ = [
    "U32_LIMIT",
    "Operand",
    "as_buffer",
    "as_tensors",
    "check_device",
    "check_elem",
    "check_epsilon",
    "check_float",
    "check_shape",
    "client_and_operands",
    "is_on",
]

#: Kernels index with ``u32``: an operand has fewer elements than this.
U32_LIMIT = 1 << 32

#: What an operation accepts as a tensor.
Operand = TensorBuffer | RudaTensor


def as_buffer(op: str, name: str, value: object) -> TensorBuffer:
    """``value`` as a ``TensorBuffer`` after checking that its layout is contiguous and that its
    handle holds every element.

    :raises TypeError: when ``value`` is neither a ``TensorBuffer`` nor a ``RudaTensor``.
    :raises LayoutError: for mismatched ranks, negative extents, a non-contiguous layout, too
        many elements for ``u32`` indexing, or a handle smaller than the tensor.
    """
    if not isinstance(value, TensorBuffer | RudaTensor):
        raise TypeError(f"{op}: {name} must be a TensorBuffer or a RudaTensor, got {value!r}")
    shape = tuple(int(n) for n in value.shape)
    strides = tuple(int(s) for s in value.strides)
    where = f"{op}: {name} of shape {shape} and strides {strides}"
    if len(shape) != len(strides):
        raise LayoutError(f"{where}: shape and strides differ in rank")
    if any(n < 0 for n in shape):
        raise LayoutError(f"{where}: an extent is negative")
    if not is_contiguous(shape, strides):
        raise LayoutError(
            f"{where} is not contiguous; {op} reads row-major tensors without padding: make it "
            "contiguous with a copy kernel first"
        )
    size = math.prod(shape)
    if size >= U32_LIMIT:
        raise LayoutError(f"{where} has {size} elements; kernels index with u32 (< 2**32)")
    nbytes = size * value.elem.nbytes
    if value.handle.nbytes < nbytes:
        raise LayoutError(
            f"{where} needs {nbytes} bytes of {value.elem}, but its handle holds "
            f"{value.handle.nbytes}"
        )
    return TensorBuffer(value.handle, shape, strides, value.elem)


def client_and_operands(op: str, args: tuple[Any, ...]) -> tuple[ComputeClient, tuple[Any, ...]]:
    """The client an operation runs on and its operands, from its positional arguments: the
    client of the first operand's device, or a leading client (``op(client, a, …)``, the form
    that names it).

    :raises TypeError: when the first operand is not a ``RudaTensor`` or ``TensorBuffer``.
    :raises InvalidHandle: for memory no registered client serves.
    """
    if args and isinstance(args[0], ComputeClient):
        return args[0], args[1:]
    first = args[0] if args else None
    if not isinstance(first, TensorBuffer | RudaTensor):
        raise TypeError(
            f"{op}: the first operand must be a RudaTensor (ruda_core.asarray(x, device) makes "
            f"one) or a TensorBuffer, got {type(first).__name__}"
        )
    return ComputeClient.owning(first.handle), args


def as_tensors(buffers: Sequence[TensorBuffer]) -> tuple[RudaTensor, ...]:
    """An operation's results as ``RudaTensor`` values over the same memory."""
    return tuple(RudaTensor(b.handle, b.shape, b.strides, b.elem) for b in buffers)


def is_on(value: Operand, client: ComputeClient) -> bool:
    """Whether ``value``'s memory is on ``client``'s device."""
    return value.handle.server_id == client.server.server_id


def check_device(op: str, name: str, buf: TensorBuffer, client: ComputeClient) -> None:
    """:raises InvalidHandle: unless ``buf``'s memory is on ``client``'s device."""
    if not is_on(buf, client):
        held, device = buf.handle.server_id, str(client.device)
        raise InvalidHandle(
            f"{op}: {name} is on {device_name(held)}, but {op} runs on {device}; copy it "
            f"there first (ruda_core.asarray({name}, {device!r}))"
        )


def check_shape(op: str, name: str, buf: TensorBuffer, shape: tuple[int, ...]) -> None:
    """:raises LayoutError: unless ``buf`` has exactly ``shape``."""
    if buf.shape != shape:
        raise LayoutError(f"{op}: {name} has shape {buf.shape}; expected {shape}")


def check_float(op: str, name: str, buf: TensorBuffer, client: ComputeClient) -> None:
    """:raises LaunchConfigError: unless ``buf`` holds floats.
    :raises UnsupportedFeature: when the device lacks ``buf``'s element type."""
    if not buf.elem.is_float:
        raise LaunchConfigError(f"{op}: {name} is {buf.elem}; expected f16, bf16, f32 or f64")
    if not client.features().supports(buf.elem):
        raise UnsupportedFeature(
            f"{op}: {name} is {buf.elem}, which {client.device} does not support; use f32"
        )


def check_elem(op: str, name: str, buf: TensorBuffer, elem: Elem, why: str) -> None:
    """:raises LaunchConfigError: unless ``buf`` holds ``elem``; ``why`` says where that type
    comes from."""
    if buf.elem is not elem:
        raise LaunchConfigError(f"{op}: {name} is {buf.elem}; expected {elem} ({why})")


def check_epsilon(op: str, epsilon: object, acc: Elem) -> float:
    """``epsilon`` as a float, for kernels that add it in ``acc``.

    :raises LaunchConfigError: unless it is a real number >= 0 that ``acc`` holds.
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        raise LaunchConfigError(f"{op}: epsilon must be a real number, got {epsilon!r}")
    value = float(epsilon)
    largest = float(np.finfo(acc.numpy).max)
    if not 0 <= value <= largest:
        raise LaunchConfigError(
            f"{op}: epsilon is {value}; it must be >= 0 and at most {largest:g}, the largest "
            f"{acc} (the kernels add it in {acc})"
        )
    return value
