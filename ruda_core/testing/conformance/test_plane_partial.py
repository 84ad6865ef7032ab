"""Plane operations on partial planes: cubes whose unit count is not a multiple of the plane
width (and cubes smaller than a plane) end with a plane of fewer lanes, and every operation acts
over the lanes that exist. Each result is checked against the host model at the device's width,
and against the NumPy reference device where its width is the same."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.lang import (
    ABSOLUTE_POS,
    RUDA_DIM,
    RUDA_POS,
    UNIT_POS,
    UNIT_POS_PLANE,
    Array,
    Comptime,
    Numeric,
    SharedMemory,
    kernel,
    plane_all,
    plane_any,
    plane_ballot,
    plane_broadcast,
    plane_elect,
    plane_exclusive_sum,
    plane_inclusive_sum,
    plane_max,
    plane_min,
    plane_prod,
    plane_shuffle,
    plane_shuffle_down,
    plane_shuffle_up,
    plane_shuffle_xor,
    plane_sum,
    sync_plane,
    u32,
)
from ruda_core.runtime import ComputeClient, Feature, LaunchConfigError
from ruda_core.testing.markers import need, requires
from ruda_core.testing.plane_model import PlaneModel
from ruda_core.testing.runner import run_definition, run_kernel

CUBES = 2
#: The plane reductions and scans.
REDUCTIONS = [
    "plane_sum",
    "plane_prod",
    "plane_min",
    "plane_max",
    "plane_inclusive_sum",
    "plane_exclusive_sum",
]
#: Unit counts of a cube; those that are whole planes of the device's width are left out.
SIZES = (1, 3, 17, 31, 33, 47, 100)
#: The most units a test cube has (the shared memory of the plane-barrier kernel).
MOST_UNITS = 128


@kernel
def conformance_partial_reductions(x: Array[Numeric], out: Array[Numeric]):
    i = ABSOLUTE_POS
    n = x.len()
    v = x[i]
    out[i] = plane_sum(v)
    out[n + i] = plane_prod(v)
    out[u32(2) * n + i] = plane_min(v)
    out[u32(3) * n + i] = plane_max(v)
    out[u32(4) * n + i] = plane_inclusive_sum(v)
    out[u32(5) * n + i] = plane_exclusive_sum(v)


@kernel
def conformance_partial_reads(x: Array[Numeric], src: Array[u32], out: Array[Numeric], lane: u32):
    i = ABSOLUTE_POS
    n = x.len()
    v = x[i]
    s = src[i]
    out[i] = plane_broadcast(v, lane)
    out[n + i] = plane_shuffle(v, s)
    out[u32(2) * n + i] = plane_shuffle_up(v, s)
    out[u32(3) * n + i] = plane_shuffle_down(v, s)
    out[u32(4) * n + i] = plane_shuffle_xor(v, s)


@kernel
def conformance_partial_votes(x: Array[u32], out: Array[u32]):
    i = RUDA_POS * RUDA_DIM + UNIT_POS  # ABSOLUTE_POS where the cube is one row
    n = x.len()
    v = x[i]
    out[i] = plane_ballot(v % u32(3) == u32(0))
    out[n + i] = plane_ballot(True)
    out[u32(2) * n + i] = u32(plane_all(v > u32(0))) + u32(2) * u32(plane_any(v > u32(900)))
    out[u32(3) * n + i] = u32(plane_elect())
    out[u32(4) * n + i] = plane_sum(u32(1))  # the number of lanes that exist


@kernel
def conformance_partial_reduction_alone(x: Array[u32], out: Array[u32], OP: Comptime[str]):
    i = RUDA_POS * RUDA_DIM + UNIT_POS  # ABSOLUTE_POS where the cube is one row
    if OP == "plane_sum":
        out[i] = plane_sum(x[i])
    elif OP == "plane_prod":
        out[i] = plane_prod(x[i])
    elif OP == "plane_min":
        out[i] = plane_min(x[i])
    elif OP == "plane_max":
        out[i] = plane_max(x[i])
    elif OP == "plane_inclusive_sum":
        out[i] = plane_inclusive_sum(x[i])
    else:
        out[i] = plane_exclusive_sum(x[i])


@kernel
def conformance_partial_election(out: Array[u32]):
    out[RUDA_POS * RUDA_DIM + UNIT_POS] = u32(plane_elect())


@kernel
def conformance_partial_sync_plane(x: Array[u32], out: Array[u32]):
    cache = SharedMemory(u32, MOST_UNITS)
    lanes = plane_sum(u32(1))
    cache[UNIT_POS] = x[ABSOLUTE_POS] * u32(3)
    sync_plane()
    out[ABSOLUTE_POS] = cache[UNIT_POS - UNIT_POS_PLANE + (UNIT_POS_PLANE + u32(1)) % lanes]


def _sizes(client: ComputeClient) -> list[int]:
    props = client.properties()
    plane, most = props.plane_dim, min(props.max_units_per_ruda, MOST_UNITS)
    wanted = {*SIZES, plane - 1, plane + 1, 2 * plane + 3}
    return sorted(u for u in wanted if 0 < u <= most and u % plane)


def _run(client, kern, arrays, out_len, out_dtype, *scalars, units: int, dim=None):
    """``kern`` over ``CUBES`` cubes of ``units`` (or ``dim``): its output of ``out_len``
    ``out_dtype``."""
    shape = dim if dim is not None else units
    return run_kernel(client, kern, arrays, (out_len, out_dtype), scalars, CUBES, shape)


def _check(client, reference, got, want, run, what: str) -> None:
    for name, expected, actual in zip(want, want.values(), got, strict=True):
        np.testing.assert_array_equal(actual, expected, f"{name} {what}")
    if reference.properties().plane_dim == client.properties().plane_dim:
        np.testing.assert_array_equal(
            np.concatenate(got), run(reference), f"differs from the reference device {what}"
        )


def _small_exact(rng: np.random.Generator, n: int, elem: Elem) -> np.ndarray:
    """Values whose plane sums and products are exact in any order: small integers (integer
    arithmetic wraps the same in any order); for floats mostly ones, a few halves and twos
    (every partial product of a plane stays within f16's range)."""
    if elem.is_float:
        values = np.array([-1, 1, -0.5, 0.5, -2, 2], elem.numpy)
        return rng.choice(values, n, p=[0.4, 0.4, 0.05, 0.05, 0.05, 0.05])
    return rng.integers(-3 if elem.is_signed else 0, 4, n).astype(elem.numpy)


@requires(Feature.PLANE, Feature.PARTIAL_PLANE)
@pytest.mark.parametrize(
    "elem",
    [Elem.I32, Elem.U32, Elem.F32, Elem.I64, Elem.F64, Elem.U8, Elem.F16, Elem.BF16],
    ids=str,
)
def test_reductions_and_scans_over_the_lanes_that_exist(client, reference, elem):
    need(client, elem, reference=reference)
    plane = client.properties().plane_dim
    for units in _sizes(client):
        n = CUBES * units
        x = _small_exact(np.random.default_rng(units), n, elem)

        def run(c, x=x, n=n, units=units):
            return _run(c, conformance_partial_reductions, [x], 6 * n, elem.numpy, units=units)

        model = PlaneModel(CUBES, units, plane)
        with np.errstate(over="ignore"):
            want = {
                "plane_sum": model.sum(x),
                "plane_prod": model.prod(x),
                "plane_min": model.min(x),
                "plane_max": model.max(x),
                "plane_inclusive_sum": model.inclusive_sum(x),
                "plane_exclusive_sum": model.exclusive_sum(x),
            }
        got = run(client).reshape(6, n)
        _check(client, reference, list(got), want, run, f"(RudaDim({units}), plane {plane})")


@requires(Feature.PLANE, Feature.PLANE_SHUFFLE, Feature.PARTIAL_PLANE)
@pytest.mark.parametrize(
    "elem", [Elem.U32, Elem.I32, Elem.F32, Elem.U8, Elem.F64, Elem.BF16], ids=str
)
def test_broadcast_and_shuffles_read_only_lanes_that_exist(client, reference, elem):
    need(client, elem, reference=reference)
    plane = client.properties().plane_dim
    for units in _sizes(client):
        n = CUBES * units
        rng = np.random.default_rng(units)
        x = rng.integers(1, 100, n).astype(elem.numpy)  # nonzero: a read of 0 is visible
        choices = [0, 1, 2, 3, 5, plane // 2, plane - 1, plane, plane + 1, 2**32 - 1]
        choices += [units % plane - 1, units % plane, units % plane + 1]  # the partial plane's end
        src = rng.choice(np.array([c for c in choices if c >= 0], np.uint32), n)
        model = PlaneModel(CUBES, units, plane)
        for lane in sorted({0, 2, units % plane, plane - 1}):

            def run(c, x=x, src=src, n=n, units=units, lane=lane):
                args = [x, src], 5 * n, elem.numpy, lane
                return _run(c, conformance_partial_reads, *args, units=units)

            want = {
                "plane_broadcast": model.broadcast(x, lane),
                "plane_shuffle": model.shuffle(x, src),
                "plane_shuffle_up": model.shuffle_up(x, src),
                "plane_shuffle_down": model.shuffle_down(x, src),
                "plane_shuffle_xor": model.shuffle_xor(x, src),
            }
            got = run(client).reshape(5, n)
            what = f"(RudaDim({units}), plane {plane}, broadcast lane {lane})"
            _check(client, reference, list(got), want, run, what)


def _votes(model: PlaneModel, x: np.ndarray) -> dict[str, np.ndarray]:
    """What ``conformance_partial_votes`` writes, by the model."""
    return {
        "plane_ballot": model.ballot(x % 3 == 0),
        "plane_ballot(True)": model.ballot(np.ones(x.size, bool)),
        "plane_all + 2 * plane_any": (
            model.all(x > 0).astype(np.uint32) + 2 * model.any(x > 900).astype(np.uint32)
        ),
        "plane_elect": model.elect().astype(np.uint32),
        "plane_sum(1)": model.lanes.astype(np.uint32),
    }


@requires(Feature.PLANE, Feature.PARTIAL_PLANE)
def test_ballot_votes_and_election_over_the_lanes_that_exist(client, reference):
    plane = client.properties().plane_dim
    for units in _sizes(client):
        n = CUBES * units
        model = PlaneModel(CUBES, units, plane)
        x = np.random.default_rng(units).integers(1, 900, n).astype(np.uint32)
        x[(model.lanes == plane) & (model.lane == 1)] = 0  # whole planes: not all > 0
        x[model.lane == model.lanes - 1] = 950  # any > 900 only through the last lane

        def run(c, x=x, n=n, units=units):
            return _run(c, conformance_partial_votes, [x], 5 * n, np.uint32, units=units)

        got = run(client).reshape(5, n)
        what = f"(RudaDim({units}), plane {plane})"
        _check(client, reference, list(got), _votes(model, x), run, what)


@requires(Feature.PLANE, Feature.PARTIAL_PLANE)
@pytest.mark.parametrize("op", REDUCTIONS)
def test_a_reduction_alone_in_its_kernel(client, reference, op):
    """Each reduction and scan as the only plane operation of its kernel (a compiler may then
    run a cube one unit at a time: Intel's CPU compiler gave a product the lane's own value
    there)."""
    plane = client.properties().plane_dim
    defn = conformance_partial_reduction_alone.definition(OP=op)
    for units in _sizes(client):
        n = CUBES * units
        x = np.random.default_rng(units).integers(1, 4, n).astype(np.uint32)
        model = PlaneModel(CUBES, units, plane)

        def run(c, x=x, n=n, units=units):
            arrays = [x, np.zeros(n, np.uint32)]
            return run_definition(c, defn, arrays, count=CUBES, dim=units)[1]

        with np.errstate(over="ignore"):
            want = {op: getattr(model, op.removeprefix("plane_"))(x)}
        _check(client, reference, [run(client)], want, run, f"(RudaDim({units}), plane {plane})")


@requires(Feature.PLANE, Feature.PARTIAL_PLANE)
def test_an_election_alone_in_its_kernel(client, reference):
    """The only plane operation of its kernel (a compiler may then run a cube one unit at a
    time: Intel's CPU compiler aborted the process on its own election there)."""
    plane = client.properties().plane_dim
    for units in _sizes(client):
        model = PlaneModel(CUBES, units, plane)

        def run(c, n=CUBES * units, units=units):
            return _run(c, conformance_partial_election, [], n, np.uint32, units=units)

        want = {"plane_elect": model.elect().astype(np.uint32)}
        _check(client, reference, [run(client)], want, run, f"(RudaDim({units}), plane {plane})")


@requires(Feature.PLANE, Feature.PARTIAL_PLANE)
def test_sync_plane_on_a_partial_plane(client, reference):
    plane = client.properties().plane_dim
    for units in _sizes(client):
        n = CUBES * units
        x = np.arange(n, dtype=np.uint32) ** 2
        model = PlaneModel(CUBES, units, plane)

        def run(c, x=x, n=n, units=units):
            return _run(c, conformance_partial_sync_plane, [x], n, np.uint32, units=units)

        want = {"sync_plane": x[model.first + (model.lane + 1) % model.lanes] * np.uint32(3)}
        _check(client, reference, [run(client)], want, run, f"(RudaDim({units}), plane {plane})")


@requires(Feature.PLANE, Feature.PARTIAL_PLANE)
def test_a_cube_of_several_rows_is_planes_of_consecutive_units_or_refused(client, reference):
    """Rows that are not whole planes: planes run on across rows (as on the reference device)
    where the device has ``PLANES_ACROSS_ROWS``; elsewhere the launch is refused at once,
    saying to launch one row of as many units, which must then run."""
    plane = client.properties().plane_dim
    rows, width = 3, plane // 2 + 1
    units = rows * width
    n = CUBES * units
    x = np.arange(1, n + 1, dtype=np.uint32)
    model = PlaneModel(CUBES, units, plane)

    def run(c, dim=None):
        return _run(c, conformance_partial_votes, [x], 5 * n, np.uint32, units=units, dim=dim)

    one_row = run(client).reshape(5, n)
    _check(client, reference, list(one_row), _votes(model, x), run, f"(RudaDim({units}))")
    if width % plane and not client.features().has(Feature.PLANES_ACROSS_ROWS):
        with pytest.raises(LaunchConfigError, match="multiple of the plane width") as refusal:
            run(client, (width, rows, 1))
        assert f"RudaDim({units})" in str(refusal.value), str(refusal.value)
        return
    got = run(client, (width, rows, 1))
    np.testing.assert_array_equal(got, one_row.reshape(-1), f"RudaDim({width}, {rows})")


@requires(Feature.PLANE)
def test_a_device_without_partial_planes_refuses_them_before_anything_runs(client):
    if client.features().has(Feature.PARTIAL_PLANE):
        pytest.skip(f"{client.device} runs partial planes")
    plane = client.properties().plane_dim
    x = np.arange(plane + 1, dtype=np.uint32)
    with pytest.raises(LaunchConfigError, match=f"multiple of .*plane width {plane}"):
        _run(client, conformance_partial_votes, [x], 5 * x.size, np.uint32, units=plane + 1)
