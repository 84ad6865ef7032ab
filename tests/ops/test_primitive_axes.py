"""The ``axis`` of the device-wide primitives is an int (NumPy's integers too): a float or a
bool, which compare equal to one, is refused before anything runs, as NumPy refuses them."""

from __future__ import annotations

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core import ops
from ruda_core.runtime import LaunchConfigError

_OPS = [ops.sum, ops.min, ops.max, ops.cumsum, ops.sort, ops.argsort]


@pytest.mark.parametrize("op", _OPS, ids=lambda op: op.__name__)
@pytest.mark.parametrize("axis", [0.0, -1.0, True, False], ids=repr)
def test_an_axis_that_is_not_an_int_is_refused(op, axis):
    x = ruda.asarray(np.arange(5, dtype=np.float32), "cpu")
    with pytest.raises(LaunchConfigError, match=f"axis={axis!r} for a tensor of shape"):
        op(x, axis=axis)


@pytest.mark.parametrize("op", _OPS, ids=lambda op: op.__name__)
def test_numpys_integers_name_the_last_axis(op):
    data = np.array([3, 1, 2], np.int32)
    x = ruda.asarray(data, "cpu")
    np.testing.assert_array_equal(op(x, axis=np.int64(-1)).numpy(), op(x, axis=-1).numpy())
