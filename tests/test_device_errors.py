"""Errors of the GPU backends that the conformance suite cannot state device-independently: a
build failure shows the driver's log and the numbered generated source, and the client stays
usable; a driver whose build raises an untranslated exception fails like one. (CUDA's
out-of-memory test is in tests/cuda.)"""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, kernel
from ruda_core.runtime import CompilationError, KernelTask, RudaCount, RudaDim
from ruda_core.testing.faults import GARBAGE_LINE, BrokenSourceTask


@kernel
def fill(x: Array[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        x[i] = f32(7)


@pytest.mark.parametrize("name", ["opencl:0", "cuda:0"])
def test_build_failure_shows_the_driver_log_and_numbered_source(open_device, name):
    client = open_device(name)
    handle = client.empty(64)
    task = BrokenSourceTask(KernelTask(fill.definition()))
    client.launch(task, RudaCount(1), RudaDim(16), [handle.binding()], (), [16])
    with pytest.raises(CompilationError) as info:
        client.flush()
    message = str(info.value)
    assert "fill" in message and "--- generated" in message
    garbage = GARBAGE_LINE.strip()
    numbered = [
        line for line in message.splitlines() if garbage in line and line.split()[0].isdigit()
    ]
    assert numbered, "the generated source is listed with line numbers, the bad line included"
    assert info.value.file is not None and info.value.file.endswith(__file__.split("/")[-1])
    # the client stays usable
    fill.launch(client, RudaCount(1), RudaDim(16), ArrayArg(handle, 16))
    assert np.all(np.frombuffer(client.read_one(handle), np.float32) == 7)


def test_a_driver_build_that_raises_a_plain_exception_fails_and_poisons_as_a_compile_error(
    private_client, monkeypatch
):
    """A driver whose ``build`` raises something other than a ``ServerError`` (a third-party
    driver that did not translate its error) fails the launch as a ``CompilationError`` naming
    the kernel and the device, at the next sync, and poisons what it would have written."""

    def build(compiled):
        raise RuntimeError("toolchain on fire")

    monkeypatch.setattr(private_client.server.driver, "build", build)
    handle = private_client.create_from_slice(np.zeros(16, np.float32))
    fill.launch(private_client, RudaCount(1), RudaDim(16), ArrayArg(handle, 16))  # raises nothing
    with pytest.raises(CompilationError, match="kernel fill could not be built for ") as info:
        private_client.sync().result(timeout=30)
    assert "RuntimeError: toolchain on fire" in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)
    with pytest.raises(CompilationError, match="toolchain on fire"):
        private_client.read_one(handle)  # poisoned: no stale zeros
