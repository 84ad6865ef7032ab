"""The wrapping atomic counters ``atomic_inc_wrap``/``atomic_dec_wrap`` (CUDA's ``atomicInc``/
``atomicDec`` on ``u32``) under contention, on global and shared memory, against the NumPy
reference device. With one limit per counter the old values every unit receives form the same
multiset in any order of application, and so does the counter's final value."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
    Array,
    ArrayArg,
    SharedMemory,
    atomic_dec_wrap,
    atomic_inc_wrap,
    kernel,
    sync_units,
    u32,
)
from ruda_core.runtime import RudaCount, RudaDim
from ruda_core.testing.runner import read_array

BLOCK = 64
U32_MAX = 2**32 - 1


@kernel
def conformance_wrap_counters(counters: Array[u32], olds: Array[u32], limit: u32):
    i = ABSOLUTE_POS
    n = olds.len() // u32(2)
    if i < n:
        olds[i] = atomic_inc_wrap(counters, 0, limit)
        olds[n + i] = atomic_dec_wrap(counters, 1, limit)
        atomic_inc_wrap(counters, 2, limit)  # as a statement: the old value is dropped
        atomic_dec_wrap(counters, counters.len(), limit)  # out of bounds: dropped


@kernel
def conformance_shared_wrap_counters(start: Array[u32], out: Array[u32], limit: u32):
    counters = SharedMemory(u32, 2)
    if UNIT_POS < u32(2):
        counters[UNIT_POS] = start[UNIT_POS]
    sync_units()
    i = ABSOLUTE_POS
    up = atomic_inc_wrap(counters, 0, limit)
    down = atomic_dec_wrap(counters, 1, limit)
    sync_units()
    out[u32(2) * i] = up
    out[u32(2) * i + u32(1)] = down
    if UNIT_POS < u32(2):
        out[out.len() - u32(2) + UNIT_POS] = counters[UNIT_POS]  # equal in every cube


def _model(start: int, limit: int, n: int, up: bool) -> tuple[np.ndarray, int]:
    """The old values of ``n`` updates from ``start`` in one order, and the final value."""
    seq = [start]
    for _ in range(n):
        v = seq[-1]
        if up:
            seq.append(0 if v >= limit else v + 1)
        else:
            seq.append(limit if v == 0 or v > limit else v - 1)
    return np.array(seq[:-1], dtype=np.uint32), seq[-1]


CASES = {  # (start value, limit)
    "small-limit": (0, 6),
    "start-above-limit": (1000, 9),
    "limit-0": (0, 0),
    "limit-max": (U32_MAX - 40, U32_MAX),
    "start-at-limit": (77, 77),
}


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
@pytest.mark.parametrize("case", list(CASES))
def test_global_wrap_counters_under_contention(client, reference, case):
    start, limit = CASES[case]
    n = 50 * BLOCK - 5

    def run(c):
        counters = c.create_from_slice(np.full(3, start, np.uint32))
        olds = c.empty(8 * n)
        conformance_wrap_counters.launch(
            c,
            RudaCount(-(-n // BLOCK)),
            RudaDim(BLOCK),
            ArrayArg(counters, 3),
            ArrayArg(olds, 2 * n),
            limit,
        )
        return read_array(c, counters, np.uint32), read_array(c, olds, np.uint32)

    (counters, olds), (want_counters, want_olds) = run(client), run(reference)
    np.testing.assert_array_equal(counters, want_counters, "final counters")
    inc_olds, inc_final = _model(start, limit, n, up=True)
    dec_olds, dec_final = _model(start, limit, n, up=False)
    np.testing.assert_array_equal(counters, [inc_final, dec_final, inc_final])
    for k, (name, model) in enumerate((("inc", inc_olds), ("dec", dec_olds))):
        got = np.sort(olds[k * n : (k + 1) * n])
        np.testing.assert_array_equal(got, np.sort(want_olds[k * n : (k + 1) * n]), name)
        np.testing.assert_array_equal(got, np.sort(model), f"atomic_{name}_wrap old values")


@pytest.mark.parametrize("case", ["small-limit", "start-above-limit", "limit-max"])
def test_shared_wrap_counters_under_contention(client, reference, case):
    start, limit = CASES[case]
    cubes = 3

    def run(c):
        out = c.empty(4 * (2 * cubes * BLOCK + 2))
        conformance_shared_wrap_counters.launch(
            c,
            RudaCount(cubes),
            RudaDim(BLOCK),
            ArrayArg(c.create_from_slice(np.array([start, start], np.uint32)), 2),
            ArrayArg(out, 2 * cubes * BLOCK + 2),
            limit,
        )
        return read_array(c, out, np.uint32)

    got, want = run(client), run(reference)
    olds = got[:-2].reshape(cubes, BLOCK, 2)
    expected = want[:-2].reshape(cubes, BLOCK, 2)
    np.testing.assert_array_equal(np.sort(olds, axis=1), np.sort(expected, axis=1))
    inc_olds, inc_final = _model(start, limit, BLOCK, up=True)
    dec_olds, dec_final = _model(start, limit, BLOCK, up=False)
    for cube in range(cubes):
        np.testing.assert_array_equal(np.sort(olds[cube, :, 0]), np.sort(inc_olds))
        np.testing.assert_array_equal(np.sort(olds[cube, :, 1]), np.sort(dec_olds))
    np.testing.assert_array_equal(got[-2:], [inc_final, dec_final])
