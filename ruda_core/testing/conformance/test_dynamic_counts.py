"""Dynamic counts beyond what the device allows: a ``RudaCount.dynamic`` whose values exceed
``max_ruda_count`` or that holds ``2**32`` units of a kernel reading whole-launch positions,
or that a failed kernel left without valid data, is refused (the kernel does
not run, its outputs are poisoned, the error surfaces at the next sync); and waiting for a
dynamic count's values never keeps other threads from the device."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, kernel, u32
from ruda_core.runtime import (
    CompilationError,
    Feature,
    KernelTask,
    LaunchError,
    RudaCount,
    RudaDim,
    TooManyResources,
)
from ruda_core.testing.faults import RefusedTask
from ruda_core.testing.markers import requires
from ruda_core.testing.runner import TIMEOUT_S, read_array

pytestmark = requires(Feature.DYNAMIC_COUNT)

_U32_MAX = 2**32 - 1


@kernel
def conformance_mark(out: Array[u32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = u32(7)


@kernel
def conformance_store_count(counts: Array[u32], x: u32, y: u32, z: u32):
    if ABSOLUTE_POS == u32(0):
        counts[0] = x
        counts[1] = y
        counts[2] = z


def _mark(client, counts, out, n=4):
    conformance_mark.launch(
        client, RudaCount.dynamic(counts.binding()), RudaDim(1), ArrayArg(out, n)
    )


def _check_usable(client) -> None:
    counts = client.create_from_slice(np.array([2, 1, 1], dtype=np.uint32))
    out = client.create_from_slice(np.zeros(4, dtype=np.uint32))
    _mark(client, counts, out)
    np.testing.assert_array_equal(read_array(client, out, np.uint32), [7, 7, 0, 0])


def test_a_dynamic_count_that_would_wrap_a_whole_launch_position_is_refused_at_the_sync(client):
    """A dynamic count of ``2**32`` units or more, of a kernel that reads ``ABSOLUTE_POS`` (a
    ``u32``), is refused as a static one is before anything runs: units would share
    positions."""
    limit = client.properties().max_ruda_count
    over = (min(limit[0], 65535), min(limit[1], 65535), 1)
    dim = RudaDim(-(-(2**32) // (over[0] * over[1])))
    if dim.x > client.properties().max_units_per_ruda:
        pytest.skip(f"{client.device} launches fewer than 2**32 units")
    counts = client.create_from_slice(np.array(over, dtype=np.uint32))
    out = client.create_from_slice(np.zeros(4, dtype=np.uint32))
    conformance_mark.launch(client, RudaCount.dynamic(counts.binding()), dim, ArrayArg(out, 4))
    with pytest.raises(TooManyResources, match="units: it would wrap past 4294967295"):
        client.sync().result(timeout=TIMEOUT_S)
    with pytest.raises(TooManyResources):  # never run: poisoned, not marks
        read_array(client, out, np.uint32)
    _check_usable(client)


@pytest.mark.parametrize("axis", [0, 1, 2], ids=["x", "y", "z"])
def test_dynamic_count_beyond_the_limit_is_refused_at_the_sync(client, axis):
    limit = client.properties().max_ruda_count
    over = [1, 1, 1]
    over[axis] = limit[axis] + 1
    if over[axis] > _U32_MAX:
        pytest.skip(f"the {'xyz'[axis]} limit {limit[axis]} is the largest u32 count")
    counts = client.create_from_slice(np.array(over, dtype=np.uint32))
    out = client.create_from_slice(np.zeros(4, dtype=np.uint32))
    _mark(client, counts, out)
    with pytest.raises(TooManyResources) as info:
        client.sync().result(timeout=TIMEOUT_S)
    message = str(info.value)
    for part in ("conformance_mark", f"RudaCount{tuple(over)}", str(limit), str(client.device)):
        assert part in message, f"{part!r} missing from {message!r}"
    with pytest.raises(TooManyResources):  # never run: poisoned, not zeros or partial marks
        read_array(client, out, np.uint32)
    _check_usable(client)


def test_a_dynamic_count_of_zero_leaves_a_poisoned_output_poisoned(client):
    """A launch that runs no cube writes nothing: the output a refused launch poisoned still
    raises that error, not what it held before; one that runs clears the poison."""
    limit = client.properties().max_ruda_count
    if limit[1] >= _U32_MAX:
        pytest.skip(f"the y limit {limit[1]} is the largest u32 count")
    out = client.create_from_slice(np.full(4, 3, dtype=np.uint32))
    over = client.create_from_slice(np.array([1, limit[1] + 1, 1], dtype=np.uint32))
    _mark(client, over, out)
    with pytest.raises(TooManyResources):
        client.sync().result(timeout=TIMEOUT_S)
    for zero in ([0, 1, 1], [2, 0, 1], [2, 1, 0]):
        _mark(client, client.create_from_slice(np.array(zero, dtype=np.uint32)), out)
        with pytest.raises(TooManyResources):  # not the 3s written before the refused launch
            read_array(client, out, np.uint32)
    _mark(client, client.create_from_slice(np.array([1, 1, 1], dtype=np.uint32)), out)
    np.testing.assert_array_equal(read_array(client, out, np.uint32), [7, 3, 3, 3])


def test_dynamic_count_without_valid_data_is_refused(client):
    counts = client.create_from_slice(np.array([1, 1, 1], dtype=np.uint32))
    store = RefusedTask(KernelTask(conformance_store_count.definition()))
    client.launch(store, RudaCount(1), RudaDim(1), [counts.binding()], _u32s(2, 1, 1), [3])
    out = client.create_from_slice(np.zeros(4, dtype=np.uint32))
    _mark(client, counts, out)
    with pytest.raises(CompilationError):  # the stream's first error: the failed store
        client.sync().result(timeout=TIMEOUT_S)
    with pytest.raises(LaunchError, match="conformance_mark was not run: its dynamic RudaCount"):
        read_array(client, out, np.uint32)
    _check_usable(client)


def test_dynamic_count_wait_does_not_keep_other_threads_from_the_device(client, spin):
    """The count is written after a long kernel; while a thread's launch waits for it (where
    the backend reads counts on the host), another thread's calls must not wait too."""
    entered = threading.Event()
    outcome: list[object] = []
    out = client.create_from_slice(np.zeros(4, dtype=np.uint32))

    def launch_after_a_long_kernel() -> None:
        try:
            counts = client.create_from_slice(np.zeros(3, dtype=np.uint32))
            spin.launch(client.empty(4 * spin.units))
            conformance_store_count.launch(
                client, RudaCount(1), RudaDim(1), ArrayArg(counts, 3), 3, 1, 1
            )
            entered.set()
            _mark(client, counts, out)
            outcome.append(read_array(client, out, np.uint32))
        except BaseException as exc:  # handed to the test's thread below
            entered.set()
            outcome.append(exc)

    worker = threading.Thread(target=launch_after_a_long_kernel)
    worker.start()
    assert entered.wait(TIMEOUT_S)
    time.sleep(min(0.05, spin.seconds / 6))  # the worker is inside the dynamic launch by now
    start = time.perf_counter()
    client.memory_usage()  # takes the server's lock
    other = client.create_from_slice(np.arange(4, dtype=np.uint32))
    waited = time.perf_counter() - start
    worker.join(TIMEOUT_S)
    assert not worker.is_alive()
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    np.testing.assert_array_equal(outcome[0], [7, 7, 7, 0])
    np.testing.assert_array_equal(read_array(client, other, np.uint32), np.arange(4))
    assert waited < spin.seconds / 3, (
        f"another thread's memory_usage() and upload took {waited:.3f} s while a dynamic count "
        f"waited for a {spin.seconds:.3f} s kernel: the wait held the server's lock"
    )


def _u32s(*values: int) -> list[np.generic]:
    return [np.uint32(v) for v in values]
