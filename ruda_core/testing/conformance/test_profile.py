"""Profiling: execution and transfer are measured apart, and the trace exports to Chrome's
format with one track per stream."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, kernel
from ruda_core.runtime import RudaCount, RudaDim, ServerError, StreamId, TimingMethod
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


def test_profile_reports_execution_and_transfer_separately(client):
    x = np.arange(N, dtype=np.float32)
    double.launch(
        client, RudaCount(1), RudaDim(1), ArrayArg(client.empty(4), 1), ArrayArg(client.empty(4), 1)
    )  # built outside the profile
    client.sync().result(timeout=TIMEOUT_S)
    future, duration = client.profile(_work(client, x), "double")
    np.testing.assert_array_equal(np.frombuffer(future.result(TIMEOUT_S)[0], np.float32), 2 * x)
    assert duration.name == "double"
    assert duration.submission_ns > 0
    assert duration.execution_ns > 0 and duration.transfer_ns > 0
    if duration.method is TimingMethod.DEVICE:
        kinds = sorted(e.kind for e in duration.trace.events)
        assert kinds == ["kernel", "transfer", "transfer"]  # the upload, the kernel, the read
        kernel_ns = sum(e.duration_ns for e in duration.trace.events if e.kind == "kernel")
        assert duration.execution_ns == kernel_ns


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
    if duration.method is not TimingMethod.DEVICE:
        pytest.skip(f"unsupported: {client.device} has no device timestamps for a trace")
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
    assert duration.execution_ns == 0
