"""Prepared launches: checked and built once, replayed with the same guarantees as launch."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, bf16, f32, i32, kernel
from ruda_core.runtime import LaunchConfigError, RudaCount, RudaDim, ServerError, TimingMethod
from ruda_core.testing.runner import TIMEOUT_S, read_array

N = 512


@kernel
def add_into(src: Array[i32], dst: Array[i32]):
    i = ABSOLUTE_POS
    if i < dst.len():
        dst[i] = dst[i] + src[i]


@kernel
def halve_bf16(x: Array[bf16]):
    i = ABSOLUTE_POS
    if i < x.len():
        x[i] = x[i] * bf16(0.5)


def test_replays_equal_repeated_launches(client):
    src = np.arange(N, dtype=np.int32)
    a = client.create_from_slice(src)
    out = client.create_from_slice(np.zeros(N, np.int32))
    prepared = add_into.prepare(
        client, RudaCount(N // 128), RudaDim(128), ArrayArg(a, N), ArrayArg(out, N)
    )
    for _ in range(5):
        prepared.launch()
    np.testing.assert_array_equal(read_array(client, out, np.int32), 5 * src)


def test_prepared_launch_keeps_its_arguments_alive(client):
    src = np.full(N, 7, np.int32)
    prepared = add_into.prepare(
        client,
        RudaCount(N // 128),
        RudaDim(128),
        ArrayArg(client.create_from_slice(src), N),
        ArrayArg(client.create_from_slice(np.zeros(N, np.int32)), N),
    )
    prepared.launch()
    out = prepared.keep[1].handle  # type: ignore[index]
    np.testing.assert_array_equal(read_array(client, out, np.int32), src)


def test_replay_on_another_thread_is_ordered_after_the_writer(client, spin):
    out = client.create_from_slice(np.zeros(N, np.int32))
    src = client.empty(4 * N)
    prepared = add_into.prepare(
        client, RudaCount(N // 128), RudaDim(128), ArrayArg(src, N), ArrayArg(out, N)
    )
    spin.launch(client.empty(4 * spin.units))  # keep this thread's stream busy first
    client.write(src, np.full(N, 3, np.int32))
    errors: list[BaseException] = []

    def consumer() -> None:
        try:
            prepared.launch()  # on the consumer thread's own stream
            client.sync().result(timeout=TIMEOUT_S)
        except BaseException as exc:  # reported to the test thread below
            errors.append(exc)

    worker = threading.Thread(target=consumer)
    worker.start()
    worker.join(TIMEOUT_S)
    assert not errors, errors[0]
    np.testing.assert_array_equal(read_array(client, out, np.int32), np.full(N, 3))


def test_bad_arguments_and_unsupported_kernels_are_refused_at_prepare(client):
    handle = client.empty(16)
    with pytest.raises(LaunchConfigError):
        add_into.prepare(client, RudaCount(1), RudaDim(4), ArrayArg(handle, 8), ArrayArg(handle, 4))
    if client.features().supports(Elem.BF16):
        return
    with pytest.raises(ServerError, match="bf16"):
        halve_bf16.prepare(client, RudaCount(1), RudaDim(4), ArrayArg(handle, 4))


def test_profile_sees_replays(client):
    x = client.create_from_slice(np.ones(N, np.int32))
    out = client.create_from_slice(np.zeros(N, np.int32))
    prepared = add_into.prepare(
        client, RudaCount(N // 128), RudaDim(128), ArrayArg(x, N), ArrayArg(out, N)
    )

    def region() -> None:
        for _ in range(3):
            prepared.launch()

    _, duration = client.profile(region)
    if duration.method is TimingMethod.DEVICE:
        assert [e.name for e in duration.trace.events if e.kind == "kernel"] == ["add_into"] * 3
    np.testing.assert_array_equal(read_array(client, out, np.int32), np.full(N, 3))


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
def test_prepare_unchecked_follows_the_mode_in_force(client):
    from ruda_core.runtime import BoundsCheckMode

    handle = client.create_from_slice(np.zeros(4, np.float32))

    @kernel
    def scribble(x: Array[f32]):
        x[ABSOLUTE_POS] = f32(1)

    BoundsCheckMode.configure("validate")
    try:
        prepared = scribble.prepare_unchecked(client, RudaCount(1), RudaDim(8), ArrayArg(handle, 4))
    finally:
        BoundsCheckMode.configure(None)
    prepared.launch()
    with pytest.raises(ServerError, match=r"scribble accessed x\[4\]"):
        client.sync().result(timeout=TIMEOUT_S)
    np.testing.assert_array_equal(read_array(client, handle, np.float32), np.ones(4))
