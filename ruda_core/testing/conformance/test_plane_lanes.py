"""Plane operations between lanes: ballot, election, the relative shuffles (a source outside the
plane keeps the lane's own value) and the plane barrier. Results depend on the plane width, so
each is checked against a host model of the device's width, and against the NumPy reference
device where its width is the same."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.lang import (
    ABSOLUTE_POS,
    PLANE_DIM,
    UNIT_POS,
    UNIT_POS_PLANE,
    Array,
    Numeric,
    SharedMemory,
    kernel,
    plane_ballot,
    plane_broadcast,
    plane_elect,
    plane_shuffle,
    plane_shuffle_down,
    plane_shuffle_up,
    plane_shuffle_xor,
    sync_plane,
    u32,
)
from ruda_core.runtime import Feature
from ruda_core.testing.markers import need, requires
from ruda_core.testing.plane_model import PlaneModel
from ruda_core.testing.runner import run_kernel

CUBES = 2
#: Deltas given as one scalar argument, by the plane width.
UNIFORM_DELTAS = {
    "0": lambda plane: 0,
    "1": lambda plane: 1,
    "5": lambda plane: 5,
    "plane-1": lambda plane: plane - 1,
    "plane": lambda plane: plane,
    "plane+1": lambda plane: plane + 1,
    "max": lambda plane: 2**32 - 1,
}


@kernel
def conformance_ballot_elect(x: Array[u32], out: Array[u32]):
    i = ABSOLUTE_POS
    n = x.len()
    v = x[i]
    out[i] = plane_ballot(v % u32(3) == u32(0))
    out[n + i] = plane_ballot(True)
    out[u32(2) * n + i] = u32(plane_elect())


@kernel
def conformance_relative_shuffles(x: Array[Numeric], delta: Array[u32], out: Array[Numeric]):
    i = ABSOLUTE_POS
    n = x.len()
    v = x[i]
    d = delta[i]
    out[i] = plane_shuffle_up(v, d)
    out[n + i] = plane_shuffle_down(v, d)
    out[u32(2) * n + i] = plane_shuffle_xor(v, d)


@kernel
def conformance_uniform_shuffles(x: Array[u32], out: Array[u32], delta: u32):
    i = ABSOLUTE_POS
    n = x.len()
    v = x[i]
    out[i] = plane_shuffle_up(v, delta)
    out[n + i] = plane_shuffle_down(v, delta)
    out[u32(2) * n + i] = plane_shuffle_xor(v, delta)
    out[u32(3) * n + i] = u32(plane_shuffle_down(v % u32(2) == u32(1), delta))


@kernel
def conformance_bool_moves(x: Array[u32], src: Array[u32], out: Array[u32]):
    i = ABSOLUTE_POS
    n = x.len()
    odd = x[i] % u32(2) == u32(1)
    out[i] = u32(1) if plane_shuffle(odd, src[i]) else u32(0)
    out[n + i] = u32(1) if plane_broadcast(odd, u32(1)) else u32(0)
    out[u32(2) * n + i] = u32(1) if plane_shuffle_up(odd, u32(1)) else u32(0)
    out[u32(3) * n + i] = u32(1) if plane_shuffle_down(odd, u32(1)) else u32(0)
    out[u32(4) * n + i] = u32(0)
    if plane_shuffle_xor(odd, u32(1)):
        out[u32(4) * n + i] = u32(1)


@kernel
def conformance_sync_plane(x: Array[u32], out: Array[u32]):
    cache = SharedMemory(u32, 1024)
    cache[UNIT_POS] = x[ABSOLUTE_POS] * u32(3)
    sync_plane()
    first = UNIT_POS - UNIT_POS_PLANE  # the plane's lane 0
    out[ABSOLUTE_POS] = cache[first + (UNIT_POS_PLANE + u32(1)) % PLANE_DIM]


def _units(client) -> int:
    props = client.properties()
    return min(2 * props.plane_dim, props.max_units_per_ruda)


def _run(client, kern, arrays, out_len, out_dtype, *scalars, units: int):
    """``kern`` over ``CUBES`` cubes of ``units``: its output of ``out_len`` ``out_dtype``."""
    return run_kernel(client, kern, arrays, (out_len, out_dtype), scalars, CUBES, units)


def _same_as_reference(client, reference, got, run) -> None:
    """Compare with the reference device where its planes are as wide as the device's."""
    if reference.properties().plane_dim == client.properties().plane_dim:
        np.testing.assert_array_equal(got, run(reference), "differs from the reference device")


def _shuffled(model: PlaneModel, x: np.ndarray, delta: np.ndarray) -> list[np.ndarray]:
    """The host model: up, down, xor."""
    return [model.shuffle_up(x, delta), model.shuffle_down(x, delta), model.shuffle_xor(x, delta)]


