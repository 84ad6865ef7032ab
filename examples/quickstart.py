"""Write a kernel once in Python and run it on a device (the NumPy reference device by default).

python examples/quickstart.py            # on "cpu"
python examples/quickstart.py cuda:0     # on any device `ruda devices` lists
"""

from __future__ import annotations

import sys

import numpy as np

import ruda_core as ruda
from ruda_core.lang import (
    ABSOLUTE_POS,
    RUDA_POS,
    UNIT_POS,
    Array,
    ArrayArg,
    Comptime,
    SharedMemory,
    f32,
    kernel,
    sync_units,
)
from ruda_core.runtime import RudaCount, RudaDim


@kernel
def saxpy(a: f32, x: Array[f32], y: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]


@kernel
def block_sum(x: Array[f32], out: Array[f32], BLOCK: Comptime[int]):
    smem = SharedMemory(f32, BLOCK)
    i = ABSOLUTE_POS
    smem[UNIT_POS] = x[i] if i < x.len() else f32(0)
    sync_units()
    s = BLOCK // 2
    while s > 0:
        if UNIT_POS < s:
            smem[UNIT_POS] += smem[UNIT_POS + s]
        sync_units()
        s //= 2
    if UNIT_POS == 0:
        out[RUDA_POS] = smem[0]


def main(device: str = "cpu") -> None:
    client = ruda.client(device)
    n, block = 1_000_000, 256
    cubes = (n + block - 1) // block
    rng = np.random.default_rng(0)
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)

    xh, yh = client.create_from_slice(x), client.create_from_slice(y)
    out = client.empty(x.nbytes)
    saxpy.launch(client, RudaCount(cubes), RudaDim(block), 2.0, ArrayArg(xh, n),
                 ArrayArg(yh, n), ArrayArg(out, n))  # fmt: skip
    result = np.frombuffer(client.read_one(out), dtype=np.float32)
    assert np.allclose(result, 2.0 * x + y)

    partial = client.empty(cubes * 4)
    block_sum.launch(client, RudaCount(cubes), RudaDim(block), ArrayArg(xh, n),
                     ArrayArg(partial, cubes), BLOCK=block)  # fmt: skip
    total = np.frombuffer(client.read_one(partial), dtype=np.float32).sum(dtype=np.float64)
    assert np.isclose(total, x.sum(dtype=np.float64), rtol=1e-5)

    print(f"{device}: saxpy over {n} elements and a {block}-unit shared-memory block sum agree "
          f"with NumPy (sum = {total:.3f})")  # fmt: skip


if __name__ == "__main__":
    main(*sys.argv[1:2])
