"""``os.fork()`` after using a device: the NumPy device opens again in the child, OpenCL refuses
with a clear error, and the servers the child inherited refuse work instead of hanging."""

from __future__ import annotations

import ast
import os

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, kernel, u32
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim
from ruda_core.testing.processes import in_forked_child
from ruda_core.testing.runner import read_array
from ruda_cpu import CpuDevice, CpuRuntime

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX only")


@kernel
def times_three(x: Array[u32], out: Array[u32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * u32(3)


def _times_three(client: ComputeClient) -> list[int]:
    x = client.create_from_slice(np.arange(4, dtype=np.uint32))
    out = client.empty(16)
    times_three.launch(client, RudaCount(1), RudaDim(4), ArrayArg(x, 4), ArrayArg(out, 4))
    return read_array(client, out, np.uint32).tolist()


def _errors_of(*attempts) -> list[str]:
    errors = []
    for attempt in attempts:
        try:
            attempt()
        except Exception as exc:  # each attempt's error is the result
            errors.append(f"{type(exc).__name__}: {exc}")
        else:
            errors.append("no error")
    return errors


def test_fork_child_opens_the_numpy_device_again():
    parent = ruda.client("cpu")
    handle = parent.create_from_slice(np.arange(4, dtype=np.uint32))
    assert _times_three(parent) == [0, 3, 6, 9]

    def child() -> object:
        refused = _errors_of(
            lambda: parent.empty(4),
            lambda: parent.read_one(handle),
            lambda: parent.sync(),
            lambda: parent.fixed_execution_queue().flush(),
        )
        fresh = ruda.client("cpu")
        assert fresh is CpuRuntime.client(CpuDevice()) is ComputeClient.load(CpuDevice())
        assert fresh is not parent
        return refused, _times_three(fresh)

    outcome = in_forked_child(child)
    assert outcome.value is not None, outcome.describe()
    refused, result = ast.literal_eval(outcome.value)
    assert result == [0, 3, 6, 9]
    for error in refused:
        assert error.startswith("ServerUnhealthy: CpuServer of cpu was created"), error
        assert f"created in process {os.getpid()}" in error
        assert "Open the device again in the child" in error and "'spawn'" in error
    assert _times_three(parent) == [0, 3, 6, 9]  # the parent is untouched


def test_fork_child_gets_a_clear_error_for_opencl():
    try:
        parent = ruda.client("opencl:0")
    except Exception as exc:  # no OpenCL device here: nothing to fork from
        pytest.skip(f"opencl:0 is not available: {exc}")
    from ruda_opencl import OpenCLDevice, OpenCLRuntime

    assert _times_three(parent) == [0, 3, 6, 9]

    def child() -> object:
        return _errors_of(
            lambda: parent.create_from_slice(b"1234"),
            lambda: OpenCLRuntime.client(OpenCLDevice(0)),
        )

    outcome = in_forked_child(child)
    assert outcome.value is not None, outcome.describe()
    inherited, reopened = ast.literal_eval(outcome.value)
    assert inherited.startswith("ServerUnhealthy: OpenCLServer of opencl:0 was created"), inherited
    assert "Open the device again" not in inherited and "'spawn'" in inherited
    assert reopened.startswith("ServerUnhealthy: OpenCLServer cannot be used in process"), reopened
    assert "does not survive fork()" in reopened and "'spawn'" in reopened
    assert _times_three(parent) == [0, 3, 6, 9]


def test_fork_retires_servers_outside_the_registry_too(private_client):
    assert _times_three(private_client) == [0, 3, 6, 9]
    outcome = in_forked_child(lambda: _errors_of(lambda: private_client.empty(4)))
    assert outcome.value is not None, outcome.describe()
    (error,) = ast.literal_eval(outcome.value)
    assert error.startswith("ServerUnhealthy: CpuServer") and "'spawn'" in error, error
    assert private_client.server.retired is None  # only in the child
    assert _times_three(private_client) == [0, 3, 6, 9]


def test_fork_child_gets_a_clear_error_for_a_result_queued_before_the_fork():
    parent = ruda.client("cpu")
    x = parent.create_from_slice(np.arange(4, dtype=np.uint32))
    out = parent.empty(16)
    times_three.launch(parent, RudaCount(1), RudaDim(4), ArrayArg(x, 4), ArrayArg(out, 4))
    synced, read = parent.sync(), parent.read_async([out])

    def child() -> object:
        return [synced.done(), read.done()], _errors_of(
            lambda: synced.result(timeout=30), lambda: read.result()
        )

    outcome = in_forked_child(child)
    assert outcome.value is not None, outcome.describe()
    done, errors = ast.literal_eval(outcome.value)
    assert done == [True, True]
    for error in errors:
        assert error.startswith("ServerUnhealthy: this result was awaited in process"), error
        assert "the child never sees it complete" in error and "'spawn'" in error
    synced.result(timeout=30)  # the parent's futures are untouched
    assert np.frombuffer(read.result()[0], np.uint32).tolist() == [0, 3, 6, 9]
