"""Capture across servers and threads, on private NumPy-device servers: a graph is refused by
another device's client, another thread keeps launching while one thread captures, and a
binding of a dropped handle is refused when it is recorded."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ruda_core.lang import ArrayArg
from ruda_core.runtime import CaptureError, InvalidHandle, KernelTask, RudaCount, RudaDim
from ruda_core.testing.conformance.test_capture import N, capture_add, capture_scale
from ruda_core.testing.runner import TIMEOUT_S, read_array

COUNT, DIM = RudaCount(N // 128), RudaDim(128)


def test_a_graph_is_refused_by_another_devices_client(new_private_client):
    mine, other = new_private_client(), new_private_client()
    acc = mine.create_from_slice(np.ones(N, np.int32))
    with mine.capture() as graph:
        capture_scale.launch(mine, COUNT, DIM, ArrayArg(acc, N), 3)
    with pytest.raises(CaptureError, match="cannot be replayed on"):
        graph.replay(other)
    graph.replay(mine.fixed_execution_queue())  # the same device: accepted
    np.testing.assert_array_equal(read_array(mine, acc, np.int32), np.full(N, 3))


def test_another_thread_launches_while_one_captures(private_client):
    client = private_client
    mine = client.create_from_slice(np.ones(N, np.int32))
    theirs = client.create_from_slice(np.ones(N, np.int32))
    errors: list[BaseException] = []

    def other_thread() -> None:
        try:
            capture_scale.launch(client, COUNT, DIM, ArrayArg(theirs, N), 5)
            client.sync().result(timeout=TIMEOUT_S)
        except BaseException as exc:  # reported to the test thread below
            errors.append(exc)

    with client.capture() as graph:
        capture_scale.launch(client, COUNT, DIM, ArrayArg(mine, N), 2)
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join(TIMEOUT_S)
    assert not errors, errors[0]
    np.testing.assert_array_equal(read_array(client, theirs, np.int32), np.full(N, 5))
    np.testing.assert_array_equal(read_array(client, mine, np.int32), np.ones(N))
    graph.replay()
    np.testing.assert_array_equal(read_array(client, mine, np.int32), np.full(N, 2))


def test_a_dropped_handle_is_refused_when_recorded(private_client):
    client = private_client
    acc = client.create_from_slice(np.zeros(N, np.int32))
    src = client.create_from_slice(np.ones(N, np.int32))
    binding = src.binding()
    del src
    task = KernelTask(capture_add.definition())
    with client.capture() as graph, pytest.raises(InvalidHandle, match="dropped"):
        client.launch(task, COUNT, DIM, [binding, acc.binding()], [], [N, N])
    assert len(graph) == 0
