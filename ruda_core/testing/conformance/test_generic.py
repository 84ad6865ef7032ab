"""Element-generic kernels and device functions specialised at three element types, ``Comptime``
specialisation, local arrays and kernels with ``Tensor`` parameters of several ranks."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.lang import (
    ABSOLUTE_POS,
    Array,
    ArrayArg,
    Comptime,
    LocalArray,
    Numeric,
    Tensor,
    TensorArg,
    func,
    kernel,
    u32,
    unroll,
)
from ruda_core.runtime import RudaCount, RudaDim
from ruda_core.tensor import RudaTensor
from ruda_core.testing.markers import need
from ruda_core.testing.runner import read_array

N = 300


@func
def conformance_mul_add(a: Numeric, b: Numeric) -> Numeric:
    return a * b + a


@kernel
def conformance_generic(
    x: Array[Numeric], y: Array[Numeric], out: Array[Numeric], SCALE: Comptime[int]
):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = conformance_mul_add(x[i], y[i]) * Numeric(SCALE)


@kernel
def conformance_local_array(out: Array[u32], K: Comptime[int]):
    i = ABSOLUTE_POS
    if i < out.len():
        tmp = LocalArray(u32, K)
        for k in unroll(range(K)):
            tmp[k] = i + u32(k)
        acc = u32(0)
        for k in range(u32(K)):
            acc += tmp[K - 1 - k] * (k + u32(1))
        out[i] = acc


@kernel
def conformance_tensor_sum(t: Tensor[Numeric], out: Array[Numeric]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = t[i * t.stride(0)] + Numeric(t.rank())


@pytest.mark.parametrize("elem", [Elem.F32, Elem.I32, Elem.U64, Elem.I16, Elem.F64], ids=str)
def test_generic_kernel_at_several_types(client, elem):
    need(client, elem)
    rng = np.random.default_rng(8)
    x, y = (rng.integers(0, 100, N).astype(elem.numpy) for _ in range(2))
    out = client.empty(x.nbytes)
    for scale in (1, 3):
        conformance_generic.launch(
            client,
            RudaCount(-(-N // 64)),
            RudaDim(64),
            ArrayArg(client.create_from_slice(x), N, elem=elem),
            ArrayArg(client.create_from_slice(y), N, elem=elem),
            ArrayArg(out, N),
            SCALE=scale,
        )
        with np.errstate(over="ignore"):
            expected = (x * y + x) * elem.numpy.type(scale)
        np.testing.assert_array_equal(read_array(client, out, elem.numpy), expected)


def test_local_arrays_are_private_to_each_unit(client):
    k = 5
    out = client.empty(4 * N)
    conformance_local_array.launch(
        client, RudaCount(-(-N // 64)), RudaDim(64), ArrayArg(out, N), K=k
    )
    i = np.arange(N)[:, None]
    expected = ((i + np.arange(k)[::-1]) * (np.arange(k) + 1)).sum(axis=1)
    np.testing.assert_array_equal(read_array(client, out, np.uint32), expected)


@pytest.mark.parametrize("shape", [(N,), (N, 2), (N, 3, 2)], ids=str)
def test_tensor_parameters_of_several_ranks(client, shape):
    data = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    tensor = RudaTensor.from_numpy(client, data)
    out = client.empty(4 * N)
    conformance_tensor_sum.launch(
        client, RudaCount(-(-N // 64)), RudaDim(64), tensor, ArrayArg(out, N, elem=Elem.F32)
    )
    expected = data.reshape(N, -1)[:, 0] + len(shape)
    np.testing.assert_array_equal(read_array(client, out, np.float32), expected)
    view = TensorArg(tensor.handle, shape, tensor.strides, elem=Elem.F32)
    conformance_tensor_sum.launch(
        client, RudaCount(-(-N // 64)), RudaDim(64), view, ArrayArg(out, N, elem=Elem.F32)
    )
    np.testing.assert_array_equal(read_array(client, out, np.float32), expected)
