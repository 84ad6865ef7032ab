"""Launch arguments and limits: parameters in any order, and scalars of every type at their edges,
reach the kernel bit for bit; a launch over a device limit (units per cube, cube count, shared
memory) is ``TooManyResources`` and a malformed one (wrong element type, too short a handle,
another device's handle, a dropped binding) a clear error, all raised by ``launch`` itself before
anything runs."""

from __future__ import annotations

import numpy as np
import pytest

import ruda_core
from ruda_core.ir import Elem
from ruda_core.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
    Array,
    ArrayArg,
    Comptime,
    SharedMemory,
    f32,
    i64,
    kernel,
    sync_units,
    u8,
    u32,
)
from ruda_core.plugins import REFERENCE_BACKEND
from ruda_core.runtime import (
    InvalidHandle,
    KernelTask,
    LaunchConfigError,
    RudaCount,
    RudaDim,
    TooManyResources,
)
from ruda_core.testing.irbuild import KernelBuilder, const
from ruda_core.testing.markers import need
from ruda_core.testing.runner import TIMEOUT_S, read_array, run_definition

N = 64
SENTINEL = 0x5EEDF00D


@kernel
def conformance_mark(out: Array[u32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = u32(1)


@kernel
def conformance_mixed_params(
    alpha: f32, x: Array[f32], k: u32, y: Array[f32], flag: bool, out: Array[f32], big: i64
):
    i = ABSOLUTE_POS
    if i < out.len():
        v = alpha * x[i] + y[i] + f32(k)
        if flag:
            v = v + f32(big)
        out[i] = v


@kernel
def conformance_big_shared(out: Array[u32], LENGTH: Comptime[int]):
    tile = SharedMemory(u8, LENGTH)
    tile[UNIT_POS] = u8(1)
    sync_units()
    out[ABSOLUTE_POS] = u32(tile[0])


@kernel
def conformance_scale(a: f32, x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i]


def _target(client):
    return client.create_from_slice(np.full(N, SENTINEL, dtype=np.uint32))


def _untouched(client, handle) -> None:
    client.sync().result(timeout=TIMEOUT_S)  # nothing was enqueued that could fail
    np.testing.assert_array_equal(read_array(client, handle, np.uint32), np.full(N, SENTINEL))


def test_scalars_and_arrays_in_any_order_reach_the_kernel(client):
    rng = np.random.default_rng(2)
    x, y = (rng.integers(-50, 50, N).astype(np.float32) for _ in range(2))
    handles = [client.create_from_slice(v) for v in (x, y)]
    out = client.empty(4 * N)
    for flag in (False, True):
        conformance_mixed_params.launch(
            client,
            RudaCount(1),
            RudaDim(N),
            2.0,
            ArrayArg(handles[0], N),
            3,
            ArrayArg(handles[1], N),
            flag,
            ArrayArg(out, N),
            1 << 40,
        )
        expected = 2.0 * x + y + 3 + (np.float32(1 << 40) if flag else 0)
        np.testing.assert_array_equal(read_array(client, out, np.float32), expected)


def test_each_launch_passes_its_own_scalars_even_when_they_compare_equal(client):
    # -0.0 == 0.0 and NaN != NaN: a backend that skips setting unchanged arguments must still
    # pass each launch the sign of its zero
    x = client.create_from_slice(np.ones(N, np.float32))
    out = client.empty(4 * N)
    for a in (0.0, -0.0, 0.0, -0.0, float("nan"), float("nan"), 2.0, 2.0):
        conformance_scale.launch(
            client, RudaCount(1), RudaDim(N), a, ArrayArg(x, N), ArrayArg(out, N)
        )
        got = read_array(client, out, np.float32)
        want = np.float32(a) * np.ones(N, np.float32)
        np.testing.assert_array_equal(got, want)  # NaN matches NaN
        if not np.isnan(a):  # the sign of a NaN product is not specified
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def _edge_values(elem: Elem) -> list[bool | int | float]:
    if elem is Elem.BOOL:
        return [True, False]
    if elem.is_float:
        top = float(np.finfo(elem.numpy).max)
        return [0.25, -1.0, -0.0, float("inf"), -float("inf"), 1.5, top, -top]
    info = np.iinfo(elem.numpy)
    return [0, 1, int(info.max), int(info.min), *([-1, -2] if elem.is_signed else [7])]


@pytest.mark.parametrize("elem", list(Elem), ids=str)
def test_a_scalar_of_every_type_reaches_the_kernel_bit_for_bit(client, elem):
    need(client, elem)
    values = _edge_values(elem)
    k = KernelBuilder(f"conformance_scalars_{elem}")
    out = k.array("out", elem)
    for j, p in enumerate([k.scalar(f"s{j}", elem) for j in range(len(values))]):
        k.store(out, const(j, Elem.U32), p)
    want = np.array(values, elem.numpy)
    (got,) = run_definition(client, k.build(), [np.zeros(len(values), elem.numpy)], values)
    bits = np.dtype(f"u{elem.nbytes}")
    np.testing.assert_array_equal(got.view(bits), want.view(bits), f"{elem} scalars")


def test_too_many_units_per_cube(client):
    props = client.properties()
    out = _target(client)
    dims = [RudaDim(props.max_units_per_ruda + 1)]
    x, y, _ = props.max_ruda_dim
    if x * y > props.max_units_per_ruda:
        dims.append(RudaDim(x, y))
    for dim in dims:
        with pytest.raises(TooManyResources, match="RudaDim"):
            conformance_mark.launch(client, RudaCount(1), dim, ArrayArg(out, N))
    _untouched(client, out)


def test_too_many_units_along_one_axis(client):
    props = client.properties()
    out = _target(client)
    for axis in range(3):
        sizes = [1, 1, 1]
        sizes[axis] = props.max_ruda_dim[axis] + 1
        with pytest.raises(TooManyResources):
            conformance_mark.launch(client, RudaCount(1), RudaDim(*sizes), ArrayArg(out, N))
    _untouched(client, out)


def test_too_many_cubes(client):
    limits = client.properties().max_ruda_count
    out = _target(client)
    tested = 0
    for axis in range(3):
        if limits[axis] >= 2**32 - 1:
            continue
        sizes = [1, 1, 1]
        sizes[axis] = limits[axis] + 1
        with pytest.raises(TooManyResources):
            conformance_mark.launch(client, RudaCount(*sizes), RudaDim(1), ArrayArg(out, N))
        tested += 1
    if not tested:
        pytest.skip(f"{client.device} allows 2**32-1 cubes on every axis")
    _untouched(client, out)


def test_too_much_shared_memory(client):
    limit = client.properties().max_shared_memory_nbytes
    out = _target(client)
    with pytest.raises(TooManyResources, match="shared memory"):
        conformance_big_shared.launch(
            client, RudaCount(1), RudaDim(1), ArrayArg(out, N), LENGTH=limit + 1
        )
    _untouched(client, out)
    conformance_big_shared.launch(client, RudaCount(1), RudaDim(N), ArrayArg(out, N), LENGTH=N)
    np.testing.assert_array_equal(read_array(client, out, np.uint32), np.ones(N))


def test_wrong_element_type_is_refused(client):
    out = _target(client)
    with pytest.raises(LaunchConfigError, match="f32"):
        conformance_mark.launch(client, RudaCount(1), RudaDim(N), ArrayArg(out, N, elem=f32))
    _untouched(client, out)


def test_length_beyond_the_handle_is_refused(client):
    out = _target(client)
    with pytest.raises(LaunchConfigError, match="holds"):
        conformance_mark.launch(client, RudaCount(1), RudaDim(N), ArrayArg(out, N + 1))
    _untouched(client, out)


def test_wrong_argument_count_and_scalar_range_are_refused(client):
    out = _target(client)
    with pytest.raises(LaunchConfigError, match="arguments"):
        conformance_mark.launch(client, RudaCount(1), RudaDim(N), ArrayArg(out, N), 3)
    x = client.create_from_slice(np.zeros(N, dtype=np.float32))
    with pytest.raises(LaunchConfigError, match="outside"):
        conformance_mixed_params.launch(
            client,
            RudaCount(1),
            RudaDim(N),
            1.0,
            ArrayArg(x, N),
            -1,
            ArrayArg(x, N),
            False,
            ArrayArg(x, N),
            0,
        )
    _untouched(client, out)


def _foreign_client(client):
    """A client of another device's server, if this machine has one."""
    for name in [REFERENCE_BACKEND, *(str(d) for d in ruda_core.enumerate_all_devices())]:
        try:
            other = ruda_core.client(name)
        except Exception:  # a device that cannot be opened is simply not a candidate
            continue
        if other.server is not client.server:
            return other
    pytest.skip("needs a second device to make a foreign handle")


def test_handle_of_another_device_is_refused(client):
    """Launched, launched unchecked or prepared: refused before anything runs, naming the
    kernel's argument."""
    foreign = _foreign_client(client)
    theirs = foreign.create_from_slice(np.zeros(N, dtype=np.uint32))
    refused = f"argument 'out' of kernel conformance_mark: .* another device than {client.device}"
    for call in (conformance_mark.launch, conformance_mark.launch_unchecked):
        with pytest.raises(InvalidHandle, match=refused):
            call(client, RudaCount(1), RudaDim(N), ArrayArg(theirs, N))
    with pytest.raises(InvalidHandle, match=refused):
        conformance_mark.prepare(client, RudaCount(1), RudaDim(N), ArrayArg(theirs, N))
    with pytest.raises(InvalidHandle):
        client.read_one(theirs)
    with pytest.raises(InvalidHandle):
        client.write(theirs, np.ones(N, dtype=np.uint32))
    np.testing.assert_array_equal(read_array(foreign, theirs, np.uint32), np.zeros(N))


def test_binding_of_a_dropped_handle_is_refused(client):
    task = KernelTask(conformance_mark.definition())
    binding = client.create_from_slice(np.zeros(N, dtype=np.uint32)).binding()  # dropped here
    refused = "argument 'out' of kernel conformance_mark: .* dropped"
    with pytest.raises(InvalidHandle, match=refused):
        client.launch(task, RudaCount(1), RudaDim(N), [binding], (), (N,))
    with pytest.raises(InvalidHandle, match=refused):
        client.prepare(task, RudaCount(1), RudaDim(N), [binding], (), (N,))
    client.sync().result(timeout=TIMEOUT_S)


def test_an_empty_launch_is_a_no_op(client):
    out = _target(client)
    n, units = 0, 32
    cubes = (n + units - 1) // units  # the usual idiom gives 0 cubes for n = 0
    for count in (RudaCount(cubes), RudaCount(4, 0, 1), RudaCount(1, 1, 0)):
        conformance_mark.launch(client, count, RudaDim(units), ArrayArg(out, N))
        conformance_mark.prepare(client, count, RudaDim(units), ArrayArg(out, N)).launch()
    _untouched(client, out)
    with pytest.raises(LaunchConfigError, match=r"outside 0\.\.2"):
        RudaCount(-1)
