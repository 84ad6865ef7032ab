"""Planes on WebGPU whose width is not the subgroups' (``RUDA_WEBGPU_PLANE_DIM``).

WebGPU lets a driver pick each pipeline's subgroup width, and ruda generates a kernel for the
width it measured when it opened the device. A kernel with plane operations that runs in other
subgroups reports it: the next sync raises, naming the kernel, both widths and the setting
that fixes it, instead of returning wrong sums. The setting forces the width a device's
kernels are generated for, so a child process set to twice the device's width makes such a
mismatch on any device with subgroups; set to 1, the device runs planes of one lane without
subgroups, as an adapter without them does, and the operations built on planes still give the
right values. A width ruda does not run is refused, named.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("wgpu")

ROOT = Path(__file__).resolve().parents[2]

#: Run in a child process with ``RUDA_WEBGPU_PLANE_DIM`` set: the device's planes, then a plane
#: sum, a kernel without planes on the same device, and ``ops.sum``, each printing what it got.
CHILD = """
import numpy as np
import ruda_core as ruda
from ruda_core import ops
from ruda_core.lang import (
    ABSOLUTE_POS, UNIT_POS, Array, SharedMemory, kernel, plane_sum, sync_plane, u32
)
from ruda_core.runtime import Feature

@kernel
def plane_sums(x: Array[u32], out: Array[u32]):
    out[ABSOLUTE_POS] = plane_sum(x[ABSOLUTE_POS])

@kernel
def doubled(x: Array[u32], out: Array[u32]):
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS] * u32(2)

@kernel
def synced(x: Array[u32], out: Array[u32]):
    staged = SharedMemory(u32, 64)
    staged[UNIT_POS] = x[ABSOLUTE_POS]
    sync_plane()
    out[ABSOLUTE_POS] = staged[UNIT_POS] + u32(1)

def attempt(label, run):
    try:
        print(label, run())
    except Exception as exc:
        print(label, "raised", f"{type(exc).__name__}: {exc}")

def sums():
    plane_sums.launch(client, 1, 64, x, out)
    client.sync().result()
    return out.numpy().tolist()

def doubles():
    doubled.launch(client, 1, 64, x, out)
    return out.numpy().tolist() == (2 * np.arange(64)).tolist()

client = ruda.client("webgpu:0")
print("planes", client.properties().plane_dim, client.features().has(Feature.PLANE))
x = ruda.asarray(np.arange(64, dtype=np.uint32), client)
out = ruda.asarray(np.zeros(64, np.uint32), client)
attempt("plane sums", sums)
attempt("doubled", doubles)
attempt("sum", lambda: ops.sum(x).numpy())
synced.launch(client, 1, 64, x, out)
attempt("synced", lambda: out.numpy().tolist() == list(range(1, 65)))
"""


def _child(tmp_path: Path, width: str) -> list[str]:
    script = tmp_path / "child.py"  # kernels are read from their file
    script.write_text(CHILD, encoding="utf-8")
    env = {**os.environ, "RUDA_WEBGPU_PLANE_DIM": width}
    run = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run.stdout.splitlines()


def _width(client) -> int:
    width = int(client.properties().plane_dim)
    if width == 1:
        pytest.skip(f"{client.device} has no subgroups (its planes are one lane)")
    return width


def test_a_kernel_in_subgroups_of_another_width_fails_its_sync_naming_the_fix(client, tmp_path):
    width = _width(client)
    lines = _child(tmp_path, str(2 * width))
    assert lines[0] == f"planes {2 * width} True"
    assert lines[1].startswith("plane sums raised LaunchError: kernel plane_sums ran on webgpu:0")
    assert f"in subgroups of {width} units, not the planes of {2 * width}" in lines[1]
    assert f"Set RUDA_WEBGPU_PLANE_DIM={width} for planes of that width (or 1" in lines[1]
    assert lines[2] == "doubled True"  # the device goes on
    # an operation built on planes fails alike rather than give a wrong sum
    assert lines[3].startswith("sum raised") and f"subgroups of {width} units" in lines[3]


def test_planes_of_one_lane_run_plane_operations_without_subgroups(client, tmp_path):
    _width(client)
    lines = _child(tmp_path, "1")
    assert lines[0] == "planes 1 True"
    assert lines[1] == f"plane sums {list(range(64))}"  # each lane's plane is itself
    assert lines[2:] == ["doubled True", f"sum {sum(range(64))}", "synced True"]


def test_the_devices_own_width_runs_plane_operations(client, tmp_path):
    width = _width(client)
    lines = _child(tmp_path, str(width))
    sums = [sum(range(k - k % width, k - k % width + width)) for k in range(64)]
    assert lines[:2] == [f"planes {width} True", f"plane sums {sums}"]
    assert lines[3] == f"sum {sum(range(64))}"


def test_a_width_ruda_does_not_run_is_refused_naming_the_setting(client):
    _width(client)  # read where the adapter has subgroups
    env = {**os.environ, "RUDA_WEBGPU_PLANE_DIM": "24"}
    code = "import ruda_core as ruda; ruda.client('webgpu:0')"
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode != 0
    assert "RUDA_WEBGPU_PLANE_DIM='24' is not a plane width ruda runs" in run.stderr
    assert "one of 1, 2, 4, 8, 16, 32, 64" in run.stderr
    # the device's verdict under that setting is not its verdict once the setting is mended
    del env["RUDA_WEBGPU_PLANE_DIM"]
    again = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
