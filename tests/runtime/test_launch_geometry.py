"""``launch_geometry``: the ints and tuples a launch takes become the same ``RudaCount`` and
``RudaDim`` objects each time, which is what lets a launcher recognise a geometry it has
already admitted."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.errors import LaunchConfigError
from ruda_core.runtime.dims import RudaCount, RudaDim, launch_geometry


def test_the_same_int_or_tuple_gives_the_same_objects():
    count, dim = launch_geometry(4, (8, 2))
    assert (count, dim) == (RudaCount(4), RudaDim(8, 2))
    again = launch_geometry(4, (8, 2))
    assert again[0] is count
    assert again[1] is dim


def test_geometry_objects_pass_through_untouched():
    count, dim = RudaCount(3, 2), RudaDim(16)
    got = launch_geometry(count, dim)
    assert got[0] is count
    assert got[1] is dim


def test_numpy_integers_are_axes_and_equal_floats_do_not_share_a_remembered_int():
    launch_geometry(2, 1)
    assert launch_geometry(np.int32(2), (np.uint8(3),)) == (RudaCount(2), RudaDim(3))
    for value in (2.0, True, (2.0,)):
        with pytest.raises(LaunchConfigError, match=r"^count takes an int"):
            launch_geometry(value, 1)
