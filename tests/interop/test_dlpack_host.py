"""DLPack and NumPy on the NumPy device: zero-copy both ways, lifetimes, refusals, foreign
kernel arguments; OpenCL memory is refused, not copied."""

from __future__ import annotations

import contextlib
import gc
import weakref

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core.ir import Elem
from ruda_core.lang import ABSOLUTE_POS, Array, Float, Tensor, f32, kernel
from ruda_core.runtime import (
    InteropError,
    LaunchConfigError,
    LayoutError,
    RudaCount,
    RudaDim,
    contiguous_strides,
)
from ruda_core.tensor import RudaTensor


@kernel
def saxpy(a: f32, x: Array[f32], y: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]


@kernel
def scale_rows(t: Tensor[Float], factor: f32):
    i = ABSOLUTE_POS
    if i < t.shape(0) * t.shape(1):
        r = i // t.shape(1)
        c = i % t.shape(1)
        k = r * t.stride(0) + c * t.stride(1)
        t[k] = t[k] * Float(factor)


@pytest.fixture
def cpu():
    return ruda.client("cpu")


def test_numpy_reads_a_tensor_without_a_copy_and_writes_through(cpu):
    t = RudaTensor.from_numpy(cpu, np.arange(6, dtype=np.float32).reshape(2, 3))
    view = np.from_dlpack(t)
    assert view.shape == (2, 3) and view.dtype == np.float32
    view[1, 2] = 42.0
    assert t.to_numpy(cpu)[1, 2] == 42.0
    saxpy.launch(cpu, RudaCount(1), RudaDim(8), 1.0, t, t, t)  # t = 2 t, on the device
    np.testing.assert_array_equal(np.from_dlpack(t), [[0, 2, 4], [6, 8, 84]])


