"""The reference device at other plane widths than 32 (``RUDA_CPU_PLANE_DIM``).

A kernel that assumes planes of 32 lanes is right on the reference device at its default width
and wrong on a device with planes of 16 (or of 1, where there are no planes); at another width
the reference device shows the mistake. The widths are chosen when a server is made, so these
tests use servers of their own (``width_clients``, one per width) and run the conformance
modules whose kernels use planes or shared memory again at 16 lanes and at 1, with the device
and launch modules and the operations built on planes at 16, in child processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ruda_core.lang import (
    ABSOLUTE_POS,
    PLANE_DIM,
    RUDA_DIM,
    RUDA_POS,
    UNIT_POS,
    UNIT_POS_PLANE,
    Array,
    ArrayArg,
    Comptime,
    Kernel,
    SharedMemory,
    kernel,
    plane_sum,
    sync_units,
    u32,
)
from ruda_core.runtime import ComputeClient, DeviceId, RudaCount, RudaDim
from ruda_core.testing.runner import read_array
from ruda_cpu.server import DEFAULT_PLANE_DIM, CpuServer, plane_dim_from_env

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = ROOT / "ruda_core" / "testing" / "conformance"
#: The conformance modules whose kernels use planes or shared memory (run at planes of 1).
WIDTH_MODULES = [
    "test_atomics.py",
    "test_barriers.py",
    "test_builtins.py",
    "test_matrix.py",
    "test_plane.py",
    "test_plane_lanes.py",
    "test_plane_partial.py",
    "test_sanitizer.py",
    "test_shared_memory.py",
    "test_units_collectives.py",
]
#: The modules also run at planes of 16: the device and launch facts that read the width, and
#: the operations built on planes (the rest of the suite has no plane in its kernels).
WIDTH_16_MODULES = [
    *WIDTH_MODULES,
    "test_devices.py",
    "test_launch.py",
    "test_layer_norm.py",
    "test_overrides.py",
    "test_primitives.py",
    "test_warpgroup.py",
]
#: Left out of the children: sums queued on two streams behind a spinning kernel prove the
#: streams' order, not a width (the same sums are checked at each width by themselves).
NOT_WIDTH = "not test_sums_on_two_streams_at_once"
BLOCK = 256
#: The child's pytest options: quiet, in one process, on the reference device only.
CHILD_OPTIONS = ["-q", "-p", "no:xdist", "-p", "no:cacheprovider", "--ruda-device", "cpu"]


@kernel
def partials_for_planes_of_32(x: Array[u32], out: Array[u32], BLOCK: Comptime[int]):
    partials = SharedMemory(u32, BLOCK // 32)  # the mistake: one slot per 32 units
    s = plane_sum(x[ABSOLUTE_POS])
    if UNIT_POS % u32(32) == u32(0):
        partials[UNIT_POS // u32(32)] = s
    sync_units()
    if UNIT_POS == u32(0):
        total = u32(0)
        for k in range(BLOCK // 32):
            total += partials[k]
        out[RUDA_POS] = total


@kernel
def partials_per_plane(x: Array[u32], out: Array[u32], BLOCK: Comptime[int]):
    partials = SharedMemory(u32, BLOCK)  # enough for planes of one lane
    s = plane_sum(x[ABSOLUTE_POS])
    if UNIT_POS_PLANE == u32(0):
        partials[UNIT_POS // PLANE_DIM] = s
    sync_units()
    if UNIT_POS == u32(0):
        total = u32(0)
        k = u32(0)
        while k < (RUDA_DIM + PLANE_DIM - u32(1)) // PLANE_DIM:
            total += partials[k]
            k += u32(1)
        out[RUDA_POS] = total


def block_sums(
    client: ComputeClient, body: Kernel, cubes: int = 3
) -> tuple[np.ndarray, np.ndarray]:
    """``body``'s per-cube sums of cubes of :data:`BLOCK` units, and the exact sums."""
    x = np.random.default_rng(7).integers(0, 1000, cubes * BLOCK).astype(np.uint32)
    out = client.empty(4 * cubes)
    body.launch(
        client,
        RudaCount(cubes),
        RudaDim(BLOCK),
        ArrayArg(client.create_from_slice(x), x.size),
        ArrayArg(out, cubes),
        BLOCK=BLOCK,
    )
    return read_array(client, out, np.uint32), x.reshape(cubes, BLOCK).sum(axis=1)


def test_default_width_is_32(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RUDA_CPU_PLANE_DIM", raising=False)
    assert plane_dim_from_env() == DEFAULT_PLANE_DIM == 32


@pytest.mark.parametrize("raw", ["24", "0", "128", "sixteen", "-16"])
def test_a_width_the_device_lacks_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("RUDA_CPU_PLANE_DIM", raw)
    with pytest.raises(ValueError, match=r"RUDA_CPU_PLANE_DIM=.*one of 1, 2, 4, 8, 16, 32, 64"):
        CpuServer(DeviceId(0, 0))


@kernel
def plane_geometry(out: Array[u32]):
    out[ABSOLUTE_POS] = PLANE_DIM * u32(1000) + UNIT_POS_PLANE


def test_each_width_is_reported_and_compiled_for(
    width_clients: dict[int, ComputeClient],
) -> None:
    units = 100
    for width, client in width_clients.items():  # one kernel, built per width (the key has it)
        assert client.properties().plane_dim == width
        assert client.server.compile_options().plane_dim == width
        out = client.empty(4 * units)
        plane_geometry.launch(client, RudaCount(1), RudaDim(units), ArrayArg(out, units))
        want = width * 1000 + np.arange(units) % width
        np.testing.assert_array_equal(read_array(client, out, np.uint32), want)


def test_partials_sized_for_planes_of_32_are_wrong_at_16(
    width_clients: dict[int, ComputeClient],
) -> None:
    got, want = block_sums(width_clients[32], partials_for_planes_of_32)
    np.testing.assert_array_equal(got, want)  # the width it was written for hides the mistake
    got, want = block_sums(width_clients[16], partials_for_planes_of_32)
    assert (got != want).all(), (got, want)


@pytest.mark.parametrize("width", [1, 16, 32, 64])
def test_partials_per_plane_are_exact_at_every_width(
    width_clients: dict[int, ComputeClient], width: int
) -> None:
    got, want = block_sums(width_clients[width], partials_per_plane)
    np.testing.assert_array_equal(got, want)


@pytest.mark.slow
@pytest.mark.parametrize("width", [16, 1])
def test_the_conformance_suite_at_another_width(width: int) -> None:
    """The conformance modules with planes in their kernels at planes of 16, and the plane and
    shared-memory modules at planes of 1 (no planes at all)."""
    env = {**os.environ, "RUDA_CPU_PLANE_DIM": str(width), "RUDA_REQUIRE": "cpu"}
    env["RUDA_BACKENDS"] = "cpu"  # cpu alone
    names = WIDTH_MODULES if width == 1 else WIDTH_16_MODULES
    modules = [str(CONFORMANCE / name) for name in names]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *CHILD_OPTIONS, "-k", NOT_WIDTH, *modules],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
