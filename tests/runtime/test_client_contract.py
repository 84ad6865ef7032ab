"""The client's contract: one client per device, init/load panics, stream queries, handles of
another device, metadata values, properties and their fingerprint."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core.ir import Elem
from ruda_core.lang import ABSOLUTE_POS, Array, kernel, u32
from ruda_core.runtime import (
    ComputeClient,
    DeviceId,
    InvalidHandle,
    KernelTask,
    LaunchConfigError,
    RudaCount,
    RudaDim,
    RudaFuture,
    RudaPanic,
    StreamId,
)
from ruda_cpu import CpuDevice, CpuRuntime
from ruda_cpu.server import CpuServer


def test_runtime_client_is_the_one_client():
    assert CpuRuntime.client(CpuDevice()) is ruda.client("cpu")
    assert ComputeClient.load(CpuDevice()) is ruda.client("cpu")


def test_init_twice_panics():
    ruda.client("cpu")
    with pytest.raises(RudaPanic, match="already registered"):
        ComputeClient.init(CpuDevice(), CpuServer(DeviceId(0, 0)))


def test_load_requires_initialised_server():
    with pytest.raises(RudaPanic, match="no server is initialised"):
        ComputeClient.load(("never-initialised", 1))


def test_init_registers_a_new_device():
    key = ("custom-cpu", 42)
    client = ComputeClient.init(key, CpuServer(DeviceId(0, 42)))
    assert ComputeClient.load(key) is client


def test_handle_of_another_device_is_refused(private_client):
    ours = ruda.client("cpu")
    handle = private_client.create_from_slice(b"12345678")
    with pytest.raises(InvalidHandle, match="another device"):
        ours.read_one(handle)
    with pytest.raises(InvalidHandle, match="another device"):
        ours.write(handle, b"abcdefgh")


def test_binding_of_dropped_handle_is_refused():
    client = ruda.client("cpu")
    binding = client.create_from_slice(b"abcd").binding()  # the handle is dropped at once
    with pytest.raises(InvalidHandle, match="dropped"):
        client.server.read([binding], client.execution_stream().value)


def test_each_thread_has_its_own_stream():
    client = ruda.client("cpu")
    mine = client.execution_stream()
    assert client.execution_stream() == mine
    other: list[StreamId] = []
    t = threading.Thread(target=lambda: other.append(client.execution_stream()))
    t.start()
    t.join()
    assert other[0] != mine


def test_same_execution_queue_truth_table(private_client):
    client = ruda.client("cpu")
    assert client.same_execution_queue(client)
    fixed = client.fixed_execution_queue()
    assert fixed is not client and fixed.same_execution_queue(client)
    assert not client.same_execution_queue(private_client)  # another server
    answers: list[bool] = []
    t = threading.Thread(target=lambda: answers.append(fixed.same_execution_queue(client)))
    t.start()
    t.join()
    assert answers == [False]  # fixed keeps this thread's stream; client resolves the other's


def test_set_stream_pins_the_stream():
    client = ruda.client("cpu").fixed_execution_queue()
    stream = StreamId.new()
    client.set_stream(stream)
    assert client.execution_stream() == stream
    handle = client.create_from_slice(b"on a pinned stream")
    assert bytes(client.read_one(handle)) == b"on a pinned stream"


@pytest.mark.parametrize("stream", [5, "1", None])
def test_set_stream_refuses_what_is_not_a_stream(stream):
    client = ruda.client("cpu").fixed_execution_queue()
    before = client.execution_stream()
    with pytest.raises(TypeError, match="set_stream takes a StreamId"):
        client.set_stream(stream)
    assert client.execution_stream() == before  # nothing changed


def test_properties_and_fingerprint_are_stable():
    client = ruda.client("cpu")
    props = client.properties()
    assert props.max_units_per_ruda >= 256 and props.plane_dim == 32
    assert client.properties_fingerprint() == client.properties_fingerprint()
    assert len(client.properties_fingerprint()) == 32
    assert client.device_id() == DeviceId(0, 0)
    assert client.enumerate_all_devices() == [DeviceId(0, 0)]
    assert client.device_count() == 1 and client.device_count_total() == 1
    assert client.name() == "cpu"
    assert all(client.features().supports(e) for e in Elem)


@kernel
def _ones(out: Array[u32]):
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = u32(1)


@pytest.mark.parametrize("length", [-1, 3.5, "4", True, 1 << 32])
def test_a_metadata_value_a_u32_cannot_hold_is_refused_before_anything_runs(length):
    client = ruda.client("cpu")
    out = client.create_from_slice(np.zeros(4, np.uint32))
    task = KernelTask(_ones.definition())
    with pytest.raises(LaunchConfigError, match="metadata value 0 of kernel _ones"):
        client.launch(task, RudaCount(1), RudaDim(4), [out.binding()], [], [length])
    client.launch(task, RudaCount(1), RudaDim(4), [out.binding()], [], [np.uint32(4)])
    assert np.frombuffer(client.read_one(out), np.uint32).tolist() == [1, 1, 1, 1]


@pytest.mark.parametrize("timeout", ["1", float("nan"), True, [1]])
def test_a_timeout_that_is_no_number_is_refused_and_the_read_still_completes(timeout):
    client = ruda.client("cpu")
    handle = client.create_from_slice(b"still here")
    future = client.read_async([handle])
    with pytest.raises(TypeError, match="timeout must be a number of seconds"):
        future.result(timeout)
    with pytest.raises(TypeError, match="timeout must be a number of seconds"):
        client.read_one(handle, timeout)
    assert bytes(future.result(30)[0]) == b"still here"
    with pytest.raises(TypeError, match="timeout must be a number of seconds"):
        future.result(timeout)  # the same once it is done


def test_an_interrupted_wait_leaves_the_future_to_a_later_wait():
    """Ctrl-C while a future waits interrupts the waiter, not the work: the next ``result``
    waits again and returns the value."""
    interrupts = [KeyboardInterrupt()]

    def wait(timeout: float | None) -> int:
        if interrupts:
            raise interrupts.pop()
        return 7

    future: RudaFuture[int] = RudaFuture(wait, lambda: not interrupts)
    with pytest.raises(KeyboardInterrupt):
        future.result()
    assert future.result() == 7


def test_a_handle_where_a_binding_belongs_is_refused_naming_the_fix():
    client = ruda.client("cpu")
    out = client.create_from_slice(np.zeros(4, np.uint32))
    task = KernelTask(_ones.definition())
    with pytest.raises(LaunchConfigError, match=r"binding 0 .* \(handle.binding\(\) gives one\)"):
        client.launch(task, RudaCount(1), RudaDim(4), [out], [], [4])
    assert np.frombuffer(client.read_one(out), np.uint32).tolist() == [0, 0, 0, 0]
