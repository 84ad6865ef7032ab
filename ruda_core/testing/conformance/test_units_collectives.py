"""Collectives of a whole cube (``units_sum/min/max``, ``units_inclusive_sum``,
``units_exclusive_sum``) on every device: cube sizes that are whole planes or not (1 and 7 to
1024, and 4160 where the device allows), several cubes per launch, a cube of several rows, and
each element type, exact against NumPy (float values are small integers, so their sums are
exact in any order)."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.errors import SanitizerError, TooManyResources
from ruda_core.ir import Elem
from ruda_core.lang import (
    RUDA_DIM,
    RUDA_POS,
    UNIT_POS,
    Array,
    ArrayArg,
    Numeric,
    f32,
    kernel,
    u32,
    units_exclusive_sum,
    units_inclusive_sum,
    units_max,
    units_min,
    units_sum,
)
from ruda_core.runtime import Feature, RudaCount, RudaDim
from ruda_core.testing.markers import need, requires
from ruda_core.testing.runner import read_array

#: Cube shapes: one unit, sizes that are not a multiple of any plane width above 1, whole planes
#: of 32 lanes, one group of planes of one lane (``SLOTS``) and one more, the largest cubes of
#: most devices, more groups of planes of one lane than one round folds (4160 units: 65 groups
#: of 64), and rows of a cube of two axes (``UNIT_POS`` order across them; each row whole planes,
#: as OpenCL drivers may form subgroups within a row).
SHAPES = [
    (1, 1, 1),
    (7, 1, 1),
    (32, 1, 1),
    (33, 1, 1),
    (64, 1, 1),
    (65, 1, 1),
    (100, 1, 1),
    (256, 1, 1),
    (1024, 1, 1),
    (4160, 1, 1),
    (32, 3, 1),
]
CUBES = 3
ELEMS = [Elem.I32, Elem.U32, Elem.I64, Elem.F32, Elem.F64]
RESULTS = ["sum", "min", "max", "inclusive", "exclusive"]


#: The collectives come in two kernels: Intel's CPU OpenCL compiler corrupts its heap now and
#: then building all five in one (``docs/conformance-results.md``), and aborts the process.
@kernel
def conformance_units_reductions(x: Array[Numeric], out: Array[Numeric]):
    i = RUDA_POS * RUDA_DIM + UNIT_POS
    n = x.len()
    v = x[i]
    out[i] = units_sum(v)
    out[n + i] = units_min(v)
    out[u32(2) * n + i] = units_max(v)


@kernel
def conformance_units_scans(x: Array[Numeric], out: Array[Numeric]):
    i = RUDA_POS * RUDA_DIM + UNIT_POS
    n = x.len()
    v = x[i]
    out[u32(3) * n + i] = units_inclusive_sum(v)
    out[u32(4) * n + i] = units_exclusive_sum(v)


@kernel
def conformance_units_sum_f32(x: Array[f32], out: Array[f32]):
    i = RUDA_POS * RUDA_DIM + UNIT_POS
    out[i] = units_sum(x[i])


@kernel
def units_sum_in_a_branch(x: Array[u32], out: Array[u32]):
    i = RUDA_POS * RUDA_DIM + UNIT_POS
    if UNIT_POS < RUDA_DIM // u32(2):
        out[i] = units_sum(x[i])  # half the cube never reaches the collective's barriers


def _values(elem: Elem, count: int, rng: np.random.Generator) -> np.ndarray:
    if elem is Elem.U32:
        return rng.integers(0, 2**32, count, dtype=np.uint64).astype(np.uint32)  # sums wrap
    if elem.is_signed and not elem.is_float:
        return rng.integers(-1000, 1000, count).astype(elem.numpy)
    return rng.integers(-8, 9, count).astype(elem.numpy)


def _launch(kernel, client, dim, *args):
    """Launch ``CUBES`` cubes of ``dim``; a kernel that the device runs with fewer units per cube
    than its general limit (NVIDIA's OpenCL holds some to 256 by their registers) skips, since
    the refusal comes before anything runs."""
    try:
        kernel.launch(client, RudaCount(CUBES), dim, *args)
    except TooManyResources as exc:
        pytest.skip(f"unsupported: {exc}")


@requires(Feature.PLANE)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("elem", ELEMS, ids=str)
def test_units_collectives_match_numpy(client, elem, shape):
    need(client, elem)
    units = int(np.prod(shape))
    if units > client.properties().max_units_per_ruda:
        pytest.skip(f"{client.device} holds at most {client.properties().max_units_per_ruda} units")
    plane = client.properties().plane_dim
    if units % plane and not client.features().has(Feature.PARTIAL_PLANE):
        pytest.skip(  # refused before anything runs: test_plane_partial.py shows it
            f"unsupported: {client.device} runs no partial plane ({units} units, planes of {plane})"
        )
    n = CUBES * units
    x = _values(elem, n, np.random.default_rng(units))
    out = client.empty(len(RESULTS) * x.nbytes)
    args = (
        ArrayArg(client.create_from_slice(x), n, elem=elem),
        ArrayArg(out, len(RESULTS) * n, elem=elem),
    )
    for collectives in (conformance_units_reductions, conformance_units_scans):
        _launch(collectives, client, RudaDim(*shape), *args)
    got = read_array(client, out, elem.numpy).reshape(len(RESULTS), CUBES, units)
    cubes = x.reshape(CUBES, units)
    with np.errstate(over="ignore"):
        inclusive = np.cumsum(cubes, axis=1, dtype=elem.numpy)
        expected = {
            "sum": np.repeat(cubes.sum(axis=1, dtype=elem.numpy)[:, None], units, axis=1),
            "min": np.repeat(cubes.min(axis=1)[:, None], units, axis=1),
            "max": np.repeat(cubes.max(axis=1)[:, None], units, axis=1),
            "inclusive": inclusive,
            "exclusive": inclusive - cubes,
        }
    for k, name in enumerate(RESULTS):
        np.testing.assert_array_equal(got[k], expected[name], f"units {name}, cube {shape}")


@requires(Feature.PLANE)
def test_float_sum_stays_within_its_bound(client):
    units = min(1024, client.properties().max_units_per_ruda)
    plane = client.properties().plane_dim
    n = CUBES * units
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    out = client.empty(x.nbytes)
    _launch(
        conformance_units_sum_f32,
        client,
        RudaDim(units),
        ArrayArg(client.create_from_slice(x), n),
        ArrayArg(out, n),
    )
    got = read_array(client, out, np.float32).reshape(CUBES, units)
    cubes = x.reshape(CUBES, units).astype(np.float64)
    steps = np.log2(plane) + -(-units // plane)
    bound = steps * np.finfo(np.float32).eps * np.abs(cubes).sum(axis=1)
    error = np.abs(got - cubes.sum(axis=1)[:, None])
    assert (error <= bound[:, None]).all(), f"error {error.max()} above the bound {bound.max()}"


@requires(Feature.SANITIZE)
def test_sanitizer_reports_a_collective_not_reached_by_every_unit(client, monkeypatch):
    monkeypatch.setenv("RUDA_SANITIZE", "1")
    n = CUBES * 64
    x = client.create_from_slice(np.ones(n, dtype=np.uint32))
    out = client.empty(4 * n)
    with pytest.raises(SanitizerError) as caught:
        units_sum_in_a_branch.launch(
            client, RudaCount(CUBES), RudaDim(64), ArrayArg(x, n), ArrayArg(out, n)
        )
        read_array(client, out, np.uint32)  # the report comes with the launch's results
    assert "divergent barrier" in caught.value.kinds
