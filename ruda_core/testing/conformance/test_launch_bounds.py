"""A kernel's stated bound on its cube (``launch_bounds(n)``): a cube of up to ``n`` units runs,
whatever its shape, and a larger one is refused with a ``LaunchConfigError`` naming the kernel,
the cube and the bound, by ``launch``, ``launch_unchecked`` and ``prepare`` alike, before
anything runs; the client stays usable. A bound above the device's limit leaves the device's
limit the only one."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
    Array,
    ArrayArg,
    Comptime,
    kernel,
    launch_bounds,
    u32,
)
from ruda_core.runtime import ComputeClient, Handle, LaunchConfigError, RudaCount, RudaDim
from ruda_core.testing.runner import read_array

#: The bound the tests state (or the device's limit, where that is lower).
BOUND = 64
#: Cubes per launch.
CUBES = 3


@kernel
def conformance_bounded(out: Array[u32], UNITS: Comptime[int]):
    launch_bounds(UNITS)
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = UNIT_POS + u32(1)


def _bound(client: ComputeClient) -> int:
    return min(BOUND, client.properties().max_units_per_ruda)


def _zeros(client: ComputeClient, n: int) -> Handle:
    return client.create_from_slice(np.zeros(n, np.uint32))


def _expected(units: int) -> np.ndarray:
    return np.tile(np.arange(1, units + 1, dtype=np.uint32), CUBES)


def test_a_cube_of_the_bound_runs(client):
    bound = _bound(client)
    n = CUBES * bound
    out = _zeros(client, n)
    conformance_bounded.launch(
        client, RudaCount(CUBES), RudaDim(bound), ArrayArg(out, n), UNITS=bound
    )
    np.testing.assert_array_equal(read_array(client, out, np.uint32), _expected(bound))


def test_a_cube_of_two_axes_within_the_bound_runs(client):
    bound = _bound(client)
    if bound < 2 or client.properties().max_ruda_dim[1] < 2:
        pytest.skip(f"{client.device} has no cube of two axes within {bound} units")
    width = bound // 2
    n = CUBES * 2 * width
    out = _zeros(client, n)
    dim = RudaDim(width, 2)
    conformance_bounded.launch(client, RudaCount(CUBES), dim, ArrayArg(out, n), UNITS=bound)
    want = np.zeros(n, np.uint32)
    for cube in range(CUBES):  # ABSOLUTE_POS runs along x over the launch, then along y
        for y in range(2):
            for x in range(width):
                want[cube * width + x + y * CUBES * width] = x + y * width + 1
    np.testing.assert_array_equal(read_array(client, out, np.uint32), want)


@pytest.mark.parametrize("how", ["launch", "launch_unchecked", "prepare"])
def test_a_cube_over_the_bound_is_refused_before_it_runs(client, how):
    bound = _bound(client)
    if bound >= client.properties().max_units_per_ruda:
        bound //= 2  # a cube over the bound must still fit the device
    n = CUBES * (bound + 1)
    out = _zeros(client, n)
    submit = getattr(conformance_bounded, how)
    message = rf"conformance_bounded.*launch_bounds\({bound}\).*{bound + 1} units"
    with pytest.raises(LaunchConfigError, match=message):
        submit(client, RudaCount(CUBES), RudaDim(bound + 1), ArrayArg(out, n), UNITS=bound)
    assert not read_array(client, out, np.uint32).any(), "a refused launch wrote its output"
    conformance_bounded.launch(
        client, RudaCount(CUBES), RudaDim(bound), ArrayArg(out, n), UNITS=bound
    )
    got = read_array(client, out, np.uint32)
    np.testing.assert_array_equal(got[: CUBES * bound], _expected(bound))


def test_the_bound_counts_every_axis_of_the_cube(client):
    bound = _bound(client)
    props = client.properties()
    if 2 * bound > props.max_units_per_ruda or props.max_ruda_dim[1] < 2:
        pytest.skip(f"{client.device} has no cube of {bound} x 2 units")
    n = CUBES * 2 * bound
    out = _zeros(client, n)
    with pytest.raises(LaunchConfigError, match=rf"{2 * bound} units"):
        conformance_bounded.launch(
            client, RudaCount(CUBES), RudaDim(bound, 2), ArrayArg(out, n), UNITS=bound
        )
    assert not read_array(client, out, np.uint32).any(), "a refused launch wrote its output"


def test_a_bound_above_the_device_limit_leaves_the_device_limit(client):
    bound = _bound(client)
    n = CUBES * bound
    out = _zeros(client, n)
    above = 2 * client.properties().max_units_per_ruda
    conformance_bounded.launch(
        client, RudaCount(CUBES), RudaDim(bound), ArrayArg(out, n), UNITS=above
    )
    np.testing.assert_array_equal(read_array(client, out, np.uint32), _expected(bound))
