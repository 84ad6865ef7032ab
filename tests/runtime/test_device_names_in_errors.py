"""Errors name devices as users name them (``cpu``, ``opencl:0``): memory of another device,
a graph replayed elsewhere, a handle copied through the wrong client and the handles' own
reprs say which device, with no device ids or addresses."""

from __future__ import annotations

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core.errors import CaptureError, InteropError, InvalidHandle
from ruda_core.lang import ABSOLUTE_POS, Array, f32, kernel
from ruda_core.runtime import RudaCount, RudaDim

#: each local device, with another local device to misuse its memory on
PAIRS = [("cpu", "opencl:0"), ("opencl:0", "cpu")]


@kernel
def double(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = 2.0 * x[i]


def _says(message: str, *names: str) -> None:
    for name in names:
        assert name in message, message
    assert "DeviceId(" not in message and "0x" not in message, message


@pytest.mark.parametrize(("home", "other"), PAIRS)
def test_memory_of_another_device_is_refused_naming_both_devices(open_device, home, other):
    open_device(home)
    client = open_device(other)
    t = ruda.asarray(np.ones(8, np.float32), home)
    for misuse in (
        lambda: double.launch(client, RudaCount(1), RudaDim(8), t, t),
        lambda: double.prepare(client, RudaCount(1), RudaDim(8), t, t),
        lambda: client.read_one(t.handle),
        lambda: client.copy(t.handle, client.empty(32)),
        lambda: client.write(t.handle, bytes(32)),
        lambda: client.to_client(t.handle, ruda.client(home)),
    ):
        with pytest.raises(InvalidHandle) as info:
            misuse()
        _says(str(info.value), home, other)


@pytest.mark.parametrize(("home", "other"), PAIRS)
def test_a_dynamic_count_of_another_device_is_named_as_the_count(open_device, home, other):
    open_device(home)
    client = open_device(other)
    counts = ruda.asarray(np.ones(3, np.uint32), home)
    count = RudaCount.dynamic(counts.handle.binding())
    x = ruda.asarray(np.ones(8, np.float32), client)
    for misuse in (
        lambda: double.launch(client, count, RudaDim(8), x, x),
        lambda: double.prepare(client, count, RudaDim(8), x, x),
    ):
        with pytest.raises(InvalidHandle) as info:
            misuse()
        _says(str(info.value), "the dynamic count of kernel double", home, other)
    with pytest.raises(InvalidHandle) as info, client.capture():
        double.launch(client, count, RudaDim(8), x, x)
    _says(str(info.value), "the dynamic count of kernel double", home, other)


@pytest.mark.parametrize(("home", "other"), PAIRS)
def test_a_graph_replayed_on_another_device_names_both(open_device, home, other):
    client = open_device(home)
    elsewhere = open_device(other)
    x = ruda.asarray(np.ones(8, np.float32), client)
    with client.capture() as graph:
        double.launch(client, RudaCount(1), RudaDim(8), x, x)
    _says(repr(graph), home)
    with pytest.raises(CaptureError) as info:
        graph.replay(elsewhere)
    _says(str(info.value), home, other)


@pytest.mark.parametrize("name", ["cpu", "opencl:0"])
def test_handles_and_bindings_name_their_device(open_device, name):
    client = open_device(name)
    handle = client.empty(32)
    _says(repr(handle), name)
    _says(repr(handle.binding()), name)


def test_host_memory_refused_by_a_device_names_it_and_the_copy_to_make(open_device):
    client = open_device("opencl:0")
    with pytest.raises(InteropError) as info:
        ruda.from_dlpack(np.zeros(4, np.float32), client)
    _says(str(info.value), 'ruda_core.asarray(array, "opencl:0")')
