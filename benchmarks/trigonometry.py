"""``sin``, ``cos`` and ``tan`` of f32 arrays on each device named, in one run.

WebGPU's kernels reduce the argument in ruda's own code (the drivers' builtins are coarse past a
few turns), where CUDA's ``sinf`` and OpenCL's ``sin`` reduce it in the vendor's library. Each
row is one function over ``N`` elements drawn in ``[-pi, pi]`` (the reduction's short path)
and in ``[-1e6, 1e6]`` (the long one): the device time of one launch (``client.profile``, the
least of ``ROUNDS``) in ms, and in ns per element. Every result is checked against NumPy within
the float table's tolerance.
Run: ``python benchmarks/trigonometry.py cuda:0 webgpu:0`` (default: every device).
"""

from __future__ import annotations

import sys

import numpy as np

import ruda_core as ruda
from ruda_core.ir import Elem
from ruda_core.lang import ABSOLUTE_POS, Array, Comptime, cos, f32, kernel, sin, tan
from ruda_core.testing.tolerance import OpClass, assert_matches

N = 1 << 24
ROUNDS = 5
FUNCTIONS = {"sin": np.sin, "cos": np.cos, "tan": np.tan}


@kernel
def apply(x: Array[f32], out: Array[f32], FN: Comptime[str]):
    i = ABSOLUTE_POS
    if i < out.len():
        if FN == "sin":
            out[i] = sin(x[i])
        elif FN == "cos":
            out[i] = cos(x[i])
        else:
            out[i] = tan(x[i])


def measure(device: str) -> list[str]:
    client = ruda.client(device)
    rng = np.random.default_rng(0)
    rows = []
    for span in (np.pi, 1e6):
        x = rng.uniform(-span, span, N).astype(np.float32)
        xt, out = ruda.asarray(x, client), ruda.asarray(np.zeros_like(x), client)
        for name, reference in FUNCTIONS.items():

            def launch(fn: str = name, xt: object = xt, out: object = out) -> None:
                apply.launch(client, -(-N // 256), 256, xt, out, FN=fn)

            launch()
            want = reference(x.astype(np.float64)).astype(np.float32)
            assert_matches(out.numpy(), want, Elem.F32, OpClass.TRANSCENDENTAL, what=name)
            best = min(client.profile(launch)[1].execution_ns for _ in range(ROUNDS))
            rows.append(
                f"{device:<10} {name}  |x| <= {span:<9.3g} {best / 1e6:8.3f} ms  "
                f"{best / N:7.3f} ns/element"
            )
    return rows


def main(devices: list[str]) -> None:
    print(f"sin, cos, tan of {N} f32, device time of one launch, least of {ROUNDS}")
    for device in devices or [str(d) for d in ruda.enumerate_all_devices()]:
        for row in measure(device):
            print(row, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
