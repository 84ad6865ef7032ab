"""Capture and replay: ``with client.capture() as graph:`` records launches and copies between
handles without running them; ``graph.replay()`` enqueues the recording in stream order, as N
launches and copies would; calls a capture cannot record are refused by name; a graph keeps its
memory alive and stays on its device."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, i32, kernel
from ruda_core.runtime import CaptureError, RudaCount, RudaDim, StreamId, TimingMethod
from ruda_core.testing.runner import TIMEOUT_S, read_array, settle

N = 512
COUNT, DIM = RudaCount(N // 128), RudaDim(128)


@kernel
def capture_add(src: Array[i32], dst: Array[i32]):
    i = ABSOLUTE_POS
    if i < dst.len():
        dst[i] = dst[i] + src[i]


@kernel
def capture_scale(x: Array[i32], factor: i32):
    i = ABSOLUTE_POS
    if i < x.len():
        x[i] = x[i] * factor


def _chain(client, src, acc, tmp):
    """Three dependent launches: acc += src; tmp += acc; acc *= 2."""
    capture_add.launch(client, COUNT, DIM, ArrayArg(src, N), ArrayArg(acc, N))
    capture_add.launch(client, COUNT, DIM, ArrayArg(acc, N), ArrayArg(tmp, N))
    capture_scale.launch(client, COUNT, DIM, ArrayArg(acc, N), 2)


def _zeros(client):
    return client.create_from_slice(np.zeros(N, np.int32))


def test_replays_equal_the_same_launches(client):
    src = client.create_from_slice(np.arange(N, dtype=np.int32) % 97)
    launched = (_zeros(client), _zeros(client))
    replayed = (_zeros(client), _zeros(client))
    with client.capture() as graph:
        _chain(client, src, *replayed)
    assert len(graph) == 3
    client.sync().result(timeout=TIMEOUT_S)
    np.testing.assert_array_equal(read_array(client, replayed[0], np.int32), np.zeros(N))
    for _ in range(4):
        _chain(client, src, *launched)
        graph.replay()
    for got, want in zip(replayed, launched, strict=True):
        np.testing.assert_array_equal(
            read_array(client, got, np.int32), read_array(client, want, np.int32)
        )


def test_replay_is_ordered_between_the_work_before_and_after_it(client):
    src, acc = client.empty(4 * N), _zeros(client)
    with client.capture() as graph:
        capture_add.launch(client, COUNT, DIM, ArrayArg(src, N), ArrayArg(acc, N))
        capture_add.launch(client, COUNT, DIM, ArrayArg(src, N), ArrayArg(acc, N))
    client.write(src, np.full(N, 3, np.int32))  # before: the replay reads it
    graph.replay()
    capture_scale.launch(client, COUNT, DIM, ArrayArg(acc, N), 10)  # after: sees the replay
    client.write(src, np.full(N, 5, np.int32))
    graph.replay()
    np.testing.assert_array_equal(read_array(client, acc, np.int32), np.full(N, 60 + 10))


def test_replay_on_another_stream_waits_for_the_writer(client, spin):
    src, acc = client.empty(4 * N), _zeros(client)
    with client.capture() as graph:
        capture_add.launch(client, COUNT, DIM, ArrayArg(src, N), ArrayArg(acc, N))
    spin.launch(client.empty(4 * spin.units))  # keep this stream busy
    client.write(src, np.full(N, 7, np.int32))
    side = client.fixed_execution_queue()
    side.set_stream(StreamId.new())
    graph.replay(side)
    side.sync().result(timeout=TIMEOUT_S)
    np.testing.assert_array_equal(read_array(side, acc, np.int32), np.full(N, 7))


def _copy_chain(client, src, acc, snap, total):
    """A copy between launches: acc += src; snap = acc (a copy); snap *= 3; total += snap."""
    capture_add.launch(client, COUNT, DIM, ArrayArg(src, N), ArrayArg(acc, N))
    client.copy(acc, snap)
    capture_scale.launch(client, COUNT, DIM, ArrayArg(snap, N), 3)
    capture_add.launch(client, COUNT, DIM, ArrayArg(snap, N), ArrayArg(total, N))


def test_a_captured_copy_replays_in_order_with_the_launches(client):
    src = client.create_from_slice(np.arange(N, dtype=np.int32) % 89)
    ones = np.ones(N, np.int32)
    launched = (client.create_from_slice(ones), _zeros(client), _zeros(client))
    replayed = (client.create_from_slice(ones), _zeros(client), _zeros(client))
    with client.capture() as graph:
        _copy_chain(client, src, *replayed)
    assert len(graph) == 4
    client.sync().result(timeout=TIMEOUT_S)  # the copy was recorded, not run
    np.testing.assert_array_equal(read_array(client, replayed[1], np.int32), np.zeros(N))
    for _ in range(5):
        _copy_chain(client, src, *launched)
        graph.replay()
    want = [read_array(client, h, np.int32) for h in launched]
    for got, expected in zip(replayed, want, strict=True):
        np.testing.assert_array_equal(read_array(client, got, np.int32), expected)
    step = np.arange(N) % 89
    np.testing.assert_array_equal(want[1], 3 * (1 + 5 * step))  # the last copy, then its scale
    np.testing.assert_array_equal(want[2], 3 * (5 + 15 * step))  # the sum of the five copies


def test_a_captured_copy_is_ordered_between_the_work_before_and_after_the_replay(client):
    src, snap, acc = client.empty(4 * N), client.empty(4 * N), _zeros(client)
    with client.capture() as graph:
        client.copy(src, snap)
        capture_add.launch(client, COUNT, DIM, ArrayArg(snap, N), ArrayArg(acc, N))
    client.write(src, np.full(N, 3, np.int32))  # before: the replayed copy reads it
    graph.replay()
    client.copy(acc, src)  # after: copies what the replay wrote
    capture_scale.launch(client, COUNT, DIM, ArrayArg(src, N), 10)
    graph.replay()  # acc = 3 + 30
    np.testing.assert_array_equal(read_array(client, snap, np.int32), np.full(N, 30))
    np.testing.assert_array_equal(read_array(client, acc, np.int32), np.full(N, 33))


def test_calls_a_capture_cannot_record_are_refused_by_name(client):
    handle, acc = _zeros(client), _zeros(client)
    side = client.fixed_execution_queue()
    side.set_stream(StreamId.new())
    refused = {
        "empty()": lambda: client.empty(16),
        "create_from_slice()": lambda: client.create_from_slice(b"abcd"),
        "write()": lambda: client.write(handle, np.ones(N, np.int32)),
        "read()": lambda: client.read_one(handle),
        "sync()": client.sync,
        "flush()": client.flush,
        "capture_add": lambda: capture_add.launch(
            side, COUNT, DIM, ArrayArg(handle, N), ArrayArg(acc, N)
        ),
        "a copy between handles": lambda: side.copy(handle, acc),
    }
    with client.capture() as graph:
        for name, call in refused.items():
            with pytest.raises(CaptureError, match=name.replace("(", r"\(").replace(")", r"\)")):
                call()
        capture_add.launch(client, COUNT, DIM, ArrayArg(handle, N), ArrayArg(acc, N))
        with pytest.raises(CaptureError, match="do not nest"):
            client.capture().__enter__()
    assert len(graph) == 1  # the refused launch was not recorded, the later one was
    client.write(handle, np.ones(N, np.int32))
    graph.replay()
    np.testing.assert_array_equal(read_array(client, acc, np.int32), np.ones(N))


def _graph_over_a_temporary(client, acc):
    src = client.create_from_slice(np.full(N, 11, np.int32))
    with client.capture() as graph:
        capture_add.launch(client, COUNT, DIM, ArrayArg(src, N), ArrayArg(acc, N))
    return graph  # the graph is all that holds src now


def test_a_graph_keeps_its_memory_alive(client):
    acc = _zeros(client)
    graph = _graph_over_a_temporary(client, acc)
    held = settle(client).bytes_in_use
    others = [client.create_from_slice(np.full(N, -1, np.int32)) for _ in range(3)]
    graph.replay()
    graph.replay()
    np.testing.assert_array_equal(read_array(client, acc, np.int32), np.full(N, 22))
    del others, graph
    assert settle(client).bytes_in_use < held  # dropping the graph releases src


def test_a_failed_block_records_nothing_and_ends_the_capture(client):
    acc = _zeros(client)
    with pytest.raises(ZeroDivisionError), client.capture() as graph:
        capture_scale.launch(client, COUNT, DIM, ArrayArg(acc, N), 3)
        1 // 0  # noqa: B018  # the block fails
    with pytest.raises(CaptureError, match="holds no recording"):
        graph.replay()
    client.write(acc, np.ones(N, np.int32))  # the stream is no longer captured
    np.testing.assert_array_equal(read_array(client, acc, np.int32), np.ones(N))


def test_a_replay_inside_a_capture_is_recorded(client):
    src = client.create_from_slice(np.ones(N, np.int32))
    acc = _zeros(client)
    with client.capture() as inner:
        capture_add.launch(client, COUNT, DIM, ArrayArg(src, N), ArrayArg(acc, N))
    with client.capture() as outer:
        inner.replay()
        capture_scale.launch(client, COUNT, DIM, ArrayArg(acc, N), 3)
        inner.replay()
    assert len(outer) == 3
    np.testing.assert_array_equal(read_array(client, acc, np.int32), np.zeros(N))
    outer.replay()
    np.testing.assert_array_equal(read_array(client, acc, np.int32), np.full(N, 4))


def test_replay_on_another_device_is_refused(client, reference):
    if reference.server is client.server:
        pytest.skip("no other device here; tests/runtime/test_capture.py covers it")
    acc = _zeros(client)
    with client.capture() as graph:
        capture_scale.launch(client, COUNT, DIM, ArrayArg(acc, N), 3)
    with pytest.raises(CaptureError, match="cannot be replayed on"):
        graph.replay(reference)


def test_profile_sees_each_replayed_kernel(client):
    src, acc = client.create_from_slice(np.ones(N, np.int32)), _zeros(client)
    with client.capture() as graph:
        capture_add.launch(client, COUNT, DIM, ArrayArg(src, N), ArrayArg(acc, N))
        capture_scale.launch(client, COUNT, DIM, ArrayArg(acc, N), 2)

    def region() -> None:
        graph.replay()
        graph.replay()

    _, duration = client.profile(region)
    if duration.method is TimingMethod.DEVICE:
        names = [e.name for e in duration.trace.events if e.kind == "kernel"]
        assert names == ["capture_add", "capture_scale"] * 2
    np.testing.assert_array_equal(read_array(client, acc, np.int32), np.full(N, 6))
