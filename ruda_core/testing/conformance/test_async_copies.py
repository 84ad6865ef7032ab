"""Asynchronous copies: ``pipeline.copy_async(dst, i, src, j, N)`` puts line ``j`` of a global
array into line ``i`` of shared memory by the ``pipeline.wait`` that completes its group, for
lines of 4, 8 and 16 bytes; a ring of stages kept ``STAGES - 1`` groups ahead (copies of later
stages in flight while the cube reads an earlier one) gives the reference device's result
exactly; under ``launch``'s checks a source line past the array's end copies zeros and a
destination line past the shared array's end is dropped."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.lang import (
    RUDA_POS,
    UNIT_POS,
    Array,
    ArrayArg,
    Comptime,
    Numeric,
    SharedMemory,
    kernel,
    pipeline,
    sync_units,
    u32,
    unroll,
)
from ruda_core.runtime import RudaCount, RudaDim
from ruda_core.testing.markers import need
from ruda_core.testing.runner import read_array

UNITS = 32
SENTINEL = 7


@kernel
def conformance_copy_ring(
    x: Array[Numeric],
    y: Array[Numeric],
    rounds: u32,
    N: Comptime[int],
    STAGES: Comptime[int],
):
    """Round ``r`` of a cube: each unit copies line ``r * UNITS + UNIT_POS`` of the cube's part
    of ``x`` into its slot of stage ``r % STAGES``; once it is in, every unit reads the slot of
    the mirrored unit and writes it, element by element reversed, to ``y``. The copies of rounds
    ``r + 1 .. r + STAGES - 1`` are in flight meanwhile."""
    s = SharedMemory(Numeric, STAGES * UNITS * N)
    first = RUDA_POS * rounds * u32(UNITS)  # the cube's first line
    for p in unroll(range(STAGES - 1)):  # the first STAGES - 1 rounds, one group each
        if u32(p) < rounds:
            at = u32(p * UNITS) + UNIT_POS
            pipeline.copy_async(s, at, x, first + at, N)
        pipeline.commit()
    r = u32(0)
    while r < rounds:
        pipeline.wait(STAGES - 2)  # round r's group is in
        sync_units()
        nxt = r + u32(STAGES - 1)
        if nxt < rounds:  # its stage was read in round r - 1, before the barrier above
            at = nxt * u32(UNITS) + UNIT_POS
            pipeline.copy_async(s, (nxt % u32(STAGES)) * u32(UNITS) + UNIT_POS, x, first + at, N)
        pipeline.commit()
        slot = ((r % u32(STAGES)) * u32(UNITS) + u32(UNITS - 1) - UNIT_POS) * u32(N)
        out = (first + r * u32(UNITS) + UNIT_POS) * u32(N)
        for q in unroll(range(N)):
            y[out + u32(q)] = s[slot + u32(N - 1 - q)]
        r += u32(1)
    pipeline.wait(0)


@kernel
def conformance_copy_edges(x: Array[u32], y: Array[u32], N: Comptime[int]):
    """Units ``u < 8`` copy line ``u`` of ``x`` into line ``u`` of a shared array of 6 lines
    (prefilled with ``SENTINEL``), then the shared array goes to ``y``."""
    s = SharedMemory(u32, 6 * N)
    if UNIT_POS < u32(6 * N):
        s[UNIT_POS] = u32(SENTINEL)
    sync_units()
    if UNIT_POS < u32(8):
        pipeline.copy_async(s, UNIT_POS, x, UNIT_POS, N)
    pipeline.commit()
    pipeline.wait(0)
    sync_units()
    if UNIT_POS < u32(6 * N):
        y[UNIT_POS] = s[UNIT_POS]


CASES = [(Elem.F16, 2), (Elem.F16, 4), (Elem.F16, 8), (Elem.BF16, 8), (Elem.F32, 4)]
CASES += [(Elem.U32, 2), (Elem.I32, 4), (Elem.F64, 2)]


def _ring(device, elem: Elem, width: int, stages: int, x: np.ndarray, cubes: int) -> np.ndarray:
    rounds = x.size // (cubes * UNITS * width)
    xh, yh = device.create_from_slice(x), device.empty(x.nbytes)
    conformance_copy_ring.launch_unchecked(
        device,
        RudaCount(cubes),
        RudaDim(UNITS),
        ArrayArg(xh, x.size, elem=elem),
        ArrayArg(yh, x.size, elem=elem),
        rounds,
        N=width,
        STAGES=stages,
    )
    return read_array(device, yh, elem.numpy)


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize(("elem", "width"), CASES, ids=lambda c: str(c))
def test_a_ring_of_stages_kept_ahead_matches_the_reference(client, reference, elem, width, stages):
    need(client, elem, reference=reference)
    cubes, rounds = 3, 5
    n = cubes * rounds * UNITS * width
    x = (np.arange(n) % 251).astype(elem.numpy)
    got = _ring(client, elem, width, stages, x, cubes)
    np.testing.assert_array_equal(got, _ring(reference, elem, width, stages, x, cubes))
    lines = x.reshape(cubes, rounds, UNITS, width)
    want = lines[:, :, ::-1, ::-1]  # the mirrored unit's line, reversed
    np.testing.assert_array_equal(got, want.ravel())


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
@pytest.mark.parametrize("width", [2, 4])
def test_checked_copies_past_either_end_copy_zeros_or_are_dropped(client, reference, width):
    """Units 0..7 copy lines 0..7 of an ``x`` of 4.5 lines into a shared array of 6: lines 4 (the
    partial one) and 5 of ``x`` read as zeros, lines 6 and 7 fall past the shared array."""
    n = 4 * width + width // 2
    x = np.arange(1, n + 1, dtype=np.uint32)

    def run(device):
        xh = device.create_from_slice(x)
        yh = device.create_from_slice(np.full(6 * width, SENTINEL, np.uint32))
        conformance_copy_edges.launch(
            device, RudaCount(1), RudaDim(32), ArrayArg(xh, n), ArrayArg(yh, 6 * width), N=width
        )
        return read_array(device, yh, np.uint32)

    got = run(client)
    want = np.zeros(6 * width, np.uint32)
    want[: 4 * width] = x[: 4 * width]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, run(reference))
