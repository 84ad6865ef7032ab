"""``client.profile`` on a device without device timestamps (``Feature.DEVICE_TIMING`` left out):
the region is timed on the host, as the contract says, and the profile says so."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, kernel
from ruda_core.runtime import (
    ComputeClient,
    DeviceId,
    Feature,
    Features,
    RudaCount,
    RudaDim,
    ServerError,
    TimingMethod,
)
from ruda_cpu import CpuRuntime
from ruda_cpu.server import CpuServer

N = 1 << 14
_ids = itertools.count(200)


class _UntimedServer(CpuServer):
    """The NumPy device, declaring no device timestamps."""

    def features(self) -> Features:
        found = super().features()
        return Features(found.features - {Feature.DEVICE_TIMING}, found.elems, found.matrices)


@kernel
def triple(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * f32(3)


@pytest.fixture
def client() -> ComputeClient:
    index = next(_ids)
    return ComputeClient(
        ("untimed-cpu", index), _UntimedServer(DeviceId(0, index)), None, CpuRuntime
    )


def test_a_device_without_timestamps_profiles_on_the_host_clock(client):
    x = np.arange(N, dtype=np.float32)

    def region():
        handle, out = client.create_from_slice(x), client.empty(x.nbytes)
        triple.launch(
            client, RudaCount(N // 256), RudaDim(256), ArrayArg(handle, N), ArrayArg(out, N)
        )
        return client.read_async([out])

    future, duration = client.profile(region, "triple")
    np.testing.assert_array_equal(np.frombuffer(future.result(30)[0], np.float32), 3 * x)
    assert duration.method is TimingMethod.SYSTEM
    assert duration.execution_ns >= duration.submission_ns > 0
    assert duration.transfer_ns == 0
    assert duration.trace.events == ()


def test_profiles_timed_on_the_host_do_not_nest_either(client):
    with pytest.raises(ServerError, match="already running"):
        client.profile(lambda: client.profile(lambda: None))

    def failing():
        raise KeyError("boom")

    with pytest.raises(KeyError):
        client.profile(failing)
    _, duration = client.profile(lambda: None)  # neither failed profile is left running
    assert duration.method is TimingMethod.SYSTEM
