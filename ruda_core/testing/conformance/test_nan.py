"""NaN in float ``min``, ``max``, ``clamp``, ``atomic_min`` and ``atomic_max``: every backend
ignores a NaN operand when the other is a number (IEEE 754 minNum/maxNum, C's ``fmin``/``fmax``)
and gives NaN only when both are NaN; ``clamp(x, lo, hi)`` is ``min(max(x, lo), hi)`` by that
rule; an atomic with a NaN value leaves the element as it was."""

from __future__ import annotations

import numpy as np

from ruda_core.lang import (
    ABSOLUTE_POS,
    Array,
    ArrayArg,
    atomic_max,
    atomic_min,
    clamp,
    f32,
    kernel,
    u32,
)
from ruda_core.runtime import RudaCount, RudaDim
from ruda_core.testing.runner import read_array

NAN = np.float32("nan")
X = np.array([NAN, 1, 3, NAN, NAN, NAN, -1, 5], np.float32)
Y = np.array([1, NAN, NAN, 2, NAN, 0, 0, NAN], np.float32)


@kernel
def conformance_nan(
    x: Array[f32],
    y: Array[f32],
    low: Array[f32],
    high: Array[f32],
    clamped: Array[f32],
    least: Array[f32],
    most: Array[f32],
):
    i = ABSOLUTE_POS
    if i < x.len():
        low[i] = min(x[i], y[i])
        high[i] = max(x[i], y[i])
        clamped[i] = clamp(x[i], y[i], f32(2))
        atomic_min(least, i // u32(2), x[i])
        atomic_max(most, i // u32(2), x[i])


def test_a_nan_operand_is_ignored_by_min_max_clamp_and_their_atomics(client):
    n = len(X)
    handles = [client.create_from_slice(a) for a in (X, Y)]
    handles += [client.empty(4 * n) for _ in range(3)]
    handles += [client.create_from_slice(np.full(n // 2, v, np.float32)) for v in (10, -10)]
    lengths = [n] * 5 + [n // 2] * 2
    args = [ArrayArg(h, length) for h, length in zip(handles, lengths, strict=True)]
    conformance_nan.launch(client, RudaCount(1), RudaDim(n), *args)
    low, high, clamped, least, most = (read_array(client, h, np.float32) for h in handles[2:])
    np.testing.assert_array_equal(low, np.fmin(X, Y))
    np.testing.assert_array_equal(high, np.fmax(X, Y))
    np.testing.assert_array_equal(clamped, np.fmin(np.fmax(X, Y), 2))
    np.testing.assert_array_equal(least, [1, 3, 10, -1])
    np.testing.assert_array_equal(most, [1, 3, -10, 5])
