"""Plane (warp / subgroup) operations over the ``PLANE_DIM`` consecutive units of a plane:
reductions, scans, votes, broadcast and shuffle, against the same computation on the host."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.lang import (
    PLANE_DIM,
    UNIT_POS,
    UNIT_POS_PLANE,
    Array,
    ArrayArg,
    Numeric,
    kernel,
    plane_all,
    plane_any,
    plane_broadcast,
    plane_exclusive_sum,
    plane_inclusive_sum,
    plane_max,
    plane_min,
    plane_prod,
    plane_shuffle,
    plane_sum,
    u32,
)
from ruda_core.runtime import Feature, RudaCount, RudaDim
from ruda_core.testing.markers import need, requires
from ruda_core.testing.runner import read_array

OPS = ["sum", "prod", "min", "max", "inclusive", "exclusive", "broadcast"]


@kernel
def conformance_plane_ops(x: Array[Numeric], out: Array[Numeric], geometry: Array[u32]):
    i = UNIT_POS
    v = x[i]
    n = x.len()
    out[i] = plane_sum(v)
    out[n + i] = plane_prod(v)
    out[u32(2) * n + i] = plane_min(v)
    out[u32(3) * n + i] = plane_max(v)
    out[u32(4) * n + i] = plane_inclusive_sum(v)
    out[u32(5) * n + i] = plane_exclusive_sum(v)
    out[u32(6) * n + i] = plane_broadcast(v, u32(1) % PLANE_DIM)  # a lane every plane has
    geometry[u32(2) * i] = PLANE_DIM
    geometry[u32(2) * i + u32(1)] = UNIT_POS_PLANE


@kernel
def conformance_plane_votes(x: Array[u32], out: Array[u32]):
    i = UNIT_POS
    out[i] = u32(plane_all(x[i] > u32(0))) + u32(2) * u32(plane_any(x[i] > u32(5)))


@kernel
def conformance_plane_shuffle(x: Array[u32], out: Array[u32]):
    i = UNIT_POS
    out[i] = plane_shuffle(x[i], (UNIT_POS_PLANE + u32(3)) % PLANE_DIM)


@kernel
def conformance_plane_rows(x: Array[u32], out: Array[u32]):
    i = UNIT_POS
    out[i] = plane_sum(x[i])
    out[x.len() + i] = UNIT_POS_PLANE


def _units(client) -> int:
    props = client.properties()
    return min(2 * props.plane_dim, props.max_units_per_ruda)


def _planes(values: np.ndarray, plane: int) -> np.ndarray:
    return values.reshape(-1, plane)


@requires(Feature.PLANE)
@pytest.mark.parametrize("elem", [Elem.I32, Elem.U32, Elem.F32, Elem.I64, Elem.F64], ids=str)
def test_plane_reductions_and_scans(client, elem):
    need(client, elem)
    units = _units(client)
    rng = np.random.default_rng(6)
    x = rng.integers(1, 4, units).astype(elem.numpy)  # small: products stay exact
    if elem.is_float:
        x = np.where(rng.random(units) < 0.5, x, -x).astype(elem.numpy)
    out = client.empty(7 * x.nbytes)
    geometry = client.empty(8 * units)
    conformance_plane_ops.launch(
        client,
        RudaCount(1),
        RudaDim(units),
        ArrayArg(client.create_from_slice(x), units, elem=elem),
        ArrayArg(out, 7 * units, elem=elem),
        ArrayArg(geometry, 2 * units),
    )
    geo = read_array(client, geometry, np.uint32).reshape(units, 2)
    plane = int(geo[0, 0])
    assert plane >= 1 and (geo[:, 0] == plane).all(), (
        f"PLANE_DIM differs between units: {geo[:, 0]}"
    )
    np.testing.assert_array_equal(geo[:, 1], np.arange(units) % plane, "UNIT_POS_PLANE")
    got = read_array(client, out, elem.numpy).reshape(7, units)
    p = _planes(x, plane)
    with np.errstate(over="ignore"):
        expected = {
            "sum": np.repeat(p.sum(axis=1, dtype=elem.numpy), plane),
            "prod": np.repeat(p.prod(axis=1, dtype=elem.numpy), plane),
            "min": np.repeat(p.min(axis=1), plane),
            "max": np.repeat(p.max(axis=1), plane),
            "inclusive": np.cumsum(p, axis=1, dtype=elem.numpy).reshape(-1),
            "exclusive": (np.cumsum(p, axis=1, dtype=elem.numpy) - p).reshape(-1),
            "broadcast": np.repeat(p[:, 1 % plane], plane),
        }
    for k, op in enumerate(OPS):
        np.testing.assert_array_equal(got[k], expected[op], f"plane {op} (plane_dim {plane})")


@requires(Feature.PLANE)
def test_plane_votes(client):
    units = _units(client)
    plane = client.properties().plane_dim
    x = np.zeros(units, dtype=np.uint32)
    x[: min(plane, units)] = 1  # first plane: all > 0, none > 5
    if units > plane:
        x[min(plane + 1, units - 1)] = 9  # second plane: one > 5 (and not all > 0 if wider)
    out = client.empty(x.nbytes)
    conformance_plane_votes.launch(
        client,
        RudaCount(1),
        RudaDim(units),
        ArrayArg(client.create_from_slice(x), units),
        ArrayArg(out, units),
    )
    p = _planes(x, min(plane, units))
    expected = np.repeat((p > 0).all(axis=1) + 2 * (p > 5).any(axis=1), min(plane, units))
    np.testing.assert_array_equal(read_array(client, out, np.uint32), expected)


@requires(Feature.PLANE, Feature.PLANE_SHUFFLE)
def test_plane_shuffle(client):
    units = _units(client)
    plane = client.properties().plane_dim
    x = np.arange(100, 100 + units, dtype=np.uint32)
    out = client.empty(x.nbytes)
    conformance_plane_shuffle.launch(
        client,
        RudaCount(1),
        RudaDim(units),
        ArrayArg(client.create_from_slice(x), units),
        ArrayArg(out, units),
    )
    lane = np.arange(units) % plane
    expected = x[np.arange(units) - lane + (lane + 3) % plane]
    np.testing.assert_array_equal(read_array(client, out, np.uint32), expected)


@requires(Feature.PLANE)
def test_planes_of_a_cube_of_several_rows_are_consecutive_units(client):
    plane = client.properties().plane_dim
    rows = max(1, min(3, client.properties().max_units_per_ruda // plane))
    units = plane * rows
    x = np.arange(units, dtype=np.uint32) ** 2
    out = client.empty(2 * x.nbytes)
    conformance_plane_rows.launch(
        client,
        RudaCount(1),
        RudaDim(plane, rows),
        ArrayArg(client.create_from_slice(x), units),
        ArrayArg(out, 2 * units),
    )
    got = read_array(client, out, np.uint32).reshape(2, units)
    np.testing.assert_array_equal(got[0], np.repeat(_planes(x, plane).sum(axis=1), plane))
    np.testing.assert_array_equal(got[1], np.arange(units) % plane, "UNIT_POS_PLANE")
