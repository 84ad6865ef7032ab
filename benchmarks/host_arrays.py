"""A launch on NumPy arrays, end to end: arrays in, results in a NumPy array when the call
returns, next to the same work done by hand and by CuPy, in one run.

* ``ruda NumPy launch``: ``saxpy.launch(client, count, dim, a, x, y, out)`` with NumPy
  ``x``, ``y`` and ``out``: on ``cuda:*`` and ``opencl:*`` the launch copies ``x`` and ``y`` to
  the device, runs the kernel and copies ``out`` back (``x`` and ``y`` are only read, so they
  are not copied back); on ``cpu`` the kernel works in the arrays' memory and the launch waits;
* ``ruda tensors``: the same steps spelled out: ``ruda.asarray`` of each array, a launch on
  the tensors, ``out.numpy()``;
* ``CuPy``: on ``cuda:*``, ``cupy.asarray`` of ``x`` and ``y``, a ``RawKernel`` saxpy into a
  ``cupy.empty`` array and ``.get(out=...)``, CuPy's idiom for the same round trip.

Each side runs ``N`` calls per round (every call ends with the results on the host, so no sync
is left outside the timing); its figure is the best of ``ROUNDS`` rounds in microseconds per
call, with the ratio to CuPy's best where CuPy runs. The sides take turns within a round.
Sizes: ``SIZES`` elements of f32. Peers that are not installed are left out.

Run: ``python benchmarks/host_arrays.py [device ...]`` (default: every device).
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable

import numpy as np

import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, f32, kernel
from ruda_core.runtime import ComputeClient

N = 50
ROUNDS = 7
SIZES = (1 << 10, 1 << 20)
BLOCK = 256

CUDA_SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out,
                                 unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""


@kernel
def saxpy(a: f32, x: Array[f32], y: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]


def sides(client: ComputeClient, n: int) -> dict[str, tuple[Callable[[], None], np.ndarray]]:
    """Each side's call and the NumPy array it leaves its results in."""
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, np.float32)
    cubes = (n + BLOCK - 1) // BLOCK
    outs = {name: np.zeros(n, np.float32) for name in ("numpy", "tensors", "cupy")}

    def numpy_launch() -> None:
        saxpy.launch(client, cubes, BLOCK, 2.0, x, y, outs["numpy"])

    def tensors() -> None:
        xt, yt = ruda.asarray(x, client), ruda.asarray(y, client)
        ot = ruda.asarray(outs["tensors"], client)
        saxpy.launch(client, cubes, BLOCK, 2.0, xt, yt, ot)
        outs["tensors"][...] = ot.numpy()

    found: dict[str, tuple[Callable[[], None], np.ndarray]] = {
        "ruda NumPy launch": (numpy_launch, outs["numpy"]),
        "ruda tensors": (tensors, outs["tensors"]),
    }
    device = str(client.device)
    if device.startswith("cuda:") and importlib.util.find_spec("cupy") is not None:
        import cupy

        with cupy.cuda.Device(int(device.partition(":")[2])):
            raw = cupy.RawKernel(CUDA_SAXPY, "saxpy")

        def cupy_side() -> None:
            xd, yd = cupy.asarray(x), cupy.asarray(y)
            od = cupy.empty(n, cupy.float32)
            raw((cubes,), (BLOCK,), (np.float32(2.0), xd, yd, od, np.uint32(n)))
            od.get(out=outs["cupy"])

        found["CuPy"] = (cupy_side, outs["cupy"])
    return found


def per_call_us(call: Callable[[], None]) -> float:
    start = time.perf_counter()
    for _ in range(N):
        call()
    return (time.perf_counter() - start) / N * 1e6


def run(device: str) -> None:
    client = ruda.client(device)
    for n in SIZES:
        found = sides(client, n)
        expected = 2 * np.arange(n, dtype=np.float32) + 1
        for call, out in found.values():  # warm up (builds the kernels) and check
            call()
            np.testing.assert_array_equal(out, expected)
        names = list(found)
        best = dict.fromkeys(names, float("inf"))
        for r in range(ROUNDS):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                best[name] = min(best[name], per_call_us(found[name][0]))
        peer = best.get("CuPy")
        for name in names:
            ratio = f"  {best[name] / peer:5.2f}x CuPy" if peer else ""
            print(f"{device:8} {n:>8} f32  {name:18} {best[name]:10.1f} us{ratio}")


def main(devices: list[str]) -> None:
    print(f"saxpy, NumPy arrays in and out, us per call: best of {ROUNDS} rounds of {N} calls")
    for device in devices or [str(d) for d in ruda.enumerate_all_devices()]:
        run(device)


if __name__ == "__main__":
    main(sys.argv[1:])
