"""Shared memory and local arrays start poisoned on the reference device.

A GPU starts a cube's shared memory with whatever was there before, so a kernel that forgets
to zero it is wrong there; the reference device fills it with ``0xA5`` bytes (a NaN for floats,
see ``ruda_cpu.lockstep.poison``) so that the mistake shows on it too.
"""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
    Array,
    ArrayArg,
    Comptime,
    Kernel,
    LocalArray,
    Numeric,
    SharedMemory,
    atomic_add,
    kernel,
    sync_units,
    u32,
)
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim
from ruda_core.testing.conformance.test_atomics import conformance_shared_histogram
from ruda_core.testing.processes import run_script
from ruda_core.testing.runner import read_array
from ruda_cpu.lockstep.poison import pattern_bits

BINS, UNITS, CUBES = 16, 64, 5
#: Every element type but ``bool``, whose poison is ``True``.
ELEMS = [e for e in Elem if e is not Elem.BOOL]


@kernel
def histogram_bins_never_zeroed(x: Array[u32], hist: Array[u32], BINS: Comptime[int]):
    local = SharedMemory(u32, BINS)
    i = ABSOLUTE_POS
    if i < x.len():
        atomic_add(local, x[i] % u32(BINS), u32(1))
    sync_units()
    if UNIT_POS < u32(BINS):
        atomic_add(hist, UNIT_POS, local[UNIT_POS])


@kernel
def read_unwritten(shared_out: Array[Numeric], local_out: Array[Numeric]):
    smem = SharedMemory(Numeric, 4)
    scratch = LocalArray(Numeric, 2)
    shared_out[ABSOLUTE_POS] = smem[UNIT_POS % u32(4)]
    local_out[ABSOLUTE_POS] = scratch[UNIT_POS % u32(2)]


def run_histogram(cpu: ComputeClient, body: Kernel) -> tuple[np.ndarray, np.ndarray]:
    """``body``'s histogram of :data:`CUBES` cubes of values, and the exact one."""
    x = np.random.default_rng(5).integers(0, 1000, CUBES * UNITS - 9).astype(np.uint32)
    hist = cpu.create_from_slice(np.zeros(BINS, np.uint32))
    body.launch(
        cpu,
        RudaCount(CUBES),
        RudaDim(UNITS),
        ArrayArg(cpu.create_from_slice(x), x.size),
        ArrayArg(hist, BINS),
        BINS=BINS,
    )
    return read_array(cpu, hist, np.uint32), np.bincount(x % BINS, minlength=BINS)


@pytest.mark.usefixtures("unsanitized")  # reads unwritten memory on purpose
def test_bins_never_zeroed_count_from_the_poison(cpu: ComputeClient) -> None:
    got, want = run_histogram(cpu, histogram_bins_never_zeroed)
    # every cube's bins started at 0xA5A5A5A5, and the device adds them all up (mod 2**32)
    poisoned = (want.astype(np.uint64) + CUBES * 0xA5A5A5A5) % 2**32
    np.testing.assert_array_equal(got, poisoned)


def test_bins_zeroed_before_a_barrier_are_exact(cpu: ComputeClient) -> None:
    got, want = run_histogram(cpu, conformance_shared_histogram)  # its correct twin
    np.testing.assert_array_equal(got, want)


@pytest.mark.usefixtures("unsanitized")  # reads unwritten memory on purpose
@pytest.mark.parametrize("elem", ELEMS, ids=str)
def test_unwritten_shared_and_local_elements_read_the_poison(
    cpu: ComputeClient, elem: Elem
) -> None:
    n = 2 * 8
    outs = [cpu.empty(n * elem.nbytes) for _ in range(2)]
    read_unwritten.launch(
        cpu, RudaCount(2), RudaDim(8), *(ArrayArg(out, n, elem=elem) for out in outs)
    )
    dtype = np.dtype(elem.numpy)
    bits = np.dtype(f"u{dtype.itemsize}")
    for out in outs:
        got = read_array(cpu, out, dtype).view(bits)
        assert (got == pattern_bits(dtype)).all(), (elem, got)
    if elem.is_float:
        assert np.isnan(read_array(cpu, outs[0], dtype).astype(np.float32)).all()


_UNWRITTEN = """
import numpy as np
import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, f32, i32, kernel


@kernel
def accumulate(x: Array[f32], total: Array[f32], count: Array[i32]):
    i = ABSOLUTE_POS
    if i < x.len():
        total[i] = total[i] + x[i]  # the mistake: total never zeroed
        count[i] = count[i] + 1


client = ruda.client("cpu")
x = ruda.asarray(np.ones(8, np.float32), client)
total = ruda.RudaTensor.empty(client, (8,), np.float32)
count = ruda.RudaTensor.empty(client, (8,), np.int32)
accumulate.launch(client, 1, 8, x, total, count)
print(total.numpy().tolist())
print(count.numpy().tolist())
print(np.frombuffer(client.read_one(client.empty(12)), np.uint8).tolist())
"""


@pytest.mark.usefixtures("unsanitized")  # reads unwritten memory on purpose
def test_device_memory_nothing_wrote_reads_nan_and_minus_one(tmp_path) -> None:
    """A new process, so that every page is new: an accumulator taken from ``empty`` shows
    the mistake instead of starting from the zeros of a fresh system page."""
    done = run_script(_UNWRITTEN, tmp_path)
    assert done.returncode == 0, done.stderr
    totals, counts, raw = done.stdout.splitlines()
    assert totals == str([float("nan")] * 8) and counts == str([0] * 8)
    assert raw == str([0xFF] * 12)