def test_export_waits_for_queued_work_on_the_tensor(cpu):
    n = 1 << 16
    t = RudaTensor.from_numpy(cpu, np.ones(n, np.float32))
    for _ in range(20):
        saxpy.launch(cpu, RudaCount(n // 256), RudaDim(256), 1.0, t, t, t)
    np.testing.assert_array_equal(np.from_dlpack(t), np.full(n, 2.0**20, np.float32))


def test_ruda_wraps_a_numpy_array_and_both_see_each_others_writes(cpu):
    host = np.arange(8, dtype=np.int32)
    t = ruda.from_dlpack(host)
    assert t.shape == (8,) and t.strides == (1,) and t.elem.value == "i32"
    host[3] = -7
    assert t.to_numpy(cpu)[3] == -7
    x = np.arange(1000, dtype=np.float32)
    y = np.ones(1000, np.float32)
    out = np.zeros(1000, np.float32)
    wrapped = RudaTensor.from_dlpack(out, cpu)
    saxpy.launch(cpu, RudaCount(4), RudaDim(256), 2.0, ruda.from_dlpack(x), y, wrapped)
    cpu.sync().result(timeout=30)
    np.testing.assert_array_equal(out, 2 * x + 1)


def test_strided_numpy_views_keep_their_strides(cpu):
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = base[:, 1::2]  # strides (6, 2) elements
    t = ruda.from_dlpack(view)
    assert t.shape == (4, 3) and t.strides == (6, 2)
    scale_rows.launch(cpu, RudaCount(1), RudaDim(32), view, 10.0)
    cpu.sync().result(timeout=30)
    expected = np.arange(24, dtype=np.float32).reshape(4, 6)
    expected[:, 1::2] *= 10
    np.testing.assert_array_equal(base, expected)


@pytest.mark.parametrize(
    "view",
    [
        lambda b: b[:, 1::2],
        lambda b: b.T,
        lambda b: np.lib.stride_tricks.as_strided(b[0], (3, 6), (0, 4), writeable=True),
    ],
    ids=["columns", "transposed", "broadcast"],
)
def test_a_tensor_of_any_layout_reads_back_as_a_new_contiguous_array(cpu, view):
    """A layout ``read_tensor`` refuses (it is no row-major one) is read as its handle's bytes
    and gathered on the host: ``numpy()``, ``np.asarray`` and a copy to another device."""
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    expected = view(base)
    t = ruda.from_dlpack(expected)
    assert t.strides != contiguous_strides(t.shape)
    for got in (t.numpy(), np.asarray(t), ruda.asarray(t, cpu).numpy()):
        np.testing.assert_array_equal(got, expected)
        assert got.flags.c_contiguous and got.flags.writeable and not np.shares_memory(got, base)


@pytest.mark.parametrize(
    ("shape", "strides"),
    [((3, 4), (1, 3)), ((4,), (2**28,)), ((4,), (-1,)), ((2, 2), (2, -1))],
    ids=["past-the-end", "far-past-the-end", "negative", "negative-inner"],
)
def test_a_layout_outside_its_handle_is_refused_not_read_or_shared(cpu, shape, strides):
    """A tensor made over a handle with a layout that addresses memory outside it (past its
    end, or before it through a negative stride) is neither read (``numpy()``) nor exported
    (DLPack): either would reach memory the handle does not own."""
    handle = cpu.create_from_slice(np.arange(4, dtype=np.float32))
    t = RudaTensor(handle, shape, strides, Elem.F32)
    with pytest.raises(LayoutError, match=r"negative extent or stride|the handle has 16"):
        t.numpy()
    with pytest.raises(InteropError, match="cannot export the tensor"):
        np.from_dlpack(t)
    np.testing.assert_array_equal(RudaTensor(handle, (4,), (1,), Elem.F32).numpy(), range(4))


def test_the_producer_stays_alive_while_ruda_holds_its_memory(cpu):
    host = np.arange(1 << 12, dtype=np.float64)
    alive = weakref.ref(host)
    t = ruda.from_dlpack(host)
    del host
    gc.collect()
    assert alive() is not None  # the DLPack deleter has not run
    np.testing.assert_array_equal(t.to_numpy(cpu), np.arange(1 << 12, dtype=np.float64))
    del t
    gc.collect()
    cpu.sync().result(timeout=30)
    cpu.memory_cleanup()  # the handle's release is fenced; the fence is done after the sync
    gc.collect()
    assert alive() is None


def test_a_consumer_keeps_the_memory_after_the_tensor_is_dropped(cpu):
    t = RudaTensor.from_numpy(cpu, np.arange(4096, dtype=np.float32))
    owner = weakref.ref(t.handle)
    capsule = t.__dlpack__(max_version=(1, 0))
    del t
    gc.collect()
    assert owner() is not None  # the capsule keeps the handle
    view = np.from_dlpack(_Capsule(capsule))
    gc.collect()
    assert owner() is not None  # now the consumer's array does
    np.testing.assert_array_equal(view, np.arange(4096, dtype=np.float32))
    del view
    gc.collect()
    assert owner() is None


def test_an_unconsumed_capsule_releases_the_tensor(cpu):
    t = RudaTensor.from_numpy(cpu, np.zeros(16, np.float32))
    owner = weakref.ref(t.handle)
    for version in (None, (1, 0)):
        t.__dlpack__(max_version=version)  # dropped unconsumed
    del t
    gc.collect()
    assert owner() is None


def test_an_export_freed_while_an_exception_is_pending_releases_the_tensor(cpu):
    """An array made from an export and freed as an exception propagates calls the deleter
    with that exception pending, and NumPy 2.4 drops a capsule it refuses (bf16) so: the export
    is released all the same (NumPy 2.4 then raises a ``SystemError``, the pending exception
    lost; NumPy 2.5.2 took the bf16 capsule)."""
    half = RudaTensor.from_numpy(cpu, np.ones(16, Elem.BF16.numpy))
    single = RudaTensor.from_numpy(cpu, np.ones(16, np.float32))
    owners = [weakref.ref(half.handle), weakref.ref(single.handle)]
    for _ in range(2):
        with contextlib.suppress(SystemError):
            np.from_dlpack(half)
        with pytest.raises((SystemError, TypeError)):
            np.add(np.from_dlpack(single), "x")
    del half, single
    gc.collect()
    assert [owner() for owner in owners] == [None, None]


class _Capsule:
    """A producer that hands out one prepared capsule (what np.from_dlpack consumes)."""

    def __init__(self, capsule: object) -> None:
        self.capsule = capsule

    def __dlpack__(self, **_: object) -> object:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


def test_versioned_and_legacy_capsules_by_max_version(cpu):
    t = RudaTensor.from_numpy(cpu, np.arange(3, dtype=np.int16))
    assert "dltensor_versioned" in repr(t.__dlpack__(max_version=(1, 0)))
    assert '"dltensor"' in repr(t.__dlpack__(max_version=(0, 8)))
    assert '"dltensor"' in repr(t.__dlpack__())
    legacy = ruda.from_dlpack(_Capsule(t.__dlpack__()))  # ruda reads a legacy capsule too
    np.testing.assert_array_equal(legacy.to_numpy(cpu), [0, 1, 2])
    assert t.__dlpack_device__() == (1, 0)


def test_export_refuses_copies_other_devices_and_streams(cpu):
    t = RudaTensor.from_numpy(cpu, np.zeros(4, np.float32))
    with pytest.raises(BufferError, match="without copying"):
        t.__dlpack__(copy=True)
    with pytest.raises(InteropError, match="not \\(2, 0\\)"):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(InteropError, match="pass None"):
        t.__dlpack__(stream=5)
    assert not hasattr(t, "__cuda_array_interface__")


def test_refused_layouts_types_and_flags(cpu):
    with pytest.raises(InteropError, match="negative strides"):
        ruda.from_dlpack(np.arange(8, dtype=np.float32)[::-1])
    misaligned = np.frombuffer(bytearray(17), np.int32, count=4, offset=1)
    with pytest.raises(InteropError, match="not aligned"):
        ruda.from_dlpack(misaligned)
    with pytest.raises(InteropError, match="complex"):
        ruda.from_dlpack(np.zeros(3, np.complex64))
    frozen = np.zeros(3, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(InteropError, match="read-only"):
        ruda.from_dlpack(frozen)
    with pytest.raises(TypeError, match="neither DLPack"):
        ruda.from_dlpack([1.0, 2.0])


def test_foreign_kernel_arguments_are_checked_before_anything_runs(cpu):
    x, y = np.arange(64, dtype=np.float32), np.ones(64, np.float32)
    out = np.full(64, -1.0, np.float32)
    with pytest.raises(LaunchConfigError, match="f64 elements"):
        saxpy.launch(cpu, RudaCount(1), RudaDim(64), 2.0, x.astype(np.float64), y, out)
    with pytest.raises(LaunchConfigError, match="not contiguous"):
        strided = np.arange(128, dtype=np.float32)[::2]
        saxpy.launch(cpu, RudaCount(1), RudaDim(64), 2.0, strided, y, out)
    cpu.sync().result(timeout=30)
    assert (out == -1).all()  # nothing ran
    saxpy.launch(cpu, RudaCount(1), RudaDim(64), 2.0, x, y, out)
    cpu.sync().result(timeout=30)
    np.testing.assert_array_equal(out, 2 * x + 1)


def test_prepared_launch_keeps_foreign_arrays(cpu):
    out = np.zeros(32, np.float32)
    prepared = saxpy.prepare(
        cpu, RudaCount(1), RudaDim(32), 1.0, np.ones(32, np.float32), np.ones(32, np.float32), out
    )
    gc.collect()
    prepared.launch()
    cpu.sync().result(timeout=30)
    np.testing.assert_array_equal(out, np.full(32, 2.0, np.float32))


def test_asarray_reads_a_copy_and_copy_false_raises(cpu):
    t = RudaTensor.from_numpy(cpu, np.arange(6, dtype=np.int64).reshape(3, 2))
    host = np.asarray(t)
    assert host.dtype == np.int64 and host.shape == (3, 2)
    host[0, 0] = 100
    assert t.to_numpy(cpu)[0, 0] == 0  # a copy from the device
    np.testing.assert_array_equal(np.array(t, dtype=np.float32), np.arange(6).reshape(3, 2))
    with pytest.raises(ValueError, match="reading it is a copy"):
        np.asarray(t, copy=False)


def test_opencl_memory_is_refused_not_copied(open_device):
    client = open_device("opencl:0")
    with pytest.raises(InteropError, match="cannot use memory of other libraries"):
        ruda.from_dlpack(np.zeros(4, np.float32), client)
    t = RudaTensor.from_numpy(client, np.arange(4, dtype=np.float32))
    with pytest.raises(InteropError, match="cannot be shared through DLPack"):
        np.from_dlpack(t)
    np.testing.assert_array_equal(np.asarray(t), np.arange(4, dtype=np.float32))


def test_bf16_round_trips_through_the_host_with_ml_dtypes(cpu):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    values = np.array([1.5, -2.25, 3.0078125, 2.0**-133], dtype=ml_dtypes.bfloat16)
    t = RudaTensor.from_numpy(cpu, values)
    assert t.elem.value == "bf16"
    back = t.to_numpy(cpu)
    assert back.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(back.view(np.uint16), values.view(np.uint16))
    raw = cpu.read_one(cpu.create_from_slice(values))
    np.testing.assert_array_equal(np.frombuffer(raw, np.uint16), values.view(np.uint16))
    np.testing.assert_array_equal(np.asarray(t).view(np.uint16), values.view(np.uint16))


def test_borrowed_arrays_live_until_their_launch_has_run_then_are_released(cpu):
    x, y = np.arange(64, dtype=np.float32), np.ones(64, np.float32)
    out = RudaTensor.empty(cpu, (64,), np.float32)  # no NumPy output: launch does not wait
    refs = [weakref.ref(a) for a in (x, y)]
    saxpy.launch(cpu, RudaCount(1), RudaDim(64), 2.0, x, y, out)
    del x, y
    gc.collect()
    assert all(r() is not None for r in refs)  # the stream keeps them for the queued launch
    cpu.sync().result(timeout=30)
    np.testing.assert_array_equal(out.to_numpy(cpu), 2 * np.arange(64, dtype=np.float32) + 1)
    cpu.sync().result(timeout=30)  # the batch fenced at the first sync is done by now
    gc.collect()
    assert all(r() is None for r in refs)


def test_borrowed_arrays_take_no_pool_memory_and_are_rechecked_per_array(cpu):
    x, y, out = np.arange(64, dtype=np.float32), np.ones(64, np.float32), np.zeros(64, np.float32)
    saxpy.launch(cpu, RudaCount(1), RudaDim(64), 1.0, x, y, out)
    before = cpu.memory_usage()
    for k in range(3):
        saxpy.launch(cpu, RudaCount(1), RudaDim(64), float(k), x, y, out)
    cpu.sync().result(timeout=30)
    assert cpu.memory_usage() == before
    np.testing.assert_array_equal(out, 2 * x + 1)
    frozen = out.copy()
    frozen.flags.writeable = False
    for _ in range(2):  # refused again on the second launch: read-only arrays are never entered
        with pytest.raises(InteropError, match="read-only"):
            saxpy.launch(cpu, RudaCount(1), RudaDim(64), 1.0, x, y, frozen)


def test_numpy_arrays_in_a_capture_are_replayed(cpu):
    x, y, out = np.arange(64, dtype=np.float32), np.ones(64, np.float32), np.zeros(64, np.float32)
    with cpu.capture() as graph:  # a capture keeps memory through handles, not borrowed arrays
        saxpy.launch(cpu, RudaCount(1), RudaDim(64), 2.0, x, y, out)
    assert (out == 0).all()
    x += 1
    graph.replay()
    cpu.sync().result(timeout=30)
    np.testing.assert_array_equal(out, 2 * x + 1)


def test_borrowed_tensors_of_torch_on_the_numpy_device(cpu):
    torch = pytest.importorskip("torch", reason="torch is not installed: no torch CPU tensors")
    x = torch.arange(64, dtype=torch.float32)
    out = torch.zeros(8, 8)
    saxpy.launch(cpu, RudaCount(1), RudaDim(64), 2.0, x, torch.ones(64), out.view(-1))
    scale_rows.launch(cpu, RudaCount(1), RudaDim(64), out.t(), 0.5)  # a strided Tensor view
    cpu.sync().result(timeout=30)
    assert torch.equal(out.view(-1), x + 0.5)
    with pytest.raises(LaunchConfigError, match="f64 elements"):
        saxpy.launch(cpu, RudaCount(1), RudaDim(64), 2.0, x.double(), x, x)


def test_a_torch_tensor_is_rechecked_when_its_view_changes_at_the_same_address(cpu):
    torch = pytest.importorskip("torch", reason="torch is not installed: no torch CPU tensors")
    base, ones = torch.zeros(64), torch.ones(64)
    saxpy.launch(cpu, RudaCount(1), RudaDim(64), 0.0, base, ones, base)  # all 64 elements
    saxpy.launch(cpu, RudaCount(1), RudaDim(64), 2.0, base, ones, base[:32])  # same address
    cpu.sync().result(timeout=30)
    assert torch.equal(base, torch.cat([torch.full((32,), 3.0), torch.ones(32)]))
    with pytest.raises(LaunchConfigError, match="not contiguous"):  # same address and length
        saxpy.launch(cpu, RudaCount(1), RudaDim(64), 1.0, base, ones, base.view(8, 8).t())
    with pytest.raises(LaunchConfigError, match="f64 elements"):  # same address, other type
        saxpy.launch(cpu, RudaCount(1), RudaDim(64), 1.0, base, ones, base.view(torch.float64))


@kernel
def copy_lines(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i * 4 < out.len():
        out.store_line(i, x.load_line(i, 4))


def _off_a_line(n: int) -> np.ndarray:
    """``n`` f32 starting one element past a 16-byte boundary."""
    base = np.arange(n + 8, dtype=np.float32)
    first = next(k for k in range(4) if base[k:].__array_interface__["data"][0] % 16 == 4)
    return base[first : first + n]


def test_another_librarys_array_off_a_line_boundary_is_refused_by_a_line_kernel(cpu):
    """As a ``Handle.offset`` view is: lines need their start aligned, and the array's own
    address decides, whether it is passed as is or imported first."""
    x, out = _off_a_line(16), np.zeros(16, np.float32)
    with pytest.raises(LaunchConfigError, match="multiple of 16 B"):
        copy_lines.launch(cpu, RudaCount(1), RudaDim(4), x, out)
    imported = ruda.from_dlpack(x, cpu)
    assert imported.handle.binding().offset_bytes % 16 == 4
    with pytest.raises(LaunchConfigError, match="multiple of 16 B"):
        copy_lines.launch(cpu, RudaCount(1), RudaDim(4), imported, out)
    assert not out.any()  # nothing ran
    aligned = x[3:15]  # 16 bytes further: on a line boundary
    copy_lines.launch(cpu, RudaCount(1), RudaDim(3), aligned, out[:12])
    cpu.sync().result()
    np.testing.assert_array_equal(out[:12], aligned)
