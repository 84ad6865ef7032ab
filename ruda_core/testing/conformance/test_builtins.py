"""Launch geometry: 1-D, 2-D and 3-D launches and the value of every position builtin in every
unit; every unit runs exactly once; dynamic ``RudaCount`` read from device memory."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ruda_core.lang import (
    ABSOLUTE_POS,
    ABSOLUTE_POS_X,
    ABSOLUTE_POS_Y,
    ABSOLUTE_POS_Z,
    PLANE_DIM,
    RUDA_COUNT,
    RUDA_COUNT_X,
    RUDA_COUNT_Y,
    RUDA_COUNT_Z,
    RUDA_DIM,
    RUDA_DIM_X,
    RUDA_DIM_Y,
    RUDA_DIM_Z,
    RUDA_POS,
    RUDA_POS_X,
    RUDA_POS_Y,
    RUDA_POS_Z,
    UNIT_POS,
    UNIT_POS_PLANE,
    UNIT_POS_X,
    UNIT_POS_Y,
    UNIT_POS_Z,
    Array,
    ArrayArg,
    atomic_add,
    kernel,
    u32,
)
from ruda_core.runtime import Feature, RudaCount, RudaDim
from ruda_core.testing.markers import requires
from ruda_core.testing.runner import TIMEOUT_S, read_array

NAMES = [
    "ABSOLUTE_POS",
    "ABSOLUTE_POS_X",
    "ABSOLUTE_POS_Y",
    "ABSOLUTE_POS_Z",
    "UNIT_POS",
    "UNIT_POS_X",
    "UNIT_POS_Y",
    "UNIT_POS_Z",
    "RUDA_POS",
    "RUDA_POS_X",
    "RUDA_POS_Y",
    "RUDA_POS_Z",
    "RUDA_DIM",
    "RUDA_DIM_X",
    "RUDA_DIM_Y",
    "RUDA_DIM_Z",
    "RUDA_COUNT",
    "RUDA_COUNT_X",
    "RUDA_COUNT_Y",
    "RUDA_COUNT_Z",
    "PLANE_DIM",
    "UNIT_POS_PLANE",
]
W = len(NAMES)
GEOMETRIES = [
    ((3, 1, 1), (8, 1, 1)),
    ((2, 3, 1), (4, 2, 1)),
    ((2, 2, 3), (2, 3, 4)),
    ((1, 1, 1), (1, 1, 1)),
]


@kernel
def conformance_builtins(out: Array[u32]):
    b = ABSOLUTE_POS * u32(22)
    out[b] = ABSOLUTE_POS
    out[b + u32(1)] = ABSOLUTE_POS_X
    out[b + u32(2)] = ABSOLUTE_POS_Y
    out[b + u32(3)] = ABSOLUTE_POS_Z
    out[b + u32(4)] = UNIT_POS
    out[b + u32(5)] = UNIT_POS_X
    out[b + u32(6)] = UNIT_POS_Y
    out[b + u32(7)] = UNIT_POS_Z
    out[b + u32(8)] = RUDA_POS
    out[b + u32(9)] = RUDA_POS_X
    out[b + u32(10)] = RUDA_POS_Y
    out[b + u32(11)] = RUDA_POS_Z
    out[b + u32(12)] = RUDA_DIM
    out[b + u32(13)] = RUDA_DIM_X
    out[b + u32(14)] = RUDA_DIM_Y
    out[b + u32(15)] = RUDA_DIM_Z
    out[b + u32(16)] = RUDA_COUNT
    out[b + u32(17)] = RUDA_COUNT_X
    out[b + u32(18)] = RUDA_COUNT_Y
    out[b + u32(19)] = RUDA_COUNT_Z
    out[b + u32(20)] = PLANE_DIM
    out[b + u32(21)] = UNIT_POS_PLANE


@kernel
def conformance_hits(hits: Array[u32]):
    atomic_add(hits, ABSOLUTE_POS, u32(1))


@kernel
def conformance_write_count(counts: Array[u32], x: u32, y: u32, z: u32):
    if ABSOLUTE_POS == u32(0):
        counts[0] = x
        counts[1] = y
        counts[2] = z


@kernel
def conformance_record_count(out: Array[u32]):
    atomic_add(out, 0, u32(1))
    out[1] = RUDA_COUNT_X
    out[2] = RUDA_COUNT_Y
    out[3] = RUDA_COUNT_Z


def _expected(count: tuple[int, int, int], dim: tuple[int, int, int], plane: int) -> np.ndarray:
    total = [c * d for c, d in zip(count, dim, strict=True)]
    rows = np.zeros((total[0] * total[1] * total[2], W), dtype=np.int64)
    for cz, cy, cx, uz, uy, ux in itertools.product(
        *(range(n) for n in (*count[::-1], *dim[::-1]))
    ):
        ax, ay, az = cx * dim[0] + ux, cy * dim[1] + uy, cz * dim[2] + uz
        absolute = az * total[0] * total[1] + ay * total[0] + ax
        unit = uz * dim[0] * dim[1] + uy * dim[0] + ux
        cube = cz * count[0] * count[1] + cy * count[0] + cx
        rows[absolute] = [
            absolute,
            ax,
            ay,
            az,
            unit,
            ux,
            uy,
            uz,
            cube,
            cx,
            cy,
            cz,
            dim[0] * dim[1] * dim[2],
            *dim,
            count[0] * count[1] * count[2],
            *count,
            plane,
            unit % plane,
        ]
    return rows


@pytest.mark.parametrize(("count", "dim"), GEOMETRIES, ids=lambda g: "x".join(map(str, g)))
def test_every_builtin_in_every_unit(client, count, dim):
    units = int(np.prod(count) * np.prod(dim))
    out = client.create_from_slice(np.full(units * W, 0xFFFFFFFF, dtype=np.uint32))
    conformance_builtins.launch(client, RudaCount(*count), RudaDim(*dim), ArrayArg(out, units * W))
    got = read_array(client, out, np.uint32).reshape(units, W).astype(np.int64)
    plane = client.properties().plane_dim  # what PLANE_DIM reads in every kernel
    expected = _expected(count, dim, plane)
    for k, name in enumerate(NAMES):
        bad = np.nonzero(got[:, k] != expected[:, k])[0]
        assert not len(bad), (
            f"{name} wrong in {len(bad)} units; unit at ABSOLUTE_POS {bad[0]} has "
            f"{got[bad[0], k]}, want {expected[bad[0], k]}"
        )


def test_every_unit_runs_exactly_once(client):
    block = min(256, client.properties().max_units_per_ruda)
    cubes = 777
    n = block * cubes
    hits = client.create_from_slice(np.zeros(n, dtype=np.uint32))
    conformance_hits.launch(client, RudaCount(cubes), RudaDim(block), ArrayArg(hits, n))
    got = read_array(client, hits, np.uint32)
    assert (got == 1).all(), f"{int((got != 1).sum())} of {n} units ran {set(got.tolist())} times"


@requires(Feature.DYNAMIC_COUNT)
@pytest.mark.parametrize("count", [(3, 2, 1), (1, 1, 4), (2, 0, 1)], ids=str)
def test_dynamic_count_is_read_from_device_memory(client, count):
    counts = client.create_from_slice(np.array([9, 9, 9], dtype=np.uint32))
    conformance_write_count.launch(client, RudaCount(1), RudaDim(1), ArrayArg(counts, 3), *count)
    out = client.create_from_slice(np.zeros(4, dtype=np.uint32))
    conformance_record_count.launch(
        client, RudaCount.dynamic(counts.binding()), RudaDim(4), ArrayArg(out, 4)
    )
    got = read_array(client, out, np.uint32)
    cubes = count[0] * count[1] * count[2]
    if cubes == 0:
        np.testing.assert_array_equal(got, [0, 0, 0, 0])  # a zero axis launches nothing
    else:
        np.testing.assert_array_equal(got, [cubes * 4, *count])
    client.sync().result(timeout=TIMEOUT_S)


@kernel
def conformance_shifted_sizes(out: Array[u32]):
    if ABSOLUTE_POS == u32(0):
        out[0] = RUDA_DIM << u32(31)
        out[1] = RUDA_DIM_X << u32(30)
        out[2] = PLANE_DIM << u32(29)
        out[3] = (RUDA_DIM * u32(0x9E3779B9)) >> u32(7)


def test_sizes_shifted_past_their_width_wrap(client):
    """The cube's size and the plane width are values like any other: a shift that moves bits
    out of them wraps, also where a shader compiler knows them while it builds the kernel."""
    plane = client.properties().plane_dim
    out = client.create_from_slice(np.zeros(4, dtype=np.uint32))
    conformance_shifted_sizes.launch(client, RudaCount(1), RudaDim(16, 3), ArrayArg(out, 4))
    words = [48 << 31, 16 << 30, plane << 29, (48 * 0x9E3779B9) % 2**32 >> 7]
    want = np.array([w % 2**32 for w in words], dtype=np.uint32)
    np.testing.assert_array_equal(read_array(client, out, np.uint32), want)
