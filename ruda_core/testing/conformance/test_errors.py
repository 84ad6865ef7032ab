"""Asynchrony and error surfacing: ``launch`` returns at once; a kernel that does not compile
surfaces at the next flush, sync or read on its stream, naming the kernel; the client stays
usable; outputs of a failed launch are poisoned until written again."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from ruda_core.lang import ABSOLUTE_POS, Array, kernel, u32
from ruda_core.runtime import (
    CompilationError,
    KernelTask,
    LaunchError,
    RudaCount,
    RudaDim,
    RudaPanic,
    ServerError,
)
from ruda_core.testing.faults import BrokenSourceTask, RefusedTask
from ruda_core.testing.runner import TIMEOUT_S, read_array, sharing_streams

N = 256


@kernel
def conformance_add_one(src: Array[u32], dst: Array[u32]):
    i = ABSOLUTE_POS
    if i < dst.len():
        dst[i] = src[i] + u32(1)


TASK = KernelTask(conformance_add_one.definition())
FAULTS = {"refused-by-compiler": RefusedTask, "broken-source": BrokenSourceTask}


def _launch(client, task, src, dst):
    client.launch(task, RudaCount(N // 64), RudaDim(64), [src.binding(), dst.binding()], (), (N, N))


def _buffers(client):
    src = client.create_from_slice(np.arange(N, dtype=np.uint32))
    dst = client.create_from_slice(np.zeros(N, dtype=np.uint32))
    return src, dst


def _check_usable(client) -> None:
    src, dst = _buffers(client)
    _launch(client, TASK, src, dst)
    client.sync().result(timeout=TIMEOUT_S)
    np.testing.assert_array_equal(read_array(client, dst, np.uint32), np.arange(1, N + 1))


def test_launch_returns_before_the_work_completes(client, spin):
    handle = client.empty(4 * spin.units)
    start = time.perf_counter()
    spin.launch(handle)
    enqueue_s = time.perf_counter() - start
    future = client.sync()
    assert enqueue_s < spin.seconds / 2, (
        f"launch took {enqueue_s:.3f} s of a {spin.seconds:.3f} s kernel"
    )
    assert future.result(timeout=TIMEOUT_S) is None
    np.testing.assert_array_equal(read_array(client, handle, np.uint32), spin.expected())


@pytest.mark.parametrize("fault", FAULTS)
def test_compile_error_surfaces_at_the_next_sync_naming_the_kernel(client, fault):
    client.sync().result(timeout=TIMEOUT_S)
    src, dst = _buffers(client)
    _launch(client, FAULTS[fault](TASK), src, dst)  # must not raise: errors surface later
    with pytest.raises(CompilationError, match=TASK.name):
        client.sync().result(timeout=TIMEOUT_S)
    client.sync().result(timeout=TIMEOUT_S)  # surfaced once; the stream is clean again
    _check_usable(client)


@pytest.mark.parametrize("fault", FAULTS)
def test_compile_error_surfaces_at_the_next_flush(client, fault):
    src, dst = _buffers(client)
    _launch(client, FAULTS[fault](TASK), src, dst)
    with pytest.raises(CompilationError, match=TASK.name):
        client.flush()
    client.flush()
    _check_usable(client)


def test_compile_error_surfaces_at_the_next_read(client):
    src, dst = _buffers(client)
    _launch(client, BrokenSourceTask(TASK), src, dst)
    with pytest.raises(ServerError, match=TASK.name):
        client.read_one(dst)
    with pytest.raises(RudaPanic, match=TASK.name):  # the panicking form, while still poisoned
        client.read([dst])
    _check_usable(client)


def test_poisoned_output_raises_until_written_again(client):
    src, dst = _buffers(client)
    _launch(client, BrokenSourceTask(TASK), src, dst)
    with pytest.raises(CompilationError):
        client.sync().result(timeout=TIMEOUT_S)
    for _ in range(2):
        with pytest.raises(ServerError, match=TASK.name):
            client.read_one(dst)  # never stale or garbage bytes
    np.testing.assert_array_equal(read_array(client, src, np.uint32), np.arange(N))  # read-only
    client.write(dst, np.full(N, 9, dtype=np.uint32))
    np.testing.assert_array_equal(read_array(client, dst, np.uint32), np.full(N, 9))


def test_poison_propagates_to_work_that_reads_it(client):
    src, dst = _buffers(client)
    _launch(client, RefusedTask(TASK), src, dst)
    later = client.create_from_slice(np.zeros(N, dtype=np.uint32))
    _launch(client, TASK, dst, later)  # reads the poisoned buffer: must not run on garbage
    with pytest.raises(ServerError):
        client.sync().result(timeout=TIMEOUT_S)
    with pytest.raises(ServerError):
        client.read_one(later)
    client.sync().result(timeout=TIMEOUT_S)
    _check_usable(client)


def test_an_error_surfaces_only_on_its_own_stream(client):
    client.sync().result(timeout=TIMEOUT_S)
    results: list[object] = []

    def other_thread() -> None:
        try:
            src, dst = _buffers(client)
            _launch(client, RefusedTask(TASK), src, dst)
            client.sync().result(timeout=TIMEOUT_S)
            results.append("no error")
        except ServerError as exc:
            results.append(exc)

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join(TIMEOUT_S)
    assert isinstance(results[0], CompilationError), results
    client.sync().result(timeout=TIMEOUT_S)  # this thread's stream saw nothing
    _check_usable(client)


def test_an_error_surfaces_on_its_own_stream_where_streams_share_a_queue(client):
    """A stream sharing its device queue with another neither takes that stream's error nor
    hides it: the other's sync raises it, its own does not."""
    failing, innocent = sharing_streams(client)
    src, dst = _buffers(innocent)
    innocent.sync().result(timeout=TIMEOUT_S)
    _launch(failing, RefusedTask(TASK), *_buffers(failing))
    innocent.sync().result(timeout=TIMEOUT_S)  # raises nothing
    with pytest.raises(LaunchError, match=TASK.name):
        failing.sync().result(timeout=TIMEOUT_S)
    _launch(innocent, TASK, src, dst)
    innocent.sync().result(timeout=TIMEOUT_S)
    np.testing.assert_array_equal(read_array(innocent, dst, np.uint32), np.arange(1, N + 1))


def test_a_stream_sharing_a_queue_is_not_owed_an_error_of_work_it_did_not_queue(client):
    """A stream whose work is queued on a device queue beside a failing launch of another
    stream syncs and reads cleanly: the failure found while that stream enqueued is its alone."""
    failing, innocent = sharing_streams(client)
    src, dst = _buffers(innocent)
    _launch(innocent, TASK, src, dst)  # queued, never synced before the other stream fails
    _launch(failing, RefusedTask(TASK), *_buffers(failing))
    innocent.sync().result(timeout=TIMEOUT_S)  # raises nothing
    np.testing.assert_array_equal(read_array(innocent, dst, np.uint32), np.arange(1, N + 1))
    with pytest.raises(LaunchError, match=TASK.name):
        failing.sync().result(timeout=TIMEOUT_S)


def test_failed_sync_future_raises_the_same_error_every_time(client):
    src, dst = _buffers(client)
    _launch(client, RefusedTask(TASK), src, dst)
    future = client.sync()
    errors = []
    for _ in range(2):
        with pytest.raises(LaunchError) as info:
            future.result(timeout=TIMEOUT_S)
        errors.append(info.value)
    assert errors[0] is errors[1]
    assert future.done()
    _check_usable(client)
