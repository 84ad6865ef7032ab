"""Branches that few lanes take run over those lanes alone (``ruda_cpu.lockstep.subsets``), with
the results, poison and sanitizer findings of a run over every lane.

Each kernel here runs with ``SUBSET_FRACTION`` at 0 (every branch over all lanes), at its
default and infinite (every branch that may, over its active lanes alone), and must give the
same bits each time, and what plain NumPy computes.
"""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.errors import SanitizerError
from ruda_core.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
    Array,
    ArrayArg,
    LocalArray,
    SharedMemory,
    exp,
    f32,
    kernel,
    sqrt,
    sync_units,
    u32,
)
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim
from ruda_core.testing.runner import read_array
from ruda_cpu import sanitizing
from ruda_cpu.lockstep import subsets

UNITS, CUBES = 64, 40
N = UNITS * CUBES
#: SUBSET_FRACTION values: never narrowed, the default, always where the branch may be.
FRACTIONS = [0.0, subsets.SUBSET_FRACTION, float("inf")]


@kernel
def rare_branch(x: Array[f32], flag: Array[u32], out: Array[f32], hits: Array[u32]):
    buf = SharedMemory(f32, 64)
    scratch = LocalArray(f32, 2)
    i = ABSOLUTE_POS
    v = x[i]
    buf[UNIT_POS] = v
    sync_units()
    n = u32(0)
    if flag[i] != u32(0):
        scratch[flag[i] % u32(2)] = sqrt(v)
        a = exp(v) + buf[(UNIT_POS + u32(1)) % u32(64)]  # a neighbour that takes no branch
        if flag[i] > u32(2):
            a = a * f32(-1)
        else:
            n = u32(7)
        v = a + scratch[flag[i] % u32(2)]
    out[i] = v
    hits[i] = n + UNIT_POS


def rare_reference(x: np.ndarray, flag: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    neighbour = np.roll(x.reshape(CUBES, UNITS), -1, axis=1).ravel()
    a = np.exp(x) + neighbour
    a = np.where(flag > 2, -a, a)
    taken = flag != 0
    out = np.where(taken, a + np.sqrt(x), x)
    hits = np.where(taken & (flag <= 2), 7, 0) + np.tile(np.arange(UNITS), CUBES)
    return out.astype(np.float32), hits.astype(np.uint32)


def run_rare(cpu: ComputeClient, flag: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(3).random(N, dtype=np.float32)
    out, hits = cpu.empty(4 * N), cpu.empty(4 * N)
    rare_branch.launch(
        cpu,
        RudaCount(CUBES),
        RudaDim(UNITS),
        ArrayArg(cpu.create_from_slice(x), N),
        ArrayArg(cpu.create_from_slice(flag), N),
        ArrayArg(out, N),
        ArrayArg(hits, N),
    )
    got = read_array(cpu, out, np.float32), read_array(cpu, hits, np.uint32)
    want = rare_reference(x, flag)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_array_equal(got[1], want[1])
    return got


@pytest.mark.parametrize("taken", [0.0, 0.02, 0.2, 0.6, 1.0])
def test_a_branch_gives_the_same_bits_over_its_lanes_alone(
    cpu: ComputeClient, monkeypatch: pytest.MonkeyPatch, taken: float
) -> None:
    rng = np.random.default_rng(11)
    flag = np.where(rng.random(N) < taken, rng.integers(1, 5, N), 0).astype(np.uint32)
    runs = []
    for fraction in FRACTIONS:
        monkeypatch.setattr(subsets, "SUBSET_FRACTION", fraction)
        runs.append(run_rare(cpu, flag))
    for out, hits in runs[1:]:
        np.testing.assert_array_equal(out.view(np.uint32), runs[0][0].view(np.uint32))
        np.testing.assert_array_equal(hits, runs[0][1])


@kernel
def rare_unwritten_read(flag: Array[u32], out: Array[u32]):
    buf = SharedMemory(u32, 64)
    never = SharedMemory(u32, 4)
    i = ABSOLUTE_POS
    buf[UNIT_POS] = UNIT_POS
    v = u32(0)
    if flag[i] != u32(0):
        v = buf[(UNIT_POS + u32(1)) % u32(64)]  # no barrier: a race with the neighbour's write
        v += never[UNIT_POS % u32(4)]  # never written: poison
    out[i] = v


#: The lanes that take the branch of ``rare_unwritten_read``.
RARE_LANES = [5, 70, 2000]


def launch_unwritten(cpu: ComputeClient) -> np.ndarray:
    flag = np.zeros(N, np.uint32)
    flag[RARE_LANES] = 1
    out = cpu.empty(4 * N)
    rare_unwritten_read.launch(
        cpu,
        RudaCount(CUBES),
        RudaDim(UNITS),
        ArrayArg(cpu.create_from_slice(flag), N),
        ArrayArg(out, N),
    )
    return read_array(cpu, out, np.uint32)


def test_the_sanitizer_finds_the_same_faults_in_a_rare_branch(
    cpu: ComputeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages = []
    for fraction in FRACTIONS:
        monkeypatch.setattr(subsets, "SUBSET_FRACTION", fraction)
        with sanitizing(), pytest.raises(SanitizerError) as caught:
            launch_unwritten(cpu)
        messages.append(str(caught.value))
    assert "race" in messages[0] and "never" in messages[0], messages[0]
    assert messages == [messages[0]] * len(FRACTIONS)


@pytest.mark.usefixtures("unsanitized")  # races and reads unwritten memory on purpose
def test_a_rare_branch_reads_lockstep_writes_and_poison_over_its_lanes_alone(
    cpu: ComputeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    want = np.zeros(N, np.uint32)
    for lane in RARE_LANES:
        want[lane] = ((lane % UNITS + 1) % UNITS + 0xA5A5A5A5) % 2**32
    for fraction in FRACTIONS:
        monkeypatch.setattr(subsets, "SUBSET_FRACTION", fraction)
        np.testing.assert_array_equal(launch_unwritten(cpu), want)
