"""A handle is untyped device memory: NumPy refuses to convert one, with a message that says how
to read it, rather than wrapping the handle object in a 0-d object array."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.mark.parametrize("convert", [np.asarray, np.array], ids=["asarray", "array"])
def test_numpy_refuses_a_handle_and_says_how_to_read_it(client, convert):
    handle = client.create_from_slice(np.arange(4, dtype=np.float32))
    with pytest.raises(TypeError, match=r"client\.read_one\(handle\).*tensor\.numpy\(\)"):
        convert(handle)
    np.testing.assert_array_equal(
        np.frombuffer(client.read_one(handle), np.float32), np.arange(4, dtype=np.float32)
    )
