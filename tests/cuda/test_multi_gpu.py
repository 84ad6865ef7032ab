"""Two GPUs of one host: one client per GPU, launches on both from one thread and from one
thread each, memory on the GPU of its client whatever device another library made current,
and ``to_client`` between them both ways (peer copies where the GPUs reach each other).

Skips, saying why, without CuPy or with fewer than 2 CUDA devices. Run on a machine with two
GPUs: ``pytest tests/cuda/test_multi_gpu.py``.
"""

from __future__ import annotations

import importlib.util
import threading

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core.ir import Elem
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, kernel, u32
from ruda_core.runtime import ComputeClient, Handle, RudaCount, RudaDim
from ruda_core.tensor import RudaTensor
from ruda_core.testing.runner import TIMEOUT_S, read_array
from ruda_core.testing.workloads import Spin

N = 1 << 16


@kernel
def stamp(out: Array[u32], base: u32):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = base + u32(i)


def _stamp(client: ComputeClient, out: Handle, base: int) -> None:
    stamp.launch(client, RudaCount(N // 256), RudaDim(256), ArrayArg(out, N), base)


def _expected(base: int) -> np.ndarray:
    return (base + np.arange(N, dtype=np.uint64)).astype(np.uint32)


@pytest.fixture(scope="module")
def gpus(open_device) -> tuple[ComputeClient, ComputeClient]:
    if importlib.util.find_spec("cupy") is None:
        pytest.skip("CuPy is not installed: no CUDA device")
    cuda = [str(d) for d in ruda.enumerate_all_devices() if str(d).startswith("cuda:")]
    if len(cuda) < 2:
        pytest.skip(f"needs 2 CUDA devices; this machine has {len(cuda)}")
    return open_device("cuda:0"), open_device("cuda:1")


def _device_of(handle: Handle) -> int:
    """The GPU that holds ``handle``'s memory, as CUDA reports it."""
    from cupy.cuda import runtime

    view = RudaTensor(handle, (handle.nbytes,), (1,), Elem.U8)
    return int(runtime.pointerGetAttributes(view.__cuda_array_interface__["data"][0]).device)


def test_each_client_uses_its_own_gpu(gpus):
    g0, g1 = gpus
    assert g0.device_id() != g1.device_id() and g0.server is not g1.server
    assert _device_of(g0.empty(4 * N)) == 0
    assert _device_of(g1.empty(4 * N)) == 1


def test_launches_on_both_gpus_from_one_thread(gpus):
    g0, g1 = gpus
    outs = [g0.empty(4 * N), g1.empty(4 * N)]
    for _ in range(3):  # interleaved: each launch switches the current device
        _stamp(g0, outs[0], 100)
        _stamp(g1, outs[1], 200)
    np.testing.assert_array_equal(read_array(g0, outs[0], np.uint32), _expected(100))
    np.testing.assert_array_equal(read_array(g1, outs[1], np.uint32), _expected(200))


def test_work_goes_to_its_gpu_whatever_device_is_current(gpus):
    """Another library makes GPU 1 current on this thread; cuda:0's memory and kernels stay on
    GPU 0."""
    import cupy

    g0, _ = gpus
    _stamp(g0, g0.empty(4 * N), 0)  # ruda made GPU 0 current on this thread
    with cupy.cuda.Device(1):
        out = g0.empty(4 * N)
        page = g0.empty(32 << 20)  # an exclusive page: a cudaMalloc made now
        _stamp(g0, out, 300)
    assert _device_of(out) == 0 and _device_of(page) == 0
    np.testing.assert_array_equal(read_array(g0, out, np.uint32), _expected(300))


def test_launches_from_one_thread_per_gpu(gpus):
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def work(k: int, client: ComputeClient) -> None:
        try:
            out = client.empty(4 * N)
            for rep in range(20):
                _stamp(client, out, 1000 * k + rep)
            results[k] = read_array(client, out, np.uint32)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k, c)) for k, c in enumerate(gpus)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT_S)
    assert not errors, errors
    for k in range(2):
        np.testing.assert_array_equal(results[k], _expected(1000 * k + 19))


@pytest.mark.parametrize("direction", ["0->1", "1->0"])
def test_to_client_between_gpus(gpus, direction):
    """The copy is on the destination's GPU, holds what a long kernel on the source wrote just
    before, is read by a kernel on the destination without a sync in between, and a write into
    the source enqueued right after the copy does not reach it."""
    src, dst = gpus if direction == "0->1" else gpus[::-1]
    spin = Spin(src, target_s=0.2)
    out = src.create_from_slice(np.zeros(spin.units, dtype=np.uint32))
    spin.launch(out, seed=3)
    copy = src.to_client(out, dst)
    src.write(out, np.zeros(spin.units, dtype=np.uint32))
    assert _device_of(copy) == dst.server.dlpack_device()[1]
    np.testing.assert_array_equal(read_array(dst, copy, np.uint32), spin.expected(seed=3))

    stamped = src.empty(4 * N)
    _stamp(src, stamped, 7)
    moved = src.to_client(stamped, dst)
    back = dst.to_client(moved, src)
    np.testing.assert_array_equal(read_array(src, back, np.uint32), _expected(7))


def test_tensors_move_between_gpus_with_their_layout(gpus):
    g0, g1 = gpus
    grid = np.arange(24, dtype=np.float32).reshape(4, 6)
    full = RudaTensor.from_numpy(g0, grid)
    view = RudaTensor(full.handle, (4, 4), (6, 1), full.elem)
    moved = view.to_client(g1)
    assert (moved.shape, moved.strides) == ((4, 4), (6, 1))
    np.testing.assert_array_equal(moved.to_numpy(g1), grid[:, :4])
