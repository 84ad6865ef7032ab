"""Profiling: on a device with device timestamps (``Feature.DEVICE_TIMING``) execution and
transfer are measured apart and the trace exports to Chrome's format with one track per stream;
on one without them the profile is timed on the host (``TimingMethod.SYSTEM``), as the device
declares."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, kernel
from ruda_core.runtime import Feature, RudaCount, RudaDim, ServerError, StreamId, TimingMethod
from ruda_core.testing.markers import requires
from ruda_core.testing.runner import TIMEOUT_S

N = 1 << 16


@kernel
def double(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * f32(2)


def _work(client, x):
    def region():
        handle, out = client.create_from_slice(x), client.empty(x.nbytes)
        double.launch(
            client, RudaCount(N // 256), RudaDim(256), ArrayArg(handle, N), ArrayArg(out, N)
        )
        return client.read_async([out])

    return region


def _profiled(client):
    """The profile of an upload, a kernel and a read of ``N`` floats, after checking the
    kernel's result; the kernel is built before the profile."""
    x = np.arange(N, dtype=np.float32)
    one = client.create_from_slice(np.zeros(1, np.float32))
    double.launch(client, RudaCount(1), RudaDim(1), ArrayArg(one, 1), ArrayArg(client.empty(4), 1))
    client.sync().result(timeout=TIMEOUT_S)
    future, duration = client.profile(_work(client, x), "double")
    np.testing.assert_array_equal(np.frombuffer(future.result(TIMEOUT_S)[0], np.float32), 2 * x)
    assert duration.name == "double"
    assert duration.submission_ns > 0
    assert duration.total_ns == duration.execution_ns + duration.transfer_ns
    return duration


def test_profile_is_timed_as_the_device_declares(client):
    """Device timestamps where the device declares ``DEVICE_TIMING``; else the host's clock:
    ``execution_ns`` is the wall time from the region's start until its work is done
    (transfers included), ``transfer_ns`` 0 and the trace empty."""
    duration = _profiled(client)
    assert duration.execution_ns > 0
    if client.features().has(Feature.DEVICE_TIMING):
        assert duration.method is TimingMethod.DEVICE
    else:
        assert duration.method is TimingMethod.SYSTEM
        assert duration.execution_ns >= duration.submission_ns
        assert duration.transfer_ns == 0
        assert duration.trace.events == ()


@requires(Feature.DEVICE_TIMING)
def test_profile_reports_execution_and_transfer_separately(client):
    duration = _profiled(client)
    assert duration.execution_ns > 0 and duration.transfer_ns > 0
    kinds = sorted(e.kind for e in duration.trace.events)
    assert kinds == ["kernel", "transfer", "transfer"]  # the upload, the kernel, the read
    kernel_ns = sum(e.duration_ns for e in duration.trace.events if e.kind == "kernel")
    assert duration.execution_ns == kernel_ns


@requires(Feature.DEVICE_TIMING)
def test_trace_has_one_track_per_stream(client, tmp_path):
    pinned = []
    for _ in range(2):
        c = client.fixed_execution_queue()
        c.set_stream(StreamId.new())
        pinned.append(c)
    x = np.ones(N, np.float32)

    def region():
        return [_work(c, x)() for c in pinned]

    _, duration = client.profile(region)
    path = tmp_path / "trace.json"
    duration.trace.save_chrome(path)
    data = json.loads(path.read_text())
    spans = [e for e in data["traceEvents"] if e["ph"] == "X"]
    names = {
        e["tid"]: e["args"]["name"]
        for e in data["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name"
    }
    assert len({e["tid"] for e in spans}) == 2
    assert set(names) == {e["tid"] for e in spans}
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in spans)


def test_profiles_do_not_nest_and_end_when_the_region_raises(client):
    def inner():
        return client.profile(lambda: None)

    with pytest.raises(ServerError, match="already running"):
        client.profile(inner)

    def failing():
        raise KeyError("boom")

    with pytest.raises(KeyError):
        client.profile(failing)
    _, duration = client.profile(lambda: None)  # the failed profile has ended
    assert duration.trace.events == ()
    if duration.method is TimingMethod.DEVICE:  # else the wall time until a sync completes
        assert duration.execution_ns == 0
