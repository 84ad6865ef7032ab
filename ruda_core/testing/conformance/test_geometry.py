"""Launch geometry as plain ints and tuples: ``launch``, ``launch_unchecked``, ``prepare`` and the
client's own ``launch`` and ``launcher`` take an ``int`` or a tuple of 1 to 3 ints for ``count``
and ``dim`` and launch exactly what the same ``RudaCount`` and ``RudaDim`` launch; anything else
is refused, naming the argument, before anything runs."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.lang import (
    ABSOLUTE_POS_X,
    ABSOLUTE_POS_Y,
    RUDA_COUNT_X,
    RUDA_DIM_X,
    Array,
    ArrayArg,
    kernel,
    u32,
)
from ruda_core.runtime import KernelTask, LaunchConfigError, RudaCount, RudaDim, TooManyResources
from ruda_core.testing.runner import TIMEOUT_S, read_array
from ruda_core.testing.samples import increment

N = 64
SENTINEL = 0x5EEDF00D


@kernel
def conformance_geometry_plane(out: Array[u32]):
    """Each unit writes its flat index at (x, y) of a row-major grid as wide as the launch."""
    width = RUDA_COUNT_X * RUDA_DIM_X
    i = ABSOLUTE_POS_Y * width + ABSOLUTE_POS_X
    if i < out.len():
        out[i] = i


def _zeros(client):
    return client.create_from_slice(np.zeros(N, dtype=np.uint32))


def _refused_before_anything_runs(client, count, dim, error, match):
    """Each way to launch ``increment`` with ``count`` and ``dim`` raises ``error`` matching
    ``match``, and nothing runs."""
    out = client.create_from_slice(np.full(N, SENTINEL, dtype=np.uint32))
    task = KernelTask(increment.definition())
    launches = [
        lambda: increment.launch(client, count, dim, ArrayArg(out, N)),
        lambda: increment.launch_unchecked(client, count, dim, ArrayArg(out, N)),
        lambda: increment.prepare(client, count, dim, ArrayArg(out, N)),
        lambda: client.launch(task, count, dim, [out.binding()], (), (N,)),
        lambda: client.launcher(task)(count, dim, [out.binding()], (), (N,)),
    ]
    for launch in launches:
        with pytest.raises(error, match=match):
            launch()
    client.sync().result(timeout=TIMEOUT_S)
    np.testing.assert_array_equal(read_array(client, out, np.uint32), np.full(N, SENTINEL))


def test_ints_launch_what_the_geometry_objects_launch(client):
    out = _zeros(client)
    increment.launch(client, 2, 32, ArrayArg(out, N))
    increment.launch(client, RudaCount(2), RudaDim(32), ArrayArg(out, N))
    increment.launch(client, np.int64(1), np.uint16(64), ArrayArg(out, N))
    np.testing.assert_array_equal(read_array(client, out, np.uint32), np.full(N, 3))


def test_the_same_int_launch_repeated_runs_every_time(client):
    out = _zeros(client)
    for _ in range(5):
        increment.launch(client, 1, N, ArrayArg(out, N))
    np.testing.assert_array_equal(read_array(client, out, np.uint32), np.full(N, 5))


@pytest.mark.parametrize(
    ("count", "dim"), [((2, 4), (4, 2)), ((2, 4, 1), (4, 2, 1)), ((1, 8), (8,))]
)
def test_tuples_are_the_axes(client, count, dim):
    out = _zeros(client)
    conformance_geometry_plane.launch(client, count, dim, ArrayArg(out, N))
    np.testing.assert_array_equal(read_array(client, out, np.uint32), np.arange(N))


def test_unchecked_and_prepared_launches_take_ints(client):
    out = _zeros(client)
    increment.launch_unchecked(client, 1, N, ArrayArg(out, N))
    prepared = increment.prepare(client, (2,), (32, 1), ArrayArg(out, N))
    prepared.launch()
    prepared.launch()
    np.testing.assert_array_equal(read_array(client, out, np.uint32), np.full(N, 3))


def test_the_clients_launch_and_launcher_take_ints(client):
    task = KernelTask(increment.definition())
    out = _zeros(client)
    bindings = [out.binding()]
    client.launch(task, 1, N, bindings, (), (N,))
    run = client.launcher(task)
    run(2, 32, bindings, (), (N,))
    run(RudaCount(2), RudaDim(32), bindings, (), (N,))
    run((1, 1, 1), (N, 1), bindings, (), (N,))
    np.testing.assert_array_equal(read_array(client, out, np.uint32), np.full(N, 4))


def test_a_zero_count_launches_nothing(client):
    out = _zeros(client)
    increment.launch(client, 0, N, ArrayArg(out, N))
    np.testing.assert_array_equal(read_array(client, out, np.uint32), np.zeros(N))


@pytest.mark.parametrize(
    ("count", "dim", "named"),
    [
        (-1, N, "count"),
        (1.0, N, "count"),
        (True, N, "count"),
        ("1", N, "count"),
        ((1, 1, 1, 1), N, "count"),
        ((), N, "count"),
        (1, 0, "dim"),
        (1, (N, 0), "dim"),
        (1, 64.0, "dim"),
        (1, [N], "dim"),
        (1, 2**32, "dim"),
    ],
)
def test_a_bad_geometry_is_refused_naming_it_before_anything_runs(client, count, dim, named):
    match = rf"^{named} takes an int, a tuple of 1 to 3"
    _refused_before_anything_runs(client, count, dim, LaunchConfigError, match)


def test_a_launch_that_would_wrap_a_whole_launch_position_is_refused_before_anything_runs(client):
    """Positions over the whole launch (``ABSOLUTE_POS`` …) are ``u32``: a launch of ``2**32``
    units or more of a kernel that reads one would give units the same position."""
    count, dim = RudaCount(65535, 65535), RudaDim(2)  # 8 589 672 450 units
    match = r"8589672450 units: it would wrap past"
    _refused_before_anything_runs(client, count, dim, TooManyResources, match)
