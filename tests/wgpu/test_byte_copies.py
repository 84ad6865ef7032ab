"""Writes and copies that do not start and end on 4-byte words, on WebGPU, whose own copies and
writes move whole words: a byte copy of more words than one dispatch holds along an axis lands
exactly, without touching the bytes beside it."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("wgpu")

#: Bytes past 65 535 workgroups of 64 words along one axis.
LARGE = (17 << 20) + 5


def test_a_write_and_a_copy_off_words_past_one_dispatch_axis_land_exactly(client):
    data = np.random.default_rng(7).integers(0, 256, LARGE + 8, dtype=np.uint8)
    source = client.create_from_slice(data)
    target = client.create_from_slice(np.zeros(LARGE + 8, np.uint8))
    expected = np.zeros(LARGE + 8, np.uint8)
    client.copy(source.offset(3, 3 + LARGE), target.offset(2, 2 + LARGE))
    expected[2 : 2 + LARGE] = data[3 : 3 + LARGE]
    np.testing.assert_array_equal(np.frombuffer(client.read_one(target), np.uint8), expected)
    client.write(target.offset(1, 1 + LARGE), data[5 : 5 + LARGE])
    expected[1 : 1 + LARGE] = data[5 : 5 + LARGE]
    np.testing.assert_array_equal(np.frombuffer(client.read_one(target), np.uint8), expected)
