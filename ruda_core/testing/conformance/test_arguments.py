"""Dataclass kernel arguments and ``@func`` results of several values: a dataclass of arrays,
a tensor and scalars is passed as one argument and read field by field, and a device function
returns a tuple that the kernel unpacks; results are checked against NumPy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from ruda_core.errors import LaunchConfigError
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, Tensor, f32, func, i32, kernel, u32
from ruda_core.runtime import RudaCount, RudaDim
from ruda_core.tensor import RudaTensor
from ruda_core.testing.runner import read_array

N = 300


@dataclass
class ConformanceAffine:
    scale: f32
    shift: i32
    x: Array[f32]
    grid: Tensor[i32]


@func
def conformance_split(v: i32, d: i32) -> tuple[i32, i32]:
    return v // d, v % d


@func
def conformance_affine_at(p: ConformanceAffine, i: u32) -> f32:
    return p.scale * p.x[i] + f32(p.shift)


@kernel
def conformance_struct_and_tuples(
    p: ConformanceAffine, out: Array[f32], quot: Array[i32], rem: Array[i32]
):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = conformance_affine_at(p, i)
        row, col = i // p.grid.shape(1), i % p.grid.shape(1)
        q, r = conformance_split(p.grid[row * p.grid.stride(0) + col * p.grid.stride(1)], 7)
        quot[i], rem[i] = q, r


def _launch(client, args):
    conformance_struct_and_tuples.launch(client, RudaCount(2), RudaDim(256), *args)


def test_dataclass_fields_and_tuple_results(client):
    # eighths, whose products with 2.5 are exact: a driver that fuses the multiply and the add
    # (Vulkan lets it) gives the same sums, and the test is of the arguments
    x = np.arange(N, dtype=np.float32) / 8 - 19
    grid = np.arange(-150, 150, dtype=np.int32).reshape(20, 15)
    p = ConformanceAffine(
        2.5,
        -4,
        ArrayArg(client.create_from_slice(x), N),
        RudaTensor.from_numpy(client, grid),
    )
    outs = [client.empty(4 * N) for _ in range(3)]
    _launch(client, (p, *(ArrayArg(o, N) for o in outs)))
    got = read_array(client, outs[0], np.float32)
    np.testing.assert_array_equal(got, np.float32(2.5) * x + np.float32(-4))
    flat = grid.reshape(-1)
    np.testing.assert_array_equal(read_array(client, outs[1], np.int32), flat // 7)
    np.testing.assert_array_equal(read_array(client, outs[2], np.int32), flat % 7)


def test_a_dataclass_argument_of_another_type_is_refused(client):
    out = ArrayArg(client.empty(4 * N), N)
    with pytest.raises(LaunchConfigError, match="expects a ConformanceAffine"):
        _launch(client, ((2.5, -4, out, out), out, out, out))
