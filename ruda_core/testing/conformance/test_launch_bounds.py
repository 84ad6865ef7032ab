"""A kernel's stated bound on its cube (``launch_bounds(n)``): a cube of up to ``n`` units runs,
whatever its shape, and a larger one is refused with a ``LaunchConfigError`` naming the kernel,
the cube and the bound, by ``launch``, ``launch_unchecked`` and ``prepare`` alike, before
anything runs; the client stays usable. A bound above the device's limit leaves the device's
limit the only one. A kernel stating its exact cube (``cube_units(n)``) runs in cubes of ``n``
units, its plane operations over whole planes as in any other kernel, and a launch of any other
cube is refused the same way."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
    Array,
    ArrayArg,
    Comptime,
    cube_units,
    kernel,
    launch_bounds,
    plane_sum,
    u32,
)
from ruda_core.runtime import (
    ComputeClient,
    Feature,
    Handle,
    LaunchConfigError,
    RudaCount,
    RudaDim,
)
from ruda_core.testing.markers import requires
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


@kernel
def conformance_exact(out: Array[u32], UNITS: Comptime[int]):
    cube_units(UNITS)
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = UNIT_POS + u32(1)


@kernel
def conformance_exact_planes(out: Array[u32], UNITS: Comptime[int]):
    cube_units(UNITS)
    out[ABSOLUTE_POS] = plane_sum(UNIT_POS)


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


def _refused_then_runs(client, k, how: str, delta: int, message: str) -> None:
    """``k`` stating a bound of ``_bound`` units (halved where that is the device's limit, so
    that a cube over it still fits the device), launched with a cube of ``bound + delta``
    units: refused with ``message`` (formatted with the bound and those units) before it runs;
    then it runs with its bound."""
    bound = _bound(client)
    if bound >= client.properties().max_units_per_ruda:
        bound //= 2
    n = CUBES * (bound + 1)
    out = _zeros(client, n)
    submit = getattr(k, how)
    with pytest.raises(LaunchConfigError, match=message.format(bound=bound, units=bound + delta)):
        submit(client, RudaCount(CUBES), RudaDim(bound + delta), ArrayArg(out, n), UNITS=bound)
    assert not read_array(client, out, np.uint32).any(), "a refused launch wrote its output"
    k.launch(client, RudaCount(CUBES), RudaDim(bound), ArrayArg(out, n), UNITS=bound)
    got = read_array(client, out, np.uint32)
    np.testing.assert_array_equal(got[: CUBES * bound], _expected(bound))


@pytest.mark.parametrize("how", ["launch", "launch_unchecked", "prepare"])
def test_a_cube_over_the_bound_is_refused_before_it_runs(client, how):
    message = r"conformance_bounded.*launch_bounds\({bound}\).*{units} units"
    _refused_then_runs(client, conformance_bounded, how, 1, message)


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


def test_a_cube_of_the_exact_units_runs(client):
    bound = _bound(client)
    n = CUBES * bound
    out = _zeros(client, n)
    conformance_exact.launch(
        client, RudaCount(CUBES), RudaDim(bound), ArrayArg(out, n), UNITS=bound
    )
    np.testing.assert_array_equal(read_array(client, out, np.uint32), _expected(bound))


@pytest.mark.parametrize("how", ["launch", "launch_unchecked", "prepare"])
@pytest.mark.parametrize("delta", [-1, 1])
def test_a_cube_of_other_units_than_the_exact_ones_is_refused_before_it_runs(client, how, delta):
    message = r"conformance_exact.*cube_units\({bound}\).*exactly {bound} units.*{units} units"
    _refused_then_runs(client, conformance_exact, how, delta, message)


@requires(Feature.PLANE)
def test_plane_operations_in_an_exact_cube_of_whole_planes_span_each_plane(client):
    props = client.properties()
    plane = props.plane_dim
    units = 2 * plane if 2 * plane <= props.max_units_per_ruda else plane
    n = CUBES * units
    out = _zeros(client, n)
    conformance_exact_planes.launch(
        client, RudaCount(CUBES), RudaDim(units), ArrayArg(out, n), UNITS=units
    )
    lanes = np.arange(units, dtype=np.uint32).reshape(-1, plane)
    want = np.repeat(lanes.sum(axis=1, dtype=np.uint32), plane)
    np.testing.assert_array_equal(read_array(client, out, np.uint32), np.tile(want, CUBES))
