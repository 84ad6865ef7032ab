"""ruda with PyTorch, CuPy and JAX on a CUDA device: zero-copy both ways, stream ordering with
torch's and CuPy's current streams, foreign kernel arguments, the CUDA array interface and a
bf16 LayerNorm on torch tensors without a host round trip.

Each test skips, saying why, without its library or a CUDA device (``RUDA_REQUIRE=cuda`` makes
a missing device a failure). Run on a GPU machine: ``pytest tests/cuda/test_interop.py``.
"""

from __future__ import annotations

import gc
import importlib.util

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, f32, kernel
from ruda_core.ops import layer_norm
from ruda_core.runtime import InteropError, LaunchConfigError, RudaCount, RudaDim
from ruda_core.tensor import RudaTensor


@kernel
def saxpy(a: f32, x: Array[f32], y: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]


def _module(name: str):
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed")
    return importlib.import_module(name)


@pytest.fixture
def cuda(open_device):
    return open_device("cuda:0")


@pytest.fixture
def torch(cuda):
    torch = _module("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch


def test_torch_reads_a_ruda_tensor_without_a_copy(cuda, torch):
    t = RudaTensor.from_numpy(cuda, np.arange(12, dtype=np.float32).reshape(3, 4))
    view = torch.from_dlpack(t)
    assert view.device.type == "cuda" and view.shape == (3, 4)
    assert view.data_ptr() == t.__cuda_array_interface__["data"][0]
    view.mul_(2)  # on torch's stream, ordered after ruda's upload by an event
    torch.cuda.synchronize()
    np.testing.assert_array_equal(t.to_numpy(cuda), 2 * np.arange(12).reshape(3, 4))


def test_ruda_wraps_torch_memory_and_writes_through(cuda, torch):
    x = torch.arange(1024, dtype=torch.float32, device="cuda")
    t = ruda.from_dlpack(x)
    assert t.shape == (1024,) and t.handle.binding().resource == x.data_ptr()
    saxpy.launch(cuda, RudaCount(4), RudaDim(256), 2.0, t, t, t)  # x = 3 x
    cuda.sync().result(timeout=60)
    assert torch.equal(x, 3 * torch.arange(1024, dtype=torch.float32, device="cuda"))


def test_a_launch_waits_for_torchs_current_stream(cuda, torch):
    n = 1 << 22
    side = torch.cuda.Stream()
    x = torch.zeros(n, dtype=torch.float32, device="cuda")
    y = torch.zeros_like(x)
    out = torch.empty_like(x)
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)  # keeps the stream busy long after the launch is queued
        x.fill_(1.0)
        y.fill_(2.0)
        # the producer's current stream is `side`: the launch must run after the fills
        saxpy.launch(cuda, RudaCount(n // 256), RudaDim(256), 3.0, x, y, out)
    cuda.sync().result(timeout=60)
    assert bool((out == 5.0).all())


def test_a_launch_waits_for_torchs_default_stream(cuda, torch):
    # torch's default stream is CUDA's legacy stream, which orders ruda's blocking streams
    n = 1 << 22
    x = torch.zeros(n, dtype=torch.float32, device="cuda")
    y, out = torch.zeros_like(x), torch.empty_like(x)
    torch.cuda.synchronize()
    torch.cuda._sleep(50_000_000)
    x.fill_(1.0)
    y.fill_(2.0)
    saxpy.launch(cuda, RudaCount(n // 256), RudaDim(256), 3.0, x, y, out)
    cuda.sync().result(timeout=60)
    assert bool((out == 5.0).all())


def test_tensors_that_require_grad_are_kernel_arguments(cuda, torch):
    x = torch.arange(256, dtype=torch.float32, device="cuda", requires_grad=True)
    out = torch.zeros(256, device="cuda")
    saxpy.launch(cuda, RudaCount(1), RudaDim(256), 2.0, x, x, out)
    cuda.sync().result(timeout=60)
    assert torch.equal(out, 3 * x.detach())


def test_torch_waits_for_ruda_when_it_takes_the_tensor(cuda, torch):
    n = 1 << 22
    t = RudaTensor.from_numpy(cuda, np.ones(n, np.float32))
    for _ in range(20):
        saxpy.launch(cuda, RudaCount(n // 256), RudaDim(256), 1.0, t, t, t)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        view = torch.from_dlpack(t)  # `side` waits for the launches with an event
        total = view.sum()
    side.synchronize()  # torch's streams do not order its default one: read after `side`
    assert float(total) == n * 2.0**20


def test_foreign_arguments_are_checked_before_anything_runs(cuda, torch):
    out = torch.full((256,), -1.0, device="cuda")
    with pytest.raises(InteropError, match="CPU"):
        saxpy.launch(cuda, RudaCount(1), RudaDim(256), 1.0, torch.ones(256), out, out)
    with pytest.raises(LaunchConfigError, match="f64"):
        saxpy.launch(cuda, RudaCount(1), RudaDim(256), 1.0, out.double(), out, out)
    cuda.sync().result(timeout=60)
    assert bool((out == -1).all())


def test_tensors_launched_again_are_refused_on_another_device_or_type(cuda, torch):
    x, out = torch.ones(256, device="cuda"), torch.zeros(256, device="cuda")
    for _ in range(2):  # the second launch takes the remembered tensors: out = x + x
        saxpy.launch(cuda, RudaCount(1), RudaDim(256), 1.0, x, x, out)
    with pytest.raises(InteropError, match="CPU"):  # the same layout on the host
        saxpy.launch(cuda, RudaCount(1), RudaDim(256), 1.0, x, x, torch.zeros(256))
    with pytest.raises(LaunchConfigError, match="f64"):
        saxpy.launch(cuda, RudaCount(1), RudaDim(256), 1.0, x, x, out.double())
    cuda.sync().result(timeout=60)
    assert torch.equal(out, torch.full((256,), 2.0, device="cuda"))


def test_the_torch_tensor_stays_alive_while_ruda_holds_it(cuda, torch):
    x = torch.full((1 << 20,), 7.0, device="cuda")
    t = ruda.from_dlpack(x)
    del x
    gc.collect()
    torch.cuda.empty_cache()
    _ = torch.zeros(1 << 22, device="cuda")  # would reuse the memory if it had been freed
    np.testing.assert_array_equal(t.to_numpy(cuda), np.full(1 << 20, 7.0, np.float32))


def test_bf16_layer_norm_on_torch_tensors_without_a_host_round_trip(cuda, torch):
    rows, features = 64, 512
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(rows, features, device="cuda", generator=gen).to(torch.bfloat16)
    w = torch.randn(features, device="cuda", generator=gen).to(torch.bfloat16)
    b = torch.randn(features, device="cuda", generator=gen).to(torch.bfloat16)
    out, _, _ = layer_norm(cuda, ruda.from_dlpack(x), ruda.from_dlpack(w), ruda.from_dlpack(b))
    result = torch.from_dlpack(RudaTensor(out.handle, out.shape, out.strides, out.elem))
    assert result.dtype == torch.bfloat16 and result.device.type == "cuda"
    expected = torch.nn.functional.layer_norm(x.float(), (features,), w.float(), b.float())
    torch.testing.assert_close(result.float(), expected, atol=0.05, rtol=0.02)


def test_cupy_both_ways_and_the_cuda_array_interface(cuda):
    cupy = _module("cupy")
    a = cupy.arange(16, dtype=cupy.float32)
    t = ruda.from_dlpack(a)
    saxpy.launch(cuda, RudaCount(1), RudaDim(16), 2.0, t, t, t)
    cuda.sync().result(timeout=60)
    np.testing.assert_array_equal(cupy.asnumpy(a), 3 * np.arange(16, dtype=np.float32))
    back = cupy.from_dlpack(t)
    assert back.data.ptr == a.data.ptr
    via_interface = cupy.asarray(t)  # __cuda_array_interface__, stream honoured
    assert via_interface.data.ptr == a.data.ptr
    interface = t.__cuda_array_interface__
    assert interface["version"] == 3 and interface["stream"] not in (None, 0)
    wrapped = ruda.from_cuda_array_interface(a)
    np.testing.assert_array_equal(wrapped.to_numpy(cuda), 3 * np.arange(16, dtype=np.float32))


#: a one-thread kernel that keeps its stream busy for about ``n`` clock cycles
_SPIN = r"""extern "C" __global__ void spin(long long n) {
    long long start = clock64();
    while (clock64() - start < n) {}
}"""


def test_cupy_arrays_are_kernel_arguments_without_a_copy(cuda):
    cupy = _module("cupy")
    x = cupy.arange(64, dtype=cupy.float32)
    y, out = cupy.ones(64, dtype=cupy.float32), cupy.zeros(64, dtype=cupy.float32)
    saxpy.launch(cuda, RudaCount(1), RudaDim(64), 2.0, x, y, out)
    saxpy.launch(cuda, RudaCount(1), RudaDim(64), 0.0, x, y, out[:32])  # same address, 32 long
    cuda.sync().result(timeout=60)
    expected = 2 * np.arange(64, dtype=np.float32) + 1
    expected[:32] = 1
    np.testing.assert_array_equal(cupy.asnumpy(out), expected)
    with pytest.raises(LaunchConfigError, match="f64 elements"):  # checked before anything runs
        saxpy.launch(cuda, RudaCount(1), RudaDim(64), 1.0, x, y, out.view(cupy.float64))
    with pytest.raises(LaunchConfigError, match="contiguous"):  # same address, every other one
        saxpy.launch(cuda, RudaCount(1), RudaDim(64), 1.0, x, y, out[::2])
    saxpy.launch(cuda, RudaCount(1), RudaDim(64), 1.0, x, y, out.reshape(8, 8))  # all 64 again
    np.testing.assert_array_equal(cupy.asnumpy(out), np.arange(64, dtype=np.float32) + 1)


def test_cupy_arrays_launched_again_are_found_by_identity_while_they_live(cuda):
    cupy = _module("cupy")
    x = cupy.arange(64, dtype=cupy.float32)
    for name, value in (("data", x[1:].data), ("dtype", cupy.float64), ("strides", (8,))):
        with pytest.raises(AttributeError):  # what finding a live array by identity relies on
            setattr(x, name, value)
    y, out = cupy.ones(64, dtype=cupy.float32), cupy.zeros(64, dtype=cupy.float32)
    saxpy.launch(cuda, 1, 64, 2.0, x, y, out)
    out.shape = (8, 8)  # reshaped in place, still contiguous: the same 64 elements
    saxpy.launch(cuda, 1, 64, 1.0, x, y, out)
    cuda.sync().result(timeout=60)
    np.testing.assert_array_equal(cupy.asnumpy(out).ravel(), np.arange(64, dtype=np.float32) + 1)
    for n in range(20):  # new arrays, some at the ids of dead ones: each bound as itself
        del out
        out = cupy.zeros(44 - n, dtype=cupy.float32)
        saxpy.launch(cuda, 1, 64, 1.0, x, y, out)
        cuda.sync().result(timeout=60)
        np.testing.assert_array_equal(cupy.asnumpy(out), np.arange(44 - n, dtype=np.float32) + 1)


def test_a_launch_waits_for_cupys_current_stream(cuda):
    cupy = _module("cupy")
    n = 1 << 22
    x = cupy.zeros(n, dtype=cupy.float32)
    y, out = cupy.zeros_like(x), cupy.empty_like(x)
    cupy.cuda.Device().synchronize()
    spin = cupy.RawKernel(_SPIN, "spin")
    with cupy.cuda.Stream(non_blocking=True):
        spin((1,), (1,), (cupy.int64(50_000_000),))  # busy long after the launch is queued
        x.fill(1.0)
        y.fill(2.0)
        # the producer's current stream is the side stream: the launch must run after the fills
        saxpy.launch(cuda, RudaCount(n // 256), RudaDim(256), 3.0, x, y, out)
    cuda.sync().result(timeout=60)
    assert bool((out == 5.0).all())


def test_arrays_of_torch_and_cupy_in_one_launch_wait_for_both(cuda, torch):
    cupy = _module("cupy")
    n = 1 << 22
    x = torch.zeros(n, dtype=torch.float32, device="cuda")
    y, out = cupy.zeros(n, dtype=cupy.float32), cupy.empty(n, dtype=cupy.float32)
    torch.cuda.synchronize()
    spin = cupy.RawKernel(_SPIN, "spin")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)
        x.fill_(1.0)
        with cupy.cuda.Stream(non_blocking=True):
            spin((1,), (1,), (cupy.int64(50_000_000),))
            y.fill(2.0)
            saxpy.launch(cuda, RudaCount(n // 256), RudaDim(256), 3.0, x, y, out)
    cuda.sync().result(timeout=60)
    assert bool((out == 5.0).all())


def test_jax_both_ways(cuda):
    jax = _module("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax has no GPU device")
    jnp = jax.numpy
    x = jax.device_put(jnp.arange(32, dtype=jnp.float32), jax.devices("gpu")[0])
    t = ruda.from_dlpack(x)
    np.testing.assert_array_equal(t.to_numpy(cuda), np.arange(32, dtype=np.float32))
    r = RudaTensor.from_numpy(cuda, np.arange(8, dtype=np.float32))
    back = jnp.from_dlpack(r)
    np.testing.assert_array_equal(np.asarray(back), np.arange(8, dtype=np.float32))
