# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""``ops.sort`` and ``ops.argsort`` on the NumPy device run NumPy's sort: in the stream's order
(they see what launches queued before them wrote, and launches queued after them see their
result), with no kernel of the portable sort, and with the portable ops' results."""

from __future__ import annotations

import numpy as np

import ruda_core as ruda
from ruda_core import ops
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, i64, kernel, u32
from ruda_core.runtime import ComputeClient


@kernel
def fill_descending(x: Array[u32]):
    i = ABSOLUTE_POS
    if i < x.len():
        x[i] = u32(x.len()) - i


@kernel
def add_one(x: Array[i64]):
    i = ABSOLUTE_POS
    if i < x.len():
        x[i] += i64(1)


def test_sort_sees_the_launches_queued_before_it(cpu: ComputeClient) -> None:
    n = 1 << 20
    x = ruda.asarray(np.zeros(n, np.uint32), cpu)
    fill_descending.launch(cpu, n // 256, 256, ArrayArg(x.handle, n))  # no sync in between
    np.testing.assert_array_equal(ops.sort(x).numpy(), np.arange(1, n + 1, dtype=np.uint32))


def test_argsort_result_is_a_device_tensor_later_launches_update(cpu: ComputeClient) -> None:
    x = np.array([3.0, -0.0, np.nan, 0.0, -1.0], np.float32)
    indices = ops.argsort(cpu, x)
    assert indices.device == "cpu" and indices.elem.numpy == np.int64
    add_one.launch(cpu, 1, 256, ArrayArg(indices.handle, 5))
    np.testing.assert_array_equal(indices.numpy(), np.argsort(x, kind="stable") + 1)


def test_a_sort_of_a_million_keys_is_numpys_and_launches_no_kernel(cpu: ComputeClient) -> None:
    """Not the portable radix sort's kernels run by the interpreter: the profile of the sort
    holds no kernel at all (its speed is ``benchmarks/primitives.py``'s to show)."""
    x = np.random.default_rng(0).integers(0, 1 << 32, 1 << 20, dtype=np.uint32)
    t = ruda.asarray(x, cpu)
    cpu.sync().result()
    out, duration = cpu.profile(lambda: ops.sort(t))
    assert [e.name for e in duration.trace.events if e.kind == "kernel"] == []
    np.testing.assert_array_equal(out.numpy(), np.sort(x))
