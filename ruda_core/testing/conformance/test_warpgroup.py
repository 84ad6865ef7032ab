"""Warpgroup matrices (``wgmma``): products of ``64 x 16`` by ``16 x N`` tiles of bf16 and f16
read from swizzled shared memory, accumulated over ``K`` in f32, in several warpgroups of a cube
and several cubes, with odd offsets and strides in global memory, and two groups in flight
(``wait(1)`` completes the older alone), and an accumulator stored into shared memory for an
epilogue. The inputs are small integers, so every product and
every partial sum is exact and the result is the same in any summation order: every device must
match the exact product bit for bit. A device without ``Feature.WARPGROUP_MMA`` skips these as
unsupported, and refuses such a kernel with ``UnsupportedFeature``."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.lang import ArrayArg, bf16, f16
from ruda_core.runtime import (
    ComputeClient,
    Feature,
    LaunchConfigError,
    RudaCount,
    RudaDim,
    UnsupportedFeature,
)
from ruda_core.testing.markers import requires
from ruda_core.testing.runner import read_array
from ruda_core.testing.warpgroup_kernels import (
    wgmma_groups,
    wgmma_product,
    wgmma_through_shared,
)

#: The input types: the kernel's element and NumPy's.
ELEMS = {"bf16": (bf16, ml_dtypes.bfloat16), "f16": (f16, np.float16)}
#: ``(N, K, warpgroups per cube)``: every accumulator width class, one to four products deep
#: and past one 64-wide block of ``A``, one and two warpgroups per cube.
SHAPES = [(8, 16, 1), (64, 64, 2), (128, 32, 2), (256, 64, 1), (64, 96, 1)]


def _args(client: ComputeClient, *arrays: np.ndarray) -> list[ArrayArg]:
    return [
        ArrayArg(client.create_from_slice(x.ravel()), x.size, elem=Elem.from_dtype(x.dtype))
        for x in arrays
    ]


def _integers(rng: np.random.Generator, shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """Integers from -4 to 4: their products and sums of up to a few hundred terms are exact
    in f32 (and in the inputs' 16-bit types)."""
    return rng.integers(-4, 5, size=shape).astype(dtype)


@requires(Feature.WARPGROUP_MMA)
@pytest.mark.parametrize("elem", sorted(ELEMS))
@pytest.mark.parametrize(("n", "k", "groups"), SHAPES, ids=lambda v: str(v))
def test_products_with_odd_strides_are_exact(client, elem, n, k, groups):
    kernel_elem, dtype = ELEMS[elem]
    # offsets and row strides within each warpgroup's part: odd ones, rows longer than used
    at = np.array([3, k + 5, 1, n + 3, 2, n + 7], np.uint32)
    a_part, b_part, o_part = 3 + 64 * (k + 5), 1 + k * (n + 3), 2 + 64 * (n + 7)
    rng = np.random.default_rng(n * 1000 + k)
    a = _integers(rng, (groups, a_part), dtype)
    b = _integers(rng, (groups, b_part), dtype)
    out = np.full((groups, o_part), -7.0, np.float32)
    args = _args(client, a, b, out, at)
    wgmma_product.launch(
        client, RudaCount(1), RudaDim(128 * groups), *args, N=n, K=k, GROUPS=groups,
        In=kernel_elem,
    )  # fmt: skip
    got = read_array(client, args[2].handle, np.float32).reshape(groups, o_part)
    for w in range(groups):
        ta = a[w, 3:].reshape(64, k + 5)[:, :k].astype(np.float64)
        tb = b[w, 1:].reshape(k, n + 3)[:, :n].astype(np.float64)
        want = np.full(o_part, -7.0)
        want[2:].reshape(64, n + 7)[:, :n] = ta @ tb  # the stride's padding is not written
        np.testing.assert_array_equal(got[w], want.astype(np.float32))


@requires(Feature.WARPGROUP_MMA)
@pytest.mark.parametrize("elem", sorted(ELEMS))
def test_several_cubes_each_multiply_their_own_tiles(client, elem):
    kernel_elem, dtype = ELEMS[elem]
    n, k, groups, cubes = 64, 32, 2, 3
    at = np.array([0, k, 0, n, 0, n], np.uint32)
    rng = np.random.default_rng(5)
    a = _integers(rng, (groups, 64 * k), dtype)
    b = _integers(rng, (groups, k * n), dtype)
    out = np.zeros((groups, 64 * n), np.float32)
    args = _args(client, a, b, out, at)
    wgmma_product.launch(
        client, RudaCount(cubes), RudaDim(128 * groups), *args, N=n, K=k, GROUPS=groups,
        In=kernel_elem,
    )  # fmt: skip
    got = read_array(client, args[2].handle, np.float32).reshape(groups, 64, n)
    for w in range(groups):  # every cube computed the same tiles and stored them alike
        want = a[w].reshape(64, k).astype(np.float64) @ b[w].reshape(k, n).astype(np.float64)
        np.testing.assert_array_equal(got[w], want)


@requires(Feature.WARPGROUP_MMA)
def test_cubes_of_part_of_a_warpgroup_are_refused_before_running(client):
    a = np.ones((64, 32), ml_dtypes.bfloat16)
    b = np.ones((32, 64), ml_dtypes.bfloat16)
    out = np.full(2 * 64 * 64, -7.0, np.float32)
    args = _args(client, a, b, out)
    with pytest.raises(LaunchConfigError, match=r"whole warpgroups of 128 units; .* 96 units"):
        wgmma_groups.launch(client, RudaCount(1), RudaDim(96), *args, N=64, K=32, In=bf16)
    np.testing.assert_array_equal(read_array(client, args[2].handle, np.float32), out)


@requires(Feature.WARPGROUP_MMA)
@pytest.mark.parametrize("n", [64, 128])
def test_wait_one_completes_the_older_of_two_groups(client, n):
    k = 64
    rng = np.random.default_rng(n)
    a = _integers(rng, (64, k), ml_dtypes.bfloat16)
    b = _integers(rng, (k, n), ml_dtypes.bfloat16)
    out = np.zeros(2 * 64 * n, np.float32)
    args = _args(client, a, b, out)
    wgmma_groups.launch(client, RudaCount(2), RudaDim(128), *args, N=n, K=k, In=bf16)
    got = read_array(client, args[2].handle, np.float32).reshape(2, 64, n)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_array_equal(got[0], a64[:, : k // 2] @ b64[: k // 2])
    np.testing.assert_array_equal(got[1], a64[:, k // 2 :] @ b64[k // 2 :])


@requires(Feature.WARPGROUP_MMA)
@pytest.mark.parametrize("elem", sorted(ELEMS))
def test_an_epilogue_through_shared_memory_converts_the_product(client, elem):
    kernel_elem, dtype = ELEMS[elem]
    n, k = 64, 32
    rng = np.random.default_rng(11)
    a = _integers(rng, (64, k), dtype)
    b = _integers(rng, (k, n), dtype)
    out = np.zeros(64 * n, dtype)
    args = _args(client, a, b, out)
    wgmma_through_shared.launch(client, RudaCount(1), RudaDim(128), *args, N=n, K=k, In=kernel_elem)
    got = read_array(client, args[2].handle, np.dtype(dtype)).reshape(64, n)
    want = a.astype(np.float64) @ b.astype(np.float64)  # small integers: exact in bf16 and f16
    np.testing.assert_array_equal(got.astype(np.float64), want)


def test_a_device_without_warpgroup_matrices_refuses_them(client):
    if client.features().has(Feature.WARPGROUP_MMA):
        pytest.skip(f"{client.device} has warpgroup matrices")
    x = np.zeros(64 * 16, ml_dtypes.bfloat16)
    args = _args(client, x, np.zeros(16 * 8, ml_dtypes.bfloat16), np.zeros(64 * 8, np.float32))
    args.append(_args(client, np.array([0, 16, 0, 8, 0, 8], np.uint32))[0])
    with pytest.raises(UnsupportedFeature, match=r"warpgroup matrices.*" + str(client.device)):
        wgmma_product.launch(
            client, RudaCount(1), RudaDim(128), *args, N=8, K=16, GROUPS=1, In=bf16
        )
        read_array(client, args[2].handle, np.float32)  # where a deferred launch error shows