@requires(Feature.PLANE)
def test_ballot_and_elect(client, reference):
    units = _units(client)
    plane = client.properties().plane_dim
    n = CUBES * units
    x = np.random.default_rng(3).integers(0, 1000, n).astype(np.uint32)

    def run(c):
        return _run(c, conformance_ballot_elect, [x], 3 * n, np.uint32, units=units)

    got = run(client).reshape(3, n)
    lane = PlaneModel(CUBES, units, plane).lane
    bits = np.where((x % 3 == 0) & (lane < 32), np.uint64(1) << lane.astype(np.uint64), 0)
    per_plane = bits.reshape(-1, plane).sum(axis=1).astype(np.uint32)
    np.testing.assert_array_equal(got[0], np.repeat(per_plane, plane), "plane_ballot")
    full = np.uint32((1 << min(plane, 32)) - 1)
    np.testing.assert_array_equal(got[1], np.full(n, full), "plane_ballot(True)")
    np.testing.assert_array_equal(got[2], (lane == 0).astype(np.uint32), "plane_elect")
    _same_as_reference(client, reference, got.reshape(-1), run)


@requires(Feature.PLANE, Feature.PLANE_SHUFFLE)
@pytest.mark.parametrize(
    "elem", [Elem.U32, Elem.I32, Elem.F32, Elem.U8, Elem.I64, Elem.F64], ids=str
)
def test_relative_shuffles_with_a_delta_per_unit(client, reference, elem):
    need(client, elem, reference=reference)
    units = _units(client)
    plane = client.properties().plane_dim
    n = CUBES * units
    rng = np.random.default_rng(11)
    x = rng.integers(-100, 100, n).astype(elem.numpy)
    choices = [0, 1, 2, 3, plane - 1, plane, plane + 1, 31, 32, 33, 2**31, 2**32 - 1]
    delta = rng.choice(np.array(choices, dtype=np.uint32), n)

    def run(c):
        return _run(c, conformance_relative_shuffles, [x, delta], 3 * n, elem.numpy, units=units)

    got = run(client).reshape(3, n)
    for k, (name, want) in enumerate(
        zip(
            ("up", "down", "xor"), _shuffled(PlaneModel(CUBES, units, plane), x, delta), strict=True
        )
    ):
        np.testing.assert_array_equal(got[k], want, f"plane_shuffle_{name} (plane_dim {plane})")
    _same_as_reference(client, reference, got.reshape(-1), run)


@requires(Feature.PLANE, Feature.PLANE_SHUFFLE)
@pytest.mark.parametrize("which", list(UNIFORM_DELTAS))
def test_relative_shuffles_with_one_delta(client, reference, which):
    units = _units(client)
    plane = client.properties().plane_dim
    delta = UNIFORM_DELTAS[which](plane)
    n = CUBES * units
    x = np.arange(1000, 1000 + n, dtype=np.uint32) * np.uint32(7)

    def run(c):
        return _run(c, conformance_uniform_shuffles, [x], 4 * n, np.uint32, delta, units=units)

    got = run(client).reshape(4, n)
    model, deltas = PlaneModel(CUBES, units, plane), np.full(n, delta)
    want = _shuffled(model, x, deltas)
    odd = _shuffled(model, (x % 2 == 1).astype(np.uint32), deltas)[1]
    for k, (name, expected) in enumerate(
        zip(("up", "down", "xor", "down of bool"), [*want, odd], strict=True)
    ):
        np.testing.assert_array_equal(got[k], expected, f"{name} by {delta} (plane_dim {plane})")
    _same_as_reference(client, reference, got.reshape(-1), run)


@requires(Feature.PLANE, Feature.PLANE_SHUFFLE)
def test_bools_moved_between_lanes_decide_selects_and_branches(client, reference):
    """A ``bool`` read from another lane by each plane move, as the condition of a select and
    of an ``if`` (the reference device once gave such a ``bool`` the layout of an integer)."""
    units = _units(client)
    plane = client.properties().plane_dim
    n = CUBES * units
    rng = np.random.default_rng(5)
    x = rng.integers(0, 1000, n).astype(np.uint32)
    src = rng.integers(0, 2 * plane, n).astype(np.uint32)

    def run(c):
        return _run(c, conformance_bool_moves, [x, src], 5 * n, np.uint32, units=units)

    got = run(client).reshape(5, n)
    model, odd, ones = PlaneModel(CUBES, units, plane), x % 2 == 1, np.ones(n, np.uint32)
    want = [model.shuffle(odd, src), model.broadcast(odd, 1), *_shuffled(model, odd, ones)]
    names = ("shuffle", "broadcast", "up", "down", "xor")
    for row, name, expected in zip(got, names, want, strict=True):
        np.testing.assert_array_equal(row, expected.astype(np.uint32), f"{name} of bool")
    _same_as_reference(client, reference, got.reshape(-1), run)


def test_sync_plane_orders_shared_memory_within_a_plane(client, reference):
    units = min(_units(client), 1024)
    plane = client.properties().plane_dim
    n = CUBES * units
    x = np.arange(n, dtype=np.uint32) ** 2

    def run(c):
        return _run(c, conformance_sync_plane, [x], n, np.uint32, units=units)

    got = run(client)
    model = PlaneModel(CUBES, units, plane)
    lane, first = model.lane, model.first
    np.testing.assert_array_equal(got, x[first + (lane + 1) % plane] * np.uint32(3))
    _same_as_reference(client, reference, got, run)
