"""The NumPy reference device against NumPy itself.

Prints, for kernels written in the kernel language and compiled in Checked mode (what
``launch`` runs):

* ``c[i] = a[i] + b[i]`` over 16 M f32, as a ratio of ``np.add(a, b, out=c)``'s time;
* the DESIGN.md shared-memory tree reduction (256 units per cube), in units per second;
* the launch overhead of a 32-unit kernel.

Run: ``python benchmarks/cpu_elementwise.py`` (best of several runs each).
"""

from __future__ import annotations

import numpy as np
from timing import fastest

from ruda_core.ir import KernelDefinition
from ruda_core.ir.bounds import lower_bounds
from ruda_core.lang import (
    ABSOLUTE_POS,
    Array,
    f32,
    kernel,
)
from ruda_core.runtime import ExecutionMode
from ruda_core.runtime.compiler import CompileOptions
from ruda_core.testing.samples import block_sum
from ruda_cpu.compiler import CpuCompiler
from ruda_cpu.executor import CpuKernel, build


@kernel
def add(a: Array[f32], b: Array[f32], c: Array[f32]):
    i = ABSOLUTE_POS
    if i < c.len():
        c[i] = a[i] + b[i]


def checked(definition: KernelDefinition) -> CpuKernel:
    mode = ExecutionMode.CHECKED
    lowered = lower_bounds(definition, mode)
    return build(CpuCompiler().compile(lowered, CompileOptions(), mode))


def main() -> None:
    n = 1 << 24
    rng = np.random.default_rng(0)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.empty_like(a)
    k_add = checked(add.definition())
    cubes = -(-n // 256)
    t_kernel = fastest(lambda: k_add((cubes, 1, 1), (256, 1, 1), [a, b, c], [], [n, n, n]), 7)
    if not np.array_equal(c, a + b):
        raise SystemExit("add: wrong result")
    t_numpy = fastest(lambda: np.add(a, b, out=c), 7)
    print(
        f"add 16M f32: kernel {t_kernel * 1e3:.1f} ms, np.add {t_numpy * 1e3:.1f} ms, "
        f"ratio {t_kernel / t_numpy:.2f}x"
    )

    k_sum = checked(block_sum.definition(BLOCK=256))
    cubes = 1 << 14
    x = rng.random(cubes * 256, dtype=np.float32)
    out = np.empty(cubes, np.float32)
    t_sum = fastest(lambda: k_sum((cubes, 1, 1), (256, 1, 1), [x, out], [], [x.size, cubes]), 5)
    if not np.allclose(out, x.reshape(cubes, 256).sum(axis=1), rtol=1e-5):
        raise SystemExit("block_sum: wrong result")
    print(
        f"block_sum, 256 units per cube: {x.size / t_sum / 1e6:.1f} M units/s "
        f"({t_sum * 1e3:.1f} ms for {x.size} units)"
    )

    small = [np.ones(32, np.float32) for _ in range(3)]
    k_add((1, 1, 1), (32, 1, 1), small, [], [32, 32, 32])
    t_small = (
        fastest(
            lambda: [k_add((1, 1, 1), (32, 1, 1), small, [], [32, 32, 32]) for _ in range(1000)], 5
        )
        / 1000
    )
    print(f"launch overhead, 32 units: {t_small * 1e6:.1f} us")


if __name__ == "__main__":
    main()
