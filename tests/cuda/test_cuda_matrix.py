"""Cooperative matrices on a CUDA GPU: the device reports WMMA's configurations for its compute
capability, a kernel using another is refused before NVRTC runs, and a tile product through
WMMA matches NumPy (the conformance suite checks the rest on ``cuda:0``). Skips without CuPy or a
GPU, saying which."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem, MatrixLayout
from ruda_core.lang import ArrayArg
from ruda_core.runtime import RudaCount, RudaDim, UnsupportedFeature
from ruda_core.testing.matrix_kernels import cmma_tile
from ruda_core.testing.runner import read_array
from ruda_cuda.dialect import wmma_configs

ROW = MatrixLayout.ROW_MAJOR


def _launch(client, arrays, **spec):
    args = [
        ArrayArg(client.create_from_slice(x), x.size, elem=Elem.from_dtype(x.dtype)) for x in arrays
    ]
    cmma_tile.launch(client, RudaCount(1), RudaDim(32), *args, **spec)
    return read_array(client, args[3].handle, arrays[3].dtype)


def _wmma_client(open_device):
    client = open_device("cuda:0")
    if not client.features().matrices:
        pytest.skip("unsupported: cuda:0 has no WMMA headers (crt/mma.h of a CUDA toolkit)")
    return client


def test_cuda_reports_the_wmma_configurations_of_its_compute_capability(open_device):
    client = open_device("cuda:0")
    from ruda_cuda.driver import wmma_headers  # imports CuPy: only once a CUDA device is open

    major, minor = dict(client.properties().extra)["compute_capability"].split(".")
    want = wmma_configs(int(major) * 10 + int(minor)) if wmma_headers() else frozenset()
    assert client.features().matrices == want


def test_cuda_wmma_tile_product_matches_numpy(open_device):
    client = _wmma_client(open_device)
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 5, 256).astype(np.float16)  # small integers: every sum is exact
    b = rng.integers(-4, 5, 256).astype(np.float16)
    c = rng.integers(-4, 5, 256).astype(np.float32)
    at = np.array([0, 16, 0, 16, 0, 16, 0, 16], np.uint32)
    spec = dict(M=16, N=16, K=16, TF32=False, LA=ROW, LB=ROW, LC=ROW, LOUT=ROW)
    got = _launch(client, [a, b, c, np.zeros(256, np.float32), at], **spec).reshape(16, 16)
    want = a.astype(np.float32).reshape(16, 16) @ b.astype(np.float32).reshape(16, 16)
    np.testing.assert_array_equal(got, want + c.reshape(16, 16))


def test_cuda_refuses_a_shape_wmma_lacks(open_device):
    client = open_device("cuda:0")
    x = np.zeros(64, np.float16)
    at = np.array([0, 8, 0, 8, 0, 8, 0, 8], np.uint32)
    spec = dict(M=8, N=8, K=8, TF32=False, LA=ROW, LB=ROW, LC=ROW, LOUT=ROW)
    with pytest.raises(UnsupportedFeature, match=r"8x8x8.*cuda:0"):
        _launch(client, [x, x, np.zeros(64, np.float32), np.zeros(64, np.float32), at], **spec)
