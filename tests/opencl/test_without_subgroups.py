"""OpenCL devices as ones without subgroups (``RUDA_OPENCL_SUBGROUPS=0``): planes of one lane.

NVIDIA's OpenCL driver offers no subgroups; the form it runs in is tested here on whatever
OpenCL device this machine has (Intel's CPU driver, whose subgroups the variable drops): the
variable's values, the capabilities it leaves, and the conformance modules of the plane
operations, the cube collectives and the primitives built on them, run again in a child
process with the variable set (the width is chosen when a server is made, once per process).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyopencl")

import ruda_core as ruda
from ruda_core.runtime import Feature
from ruda_opencl.capabilities import SUBGROUPS_VARIABLE, OpenCLCapabilities, subgroups_from_env
from ruda_opencl.driver import all_devices

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = ROOT / "ruda_core" / "testing" / "conformance"
#: The conformance modules that use planes: plane operations, cube collectives, primitives.
MODULES = [
    "test_plane.py",
    "test_plane_lanes.py",
    "test_plane_partial.py",
    "test_units_collectives.py",
    "test_primitives.py",
]
#: The child's pytest options: quiet, in one process; without the sums queued on two streams
#: behind a spinning kernel, which prove the streams' order, not planes (the same sums are
#: checked without subgroups by themselves); the primitives on f32 and i64 alone (and those
#: that take no element type): planes of one lane are what this run changes, and the other
#: element types are checked with subgroups by the run around it (this cuts 28 s to 13 s).
#: The narrow types (bool, 8- and 16-bit, f16) are left out for the same reason: their folds
#: run in i32, u32 and f32 planes, which the f32 tests and the run around it cover.
CHILD_OPTIONS = [
    "-q",
    "-p",
    "no:xdist",
    "-p",
    "no:cacheprovider",
    "-k",
    "not test_sums_on_two_streams_at_once and not (test_primitives and (i32 or u32 or u64 or f64"
    " or narrow or bool_masks or f16_min_max))",
]


def _opencl_devices() -> list[str]:
    """The OpenCL devices this machine can open, as users name them."""
    names = [f"opencl:{d.index}" for d in ruda.enumerate_all_devices() if d.backend == "opencl"]
    if not names:
        pytest.skip("no usable OpenCL device here")
    return names


@pytest.mark.parametrize(("raw", "subgroups"), [("", True), ("1", True), ("0", False)])
def test_the_variable_turns_subgroups_off_with_0(
    monkeypatch: pytest.MonkeyPatch, raw: str, subgroups: bool
) -> None:
    monkeypatch.setenv(SUBGROUPS_VARIABLE, raw)
    assert subgroups_from_env() is subgroups


@pytest.mark.parametrize("raw", ["no", "off", "2", "true"])
def test_another_value_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv(SUBGROUPS_VARIABLE, raw)
    with pytest.raises(ValueError, match=r"RUDA_OPENCL_SUBGROUPS=.* neither 0 .* nor 1"):
        subgroups_from_env()


def test_a_device_read_without_subgroups_has_planes_of_one_lane() -> None:
    for name in _opencl_devices():
        device = all_devices()[int(name.split(":")[1])]
        caps = OpenCLCapabilities.of(device, subgroups=False)
        assert caps.plane_dim == 1, name
        assert not [c for c in caps.target.capabilities if "subgroup" in c], caps.target
        planes = {Feature.PLANE, Feature.PLANE_SHUFFLE, Feature.PARTIAL_PLANE}
        if "Portable Computing Language" in device.platform.name:  # PoCL: no planes at all
            assert not planes & caps.features().features, name
        else:
            assert planes <= caps.features().features, name


@pytest.mark.slow
def test_the_plane_conformance_modules_without_subgroups() -> None:
    """Every plane operation, cube collective and primitive on every OpenCL device here, run as
    a device without subgroups; the child's devices report planes of one lane."""
    devices = _opencl_devices()
    env = {
        **os.environ,
        SUBGROUPS_VARIABLE: "0",
        "RUDA_REQUIRE": "opencl",
        "RUDA_BACKENDS": "opencl",
    }
    report = f"import ruda_core; print(ruda_core.client({devices[0]!r}).properties().plane_dim)"
    width = subprocess.run(
        [sys.executable, "-c", report], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert width.stdout.strip() == "1", width.stdout + width.stderr[-2000:]
    selected = [option for name in devices for option in ("--ruda-device", name)]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *CHILD_OPTIONS, *selected]
        + [str(CONFORMANCE / name) for name in MODULES],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
