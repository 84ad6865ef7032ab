"""Streams: each thread its own queue; a handle written on one stream and used on another is
ordered automatically (no explicit sync); ``set_stream`` and the queue queries follow the seed."""

from __future__ import annotations

import queue
import threading

import numpy as np

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, kernel, u32
from ruda_core.runtime import ComputeClient, Handle, RudaCount, RudaDim, StreamId
from ruda_core.testing.runner import TIMEOUT_S, read_array


def _in_thread(fn):
    """Run ``fn`` on a new thread; return its result or re-raise its exception here."""
    box: list[object] = []

    def run() -> None:
        try:
            box.append(("ok", fn()))
        except BaseException as exc:  # handed to the calling thread below
            box.append(("error", exc))

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(TIMEOUT_S)
    assert box, "the thread did not finish"
    kind, value = box[0]  # type: ignore[misc]
    if kind == "error":
        raise value  # type: ignore[misc]
    return value


def test_each_thread_has_its_own_stream(client):
    mine = client.execution_stream()
    assert client.execution_stream() == mine
    theirs = _in_thread(client.execution_stream)
    assert theirs != mine
    assert _in_thread(client.execution_stream) != theirs  # a new thread, a new stream


def test_queue_queries_follow_the_seed(client, reference):
    assert client.same_execution_queue(client)
    fixed = client.fixed_execution_queue()
    assert fixed is not client
    assert fixed.execution_stream() == client.execution_stream()
    assert fixed.same_execution_queue(client) and client.same_execution_queue(fixed)
    # another thread: ``client`` resolves that thread's stream, ``fixed`` keeps this one's
    assert _in_thread(lambda: fixed.same_execution_queue(client)) is False
    assert _in_thread(fixed.execution_stream) == client.execution_stream()
    if reference.server is not client.server:
        assert not client.same_execution_queue(reference)
    pinned = client.fixed_execution_queue()
    stream = StreamId.new()
    pinned.set_stream(stream)
    assert pinned.execution_stream() == stream
    assert not pinned.same_execution_queue(client)
    assert client.execution_stream() != stream  # set_stream changes only that client object


def test_work_on_a_set_stream_runs(client):
    pinned = client.fixed_execution_queue()
    pinned.set_stream(StreamId.new())
    handle = pinned.create_from_slice(b"on a pinned stream")
    assert bytes(pinned.read_one(handle)) == b"on a pinned stream"
    pinned.sync().result(timeout=TIMEOUT_S)


def test_consumer_thread_reads_what_a_producer_thread_wrote(client, spin):
    handoff: queue.Queue[Handle] = queue.Queue()

    def producer() -> None:
        for seed in (1, 2):
            handle = client.empty(4 * spin.units)
            spin.launch(handle, seed=seed)  # still running when the consumer gets the handle
            handoff.put(handle)

    def consumer() -> list[np.ndarray]:
        return [read_array(client, handoff.get(timeout=TIMEOUT_S), np.uint32) for _ in (1, 2)]

    _in_thread(producer)
    got = _in_thread(consumer)
    for seed, values in zip((1, 2), got, strict=True):
        np.testing.assert_array_equal(values, spin.expected(seed), f"spin seed {seed}")


@kernel
def conformance_copy_u32(src: Array[u32], dst: Array[u32]):
    i = ABSOLUTE_POS
    if i < dst.len():
        dst[i] = src[i]


def test_kernel_on_another_stream_sees_the_writers_data(client, spin):
    n = spin.units
    produced = client.create_from_slice(np.zeros(n, np.uint32))  # the spin's values replace
    copied = client.empty(4 * n)

    def copy() -> None:
        conformance_copy_u32.launch(
            client, RudaCount(1), RudaDim(n), ArrayArg(produced, n), ArrayArg(copied, n)
        )

    copy()  # built before the spin, so the consumer's launch is not delayed past it
    client.sync().result(timeout=TIMEOUT_S)
    spin.launch(produced, seed=7)

    def consume() -> None:  # this thread's stream: ordered after the spin through the handle
        copy()
        client.sync().result(timeout=TIMEOUT_S)

    _in_thread(consume)
    np.testing.assert_array_equal(read_array(client, copied, np.uint32), spin.expected(7))


def test_handle_used_after_set_stream_is_ordered_after_its_writer(client, spin):
    handle = client.empty(4 * spin.units)
    spin.launch(handle, seed=3)
    pinned: ComputeClient = client.fixed_execution_queue()
    pinned.set_stream(StreamId.new())  # no ordering between streams, except through the handle
    np.testing.assert_array_equal(read_array(pinned, handle, np.uint32), spin.expected(3))


def test_threads_launching_concurrently_get_their_own_results(client):
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            n = 4096
            data = np.arange(n, dtype=np.uint32) * (k + 1)
            for _ in range(5):
                src, dst = client.create_from_slice(data), client.empty(4 * n)
                conformance_copy_u32.launch(
                    client, RudaCount(n // 64), RudaDim(64), ArrayArg(src, n), ArrayArg(dst, n)
                )
                np.testing.assert_array_equal(read_array(client, dst, np.uint32), data)
            client.sync().result(timeout=TIMEOUT_S)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(TIMEOUT_S)
    assert not errors, errors
