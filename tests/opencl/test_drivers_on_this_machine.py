"""The OpenCL drivers of this machine: a pip-installed runtime shown to the ICD loader beside the
system's drivers, and a driver whose builds fail reported as unusable with its reason."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyopencl")

from ruda_opencl.driver import explain_build_log

PLATFORMS = """
import json, os
from ruda_opencl.driver import all_devices
print(json.dumps({
    "platforms": sorted({d.platform.name.strip() for d in all_devices()}),
    "vendors": os.environ.get("OCL_ICD_VENDORS", ""),
}))
"""

BACKEND = """
import json, ruda_core as ruda
status = next(s for s in ruda.backends() if s.name == "opencl")
print(json.dumps({"status": status.status.value, "reason": status.reason}))
"""

STATUS = """
import json, ruda_core as ruda
status = next(s for s in ruda.backends() if s.name == "opencl")
print(json.dumps({
    "usable": {str(d): ruda.client(d).properties().vendor for d in status.devices},
    "unusable": {str(u.device): u.reason for u in status.unusable},
}))
"""


def _run(code: str, tmp_path: Path, **env: str) -> dict[str, object]:
    """What ``code`` printed in a new process with a new cache folder (every OpenCL device
    probed again) that loads the OpenCL backend alone (the reference device is always kept;
    probing the machine's other drivers would add seconds and prove nothing here)."""
    base = {k: v for k, v in os.environ.items() if k != "OCL_ICD_VENDORS"}
    base["RUDA_BACKENDS"] = "opencl"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, "RUDA_CACHE_DIR": str(tmp_path / "cache"), **env},
    )
    assert result.returncode == 0, result.stderr
    facts: dict[str, object] = json.loads(result.stdout)
    return facts


def _has_pip_intel() -> bool:
    try:
        importlib.metadata.distribution("intel-opencl-rt")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


needs_intel = pytest.mark.skipif(
    not _has_pip_intel(),
    reason="Intel's CPU OpenCL runtime (pip install 'ruda[opencl-cpu]') is absent",
)


def test_an_unknown_target_cpu_names_the_driver_its_llvm_the_cpu_and_the_remedy():
    runtime = "Portable Computing Language (OpenCL 3.0 PoCL 3.0-rc2 Linux, Release, LLVM 14.0.6)"
    log = (
        "Build on <pyopencl.Device 'pthread-AMD EPYC 9B45'>:\n\nerror: unknown target CPU 'generic'"
    )
    line = explain_build_log(runtime, "pthread-AMD EPYC 9B45", log)
    assert "\n" not in line
    assert line.startswith(f"{runtime} cannot build for this CPU (pthread-AMD EPYC 9B45)")
    assert "(LLVM 14.0.6) reports unknown target CPU 'generic'" in line
    assert line.endswith("pip install 'ruda[opencl-cpu]'")


def test_another_build_failure_gives_the_logs_first_error_line():
    log = "clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\nBuild on <dev>:\n\n1:2: error: bad\nmore"
    assert explain_build_log("X (1.0)", "dev", log) == "1:2: error: bad"


@needs_intel
def test_a_pip_installed_runtime_is_visible_without_a_variable(tmp_path):
    facts = _run(PLATFORMS, tmp_path)
    assert "Intel(R) OpenCL" in facts["platforms"]


@needs_intel
def test_the_drivers_of_the_loaders_folder_stay_visible_beside_the_pip_runtime(tmp_path):
    system = tmp_path / "vendors"
    system.mkdir()
    (system / "other.icd").write_text("libruda-no-such-driver.so\n")
    facts = _run(PLATFORMS, tmp_path, OCL_ICD_VENDORS=str(system))
    merged = Path(str(facts["vendors"]))
    assert merged != system
    assert (merged / "other.icd").read_text().strip() == "libruda-no-such-driver.so"
    intel = (merged / "ruda-intel-opencl-rt.icd").read_text().strip()
    assert Path(intel).is_absolute() and Path(intel).name == "libintelocl.so"
    assert "Intel(R) OpenCL" in facts["platforms"]


@needs_intel
def test_opting_out_leaves_the_loader_alone(tmp_path):
    facts = _run(PLATFORMS, tmp_path, RUDA_OPENCL_PIP_ICD="0")
    assert "Intel(R) OpenCL" not in facts["platforms"]
    assert facts["vendors"] == ""


def test_an_opt_out_that_is_neither_0_nor_1_is_refused_naming_the_setting(tmp_path):
    facts = _run(BACKEND, tmp_path, RUDA_OPENCL_PIP_ICD="false")
    assert facts["status"] != "available"
    assert "SettingError: RUDA_OPENCL_PIP_ICD='false' is neither 0" in str(facts["reason"])


def test_a_driver_whose_builds_fail_is_unusable_and_the_others_stay_usable(tmp_path):
    """PoCL refuses every build under a bogus POCL_EXTRA_BUILD_FLAGS: a real driver failure."""
    facts = _run(STATUS, tmp_path, POCL_EXTRA_BUILD_FLAGS="-ruda-bogus-flag")
    pocl = {d: r for d, r in facts["unusable"].items() if "-ruda-bogus-flag" in r}
    if not pocl:
        pytest.skip("no PoCL device here (pip install 'ruda[pocl]')")
    for reason in pocl.values():
        assert reason.startswith("CompilationError: kernel ruda_probe did not build for ")
        assert reason.endswith("Invalid build option: -ruda-bogus-flag")
    assert all("Portable Computing Language" not in v for v in facts["usable"].values())
    if _has_pip_intel():
        assert "Intel(R) OpenCL" in facts["usable"].values()
