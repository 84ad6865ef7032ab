"""Capture on CUDA: a recording becomes one CUDA graph (CuPy stream capture, instantiated once)
whose replays equal the same launches, on any stream of the device, ordered with the work
around them, and with CuPy work on the same data.

Skips (saying why) without CuPy or a GPU; fails instead when ``RUDA_REQUIRE`` names cuda.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, kernel
from ruda_core.runtime import RudaCount, RudaDim, StreamId
from ruda_core.testing.runner import TIMEOUT_S, read_array

N = 1 << 16
COUNT, DIM = RudaCount(N // 256), RudaDim(256)


@kernel
def cuda_capture_axpy(x: Array[f32], y: Array[f32], alpha: f32):
    i = ABSOLUTE_POS
    if i < y.len():
        y[i] = alpha * x[i] + y[i]


@pytest.fixture
def cuda(open_device):
    return open_device("cuda:0")


def _chain(client, x, y, links=10):
    for k in range(links):
        cuda_capture_axpy.launch(client, COUNT, DIM, ArrayArg(x, N), ArrayArg(y, N), f32(k + 1))


def test_a_chain_of_ten_replays_like_ten_launches(cuda):
    x = cuda.create_from_slice(np.linspace(-1, 1, N, dtype=np.float32))
    launched = cuda.create_from_slice(np.zeros(N, np.float32))
    replayed = cuda.create_from_slice(np.zeros(N, np.float32))
    with cuda.capture() as graph:
        _chain(cuda, x, replayed)
    assert len(graph) == 10
    for _ in range(100):
        _chain(cuda, x, launched)
        graph.replay()
    np.testing.assert_array_equal(
        read_array(cuda, replayed, np.float32), read_array(cuda, launched, np.float32)
    )


def test_replay_on_another_stream_is_ordered_after_the_writer(cuda):
    x = cuda.create_from_slice(np.zeros(N, np.float32))
    y = cuda.create_from_slice(np.zeros(N, np.float32))
    with cuda.capture() as graph:
        _chain(cuda, x, y, links=2)
    cuda.write(x, np.full(N, 2, np.float32))
    side = cuda.fixed_execution_queue()
    side.set_stream(StreamId.new())
    graph.replay(side)
    side.sync().result(timeout=TIMEOUT_S)
    np.testing.assert_array_equal(read_array(cuda, y, np.float32), np.full(N, 6))


def test_cupy_sees_the_replayed_results(cuda):
    cupy = pytest.importorskip("cupy")
    x = cuda.create_from_slice(np.ones(N, np.float32))
    y = cuda.create_from_slice(np.zeros(N, np.float32))
    with cuda.capture() as graph:
        _chain(cuda, x, y, links=4)
    graph.replay()
    cuda.sync().result(timeout=TIMEOUT_S)
    binding = y.binding()
    memory = cupy.cuda.UnownedMemory(binding.resource + binding.offset_bytes, 4 * N, y)
    view = cupy.ndarray((N,), cupy.float32, cupy.cuda.MemoryPointer(memory, 0))
    assert float(view.sum()) == pytest.approx(10.0 * N)


def test_a_fresh_thread_launches_and_replays_on_a_pinned_client(cuda):
    """A thread that never touched CUDA launches and replays on a stream another thread made:
    the device is current for it without ruda asking per launch."""
    pinned = cuda.fixed_execution_queue()
    x = pinned.create_from_slice(np.ones(N, np.float32))
    y = pinned.create_from_slice(np.zeros(N, np.float32))
    with pinned.capture() as graph:
        _chain(pinned, x, y, links=2)  # adds 1 + 2
    errors: list[BaseException] = []

    def work() -> None:
        try:
            _chain(pinned, x, y, links=1)  # adds 1
            graph.replay()
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(TIMEOUT_S)
    assert not errors
    np.testing.assert_array_equal(read_array(pinned, y, np.float32), np.full(N, 4))
