"""Running IR definitions and reading arrays back: the glue every conformance test shares.

:func:`run_definition` uploads host arrays, launches a :class:`KernelDefinition` through the
client's public ``launch`` (the launch ABI of :mod:`ruda_core.ir.kernel`) and reads every array
back; :func:`run_kernel` does the same for a ``@kernel`` that writes one output array. Host
arrays have the element's dtype, ``Elem.numpy`` (``ml_dtypes.bfloat16`` for bf16). Nothing here
knows about a backend.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import cast

import numpy as np
import numpy.typing as npt

from ..ir import Elem, KernelDefinition, ParamKind
from ..lang import ArrayArg, Kernel
from ..runtime import (
    ComputeClient,
    Handle,
    KernelTask,
    MemoryUsage,
    RudaCount,
    RudaDim,
    StreamId,
    contiguous_strides,
)

__all__ = [
    "TIMEOUT_S",
    "assert_same_bytes",
    "read_array",
    "run_definition",
    "run_kernel",
    "settle",
    "sharing_streams",
    "to_dim",
]

#: How long a conformance test waits for device work before calling it hung.
TIMEOUT_S = 120.0

Dim3 = int | tuple[int, int, int]


def read_array(client: ComputeClient, handle: Handle, dtype: object) -> np.ndarray:
    """Read ``handle`` (waiting) as a 1-D array of ``dtype``.

    :raises ServerError: the stream's pending error or the buffer's poison.
    """
    raw = client.read_async([handle]).result(timeout=TIMEOUT_S)[0]
    return np.frombuffer(raw, dtype=np.dtype(dtype)).copy()  # type: ignore[call-overload]


def assert_same_bytes(got: object, expected: np.ndarray) -> None:
    """``got`` (a bytes-like buffer) holds exactly the bytes of ``expected``. Equal buffers are
    compared at memory speed; only a mismatch goes through ``assert_array_equal``, for its
    report (which takes seconds on tens of MiB)."""
    values = np.frombuffer(got, dtype=np.uint8)  # type: ignore[call-overload]
    want = np.ascontiguousarray(expected).view(np.uint8).reshape(-1)
    if values.shape != want.shape or not np.array_equal(values, want):
        np.testing.assert_array_equal(values, want)


def settle(client: ComputeClient) -> MemoryUsage:
    """Memory usage once dropped handles are collected and the stream's work has finished."""
    gc.collect()
    client.sync().result(timeout=TIMEOUT_S)
    return client.memory_usage()


def to_dim(value: Dim3) -> tuple[int, int, int]:
    return (value, 1, 1) if isinstance(value, int) else value


def run_definition(
    client: ComputeClient,
    defn: KernelDefinition,
    arrays: Sequence[np.ndarray],
    scalars: Sequence[object] = (),
    count: Dim3 = 1,
    dim: Dim3 = 1,
    *,
    unchecked: bool = False,
) -> list[np.ndarray]:
    """Run ``defn`` over copies of ``arrays`` (one per array/tensor parameter, in order; a
    tensor parameter takes a C-contiguous array of its rank) and return every array afterwards.

    :param scalars: one per scalar parameter, converted to the parameter's type.
    :param unchecked: launch with ``launch_unchecked`` (``BoundsCheckMode`` decides) instead of
        the Checked ``launch``.
    :raises ServerError: launch errors at once; execution errors when the arrays are read.
    """
    params = defn.array_params
    if len(arrays) != len(params):
        raise ValueError(f"{defn.name} takes {len(params)} arrays, got {len(arrays)}")
    handles = []
    metadata: list[int] = []
    dims: list[int] = []
    for p, arr in zip(params, arrays, strict=True):
        host = np.ascontiguousarray(arr)
        if host.dtype != p.elem.numpy:
            raise TypeError(f"{defn.name}: array '{p.name}' is {host.dtype}, not {p.elem}")
        handles.append(client.create_from_slice(host.reshape(-1).view(np.uint8)))
        metadata.append(host.size)
        if p.kind is ParamKind.TENSOR:
            if host.ndim != p.rank:
                raise ValueError(f"{defn.name}: tensor '{p.name}' needs rank {p.rank}")
            dims += [*host.shape, *contiguous_strides(host.shape)]
    values = [
        cast(np.generic, np.asarray(v).astype(p.elem.numpy)[()])
        for p, v in zip(defn.scalar_params, scalars, strict=True)
    ]
    submit = client.launch_unchecked if unchecked else client.launch
    submit(
        KernelTask(defn),
        RudaCount(*to_dim(count)),
        RudaDim(*to_dim(dim)),
        [h.binding() for h in handles],
        values,
        [*metadata, *dims],
    )
    out = client.read_async(handles).result(timeout=TIMEOUT_S)
    return [
        np.frombuffer(raw, dtype=p.elem.numpy).reshape(np.shape(arr)).copy()
        for p, arr, raw in zip(params, arrays, out, strict=True)
    ]


def run_kernel(
    client: ComputeClient,
    kern: Kernel,
    arrays: Sequence[np.ndarray],
    out: tuple[int, npt.DTypeLike],
    scalars: Sequence[object] = (),
    count: Dim3 = 1,
    dim: Dim3 = 1,
) -> np.ndarray:
    """Launch ``kern`` on copies of ``arrays`` (each passed with its element type), then an
    output array of ``out = (elements, dtype)``, then ``scalars``, and return the output.

    :raises ServerError: launch errors at once; execution errors when the output is read.
    """
    args = [
        ArrayArg(client.create_from_slice(a), a.size, elem=Elem.from_dtype(a.dtype)) for a in arrays
    ]
    length, dtype = out[0], np.dtype(out[1])
    handle = client.empty(length * dtype.itemsize)
    result = ArrayArg(handle, length, elem=Elem.from_dtype(dtype))
    kern.launch(client, RudaCount(*to_dim(count)), RudaDim(*to_dim(dim)), *args, result, *scalars)
    return read_array(client, handle, dtype)


def sharing_streams(client: ComputeClient) -> tuple[ComputeClient, ComputeClient]:
    """Two clients of ``client``'s device on streams of their own whose values are equal
    modulo 64: the device queues they map onto (a stream's value modulo the queue count) are
    one wherever that count divides 64, as it does on every in-tree driver."""
    a, b = StreamId.new(), StreamId.new()
    while b.value - a.value < 64 or (b.value - a.value) % 64:
        b = StreamId.new()
    first, second = client.fixed_execution_queue(), client.fixed_execution_queue()
    first.set_stream(a)
    second.set_stream(b)
    return first, second
