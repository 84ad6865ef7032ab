"""Futures: creating one never waits; ``done()`` never blocks; ``result(timeout)`` waits or raises
``TimeoutError``; ``await`` works; a resolved ``sync()`` future is a completion fence for
everything enqueued on its stream before it."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

import numpy as np

from ruda_core.runtime import RudaFuture
from ruda_core.testing.runner import TIMEOUT_S, read_array


def test_resolved_sync_is_a_completion_fence(client, spin):
    handle = client.empty(4 * spin.units)
    spin.launch(handle)
    read = client.read_async([handle])
    fence = client.sync()
    assert fence.result(timeout=TIMEOUT_S) is None
    assert read.done(), "sync() resolved while a read enqueued before it was still pending"
    np.testing.assert_array_equal(np.frombuffer(read.result(0)[0], np.uint32), spin.expected())


def test_sync_waits_for_the_work_enqueued_before_it(client, spin):
    """Timed against the kernel as calibrated, or as it runs now where that is shorter (what
    its iterations add to a launch of one: the round trip cancels): a device other processes
    share may have run the calibration slower."""
    handle = client.empty(4 * spin.units)
    start = time.perf_counter()
    spin.launch(handle)
    client.sync().result(timeout=TIMEOUT_S)
    waited = time.perf_counter() - start
    if waited >= spin.seconds / 3:
        return
    takes = min(spin.seconds, spin.timed() - spin.timed(1))
    assert waited >= takes / 3, (
        f"sync() resolved after {waited:.3f} s; the queued kernel takes about {takes:.3f} s"
    )


def test_sync_of_a_pinned_queue_from_another_thread_fences_that_stream(client, spin):
    handle = client.empty(4 * spin.units)
    spin.launch(handle)
    read = client.read_async([handle])
    pinned = client.fixed_execution_queue()
    done: list[bool] = []

    def fence_elsewhere() -> None:
        pinned.sync().result(timeout=TIMEOUT_S)
        done.append(read.done())

    worker = threading.Thread(target=fence_elsewhere)
    worker.start()
    worker.join(TIMEOUT_S)
    assert done == [True]


def test_creating_a_future_does_not_wait(client, spin):
    handle = client.empty(4 * spin.units)
    spin.launch(handle)
    start = time.perf_counter()
    fence = client.sync()
    read = client.read_async([handle])
    created_s = time.perf_counter() - start
    assert created_s < spin.seconds / 2, f"creating futures took {created_s:.3f} s"
    assert isinstance(fence, RudaFuture) and isinstance(read, RudaFuture)
    read.result(timeout=TIMEOUT_S)


def test_done_never_blocks_and_turns_true(client, spin):
    spin.launch(client.empty(4 * spin.units))
    fence = client.sync()
    start = time.perf_counter()
    fence.done()
    assert time.perf_counter() - start < spin.seconds / 2
    fence.result(timeout=TIMEOUT_S)
    assert fence.done()


def test_result_with_a_timeout_raises_timeout_error_while_pending(client, spin):
    spin.launch(client.empty(4 * spin.units))
    start = time.perf_counter()
    fence = client.sync()
    try:
        fence.result(timeout=0.001)
    except TimeoutError:
        pass
    else:
        elapsed = time.perf_counter() - start
        assert elapsed >= spin.seconds / 3, (
            f"result(timeout=0.001) returned after {elapsed:.3f} s while a "
            f"{spin.seconds:.3f} s kernel was queued"
        )
    assert fence.result(timeout=TIMEOUT_S) is None
    assert fence.result(timeout=0) is None  # remembered


def test_read_one_timeout_raises_timeout_error_while_pending(client, spin):
    handle = client.empty(4 * spin.units)
    spin.launch(handle)
    start = time.perf_counter()
    try:
        client.read_one(handle, timeout=0.001)
    except TimeoutError:
        pass
    else:
        elapsed = time.perf_counter() - start
        assert elapsed >= spin.seconds / 3, (
            f"read_one(timeout=0.001) returned after {elapsed:.3f} s while a "
            f"{spin.seconds:.3f} s kernel writing the handle was queued"
        )
    got = np.frombuffer(client.read_one(handle, timeout=TIMEOUT_S), np.uint32)
    np.testing.assert_array_equal(got, spin.expected())


def test_futures_can_be_awaited(client, spin):
    handle = client.empty(4 * spin.units)

    async def main() -> bytes:
        spin.launch(handle)
        await client.sync()
        (raw,) = await client.read_async([handle])
        return bytes(raw)

    raw = asyncio.run(main())
    np.testing.assert_array_equal(np.frombuffer(raw, np.uint32), spin.expected())


def _queued(client, spin, launches: int) -> float:
    """Queue ``launches`` spin kernels; the seconds they take."""
    handle = client.empty(4 * spin.units)
    for _ in range(launches):
        spin.launch(handle)
    return launches * spin.seconds


def test_a_timed_result_beside_a_waiting_thread_keeps_its_timeout(client, spin):
    """A thread waiting for a future does not make another thread's ``result(timeout)`` wait
    for the work: it raises ``TimeoutError`` after its own timeout."""
    work = _queued(client, spin, 5)
    fence = client.sync()
    waiter = threading.Thread(target=fence.result, args=(TIMEOUT_S,))
    waiter.start()
    time.sleep(0.01)
    start = time.perf_counter()
    with contextlib.suppress(TimeoutError):
        fence.result(timeout=0.01)
    elapsed = time.perf_counter() - start
    waiter.join(TIMEOUT_S)
    assert elapsed < work / 3, f"result(timeout=0.01) took {elapsed:.2f} s of {work:.2f} s"


def test_a_cancelled_await_lets_the_event_loop_end_before_the_work(client, spin):
    """``asyncio.wait_for`` on a future times out, and ``asyncio.run`` then returns without
    waiting for the work (the executor's thread does not wait for it either)."""
    work = _queued(client, spin, 5)
    fence = client.sync()

    async def main() -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(fence, 0.05)

    start = time.perf_counter()
    asyncio.run(main())
    elapsed = time.perf_counter() - start
    fence.result(timeout=TIMEOUT_S)
    assert elapsed < work / 3, f"asyncio.run took {elapsed:.2f} s of {work:.2f} s of work"


def test_read_future_yields_one_buffer_per_handle(client):
    handles = [client.create_from_slice(np.full(k + 1, k, dtype=np.uint16)) for k in range(3)]
    values = client.read_async(handles).result(timeout=TIMEOUT_S)
    assert len(values) == 3
    for k, raw in enumerate(values):
        np.testing.assert_array_equal(np.frombuffer(raw, np.uint16), np.full(k + 1, k))
    assert read_array(client, handles[2], np.uint16).tolist() == [2, 2, 2]


def test_many_waiters_see_the_same_outcome(client, spin):
    spin.launch(client.empty(4 * spin.units))
    fence = client.sync()
    outcomes: list[object] = []

    def wait() -> None:
        outcomes.append(fence.result(timeout=TIMEOUT_S))

    workers = [threading.Thread(target=wait) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(TIMEOUT_S)
    assert outcomes == [None] * 4
