"""Dynamic counts on every local device, through the launch paths the conformance module does
not take: a prepared launch replays a dynamic count as the launch would (read when it runs,
refused beyond ``max_ruda_count``), and a validated launch with a dynamic count still reports."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, i32, kernel, u32
from ruda_core.runtime import (
    BoundsCheckMode,
    Feature,
    RudaCount,
    RudaDim,
    TooManyResources,
    ValidationError,
)
from ruda_core.testing.markers import requires
from ruda_core.testing.runner import TIMEOUT_S, read_array

pytestmark = requires(Feature.DYNAMIC_COUNT)


@kernel
def count_cubes(out: Array[u32], at: i32):
    if ABSOLUTE_POS == u32(0):
        out[at] = u32(1)
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] += u32(10)


def test_prepared_dynamic_count_is_read_and_refused_at_each_replay(client):
    counts = client.create_from_slice(np.array([3, 1, 1], dtype=np.uint32))
    out = client.create_from_slice(np.zeros(8, dtype=np.uint32))
    prepared = count_cubes.prepare(
        client, RudaCount.dynamic(counts.binding()), RudaDim(1), ArrayArg(out, 8), 7
    )
    prepared.launch()
    np.testing.assert_array_equal(read_array(client, out, np.uint32), [10, 10, 10, 0, 0, 0, 0, 1])
    limit = client.properties().max_ruda_count[0]
    client.write(counts, np.array([limit + 1, 1, 1], dtype=np.uint32))
    prepared.launch()
    with pytest.raises(TooManyResources, match=rf"RudaCount\({limit + 1}, 1, 1\)"):
        client.sync().result(timeout=TIMEOUT_S)
    client.write(out, np.zeros(8, dtype=np.uint32))
    client.write(counts, np.array([5, 1, 1], dtype=np.uint32))
    prepared.launch()
    np.testing.assert_array_equal(read_array(client, out, np.uint32), [10] * 5 + [0, 0, 1])


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
def test_validated_launch_with_a_dynamic_count_reports(client):
    counts = client.create_from_slice(np.array([2, 1, 1], dtype=np.uint32))
    out = client.create_from_slice(np.zeros(4, dtype=np.uint32))
    BoundsCheckMode.configure(BoundsCheckMode.VALIDATE)
    try:
        count_cubes.launch_unchecked(
            client, RudaCount.dynamic(counts.binding()), RudaDim(1), ArrayArg(out, 4), 9
        )
        with pytest.raises(ValidationError) as info:
            client.sync().result(timeout=TIMEOUT_S)
    finally:
        BoundsCheckMode.configure(None)
    assert (info.value.count, info.value.index, info.value.length) == (1, 9, 4)
    np.testing.assert_array_equal(read_array(client, out, np.uint32), [10, 10, 0, 0])
