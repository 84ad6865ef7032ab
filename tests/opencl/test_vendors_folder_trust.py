"""The OpenCL vendors folder ruda writes under its cache names libraries the ICD loader opens:
it is trusted only as the cache is, and what it names is what ruda wrote. Where the cache has
no folder to use, a private one of the process shows the loader the same drivers."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyopencl")

try:
    importlib.metadata.distribution("intel-opencl-rt")
except importlib.metadata.PackageNotFoundError:
    pytest.skip("no pip OpenCL runtime to show the loader", allow_module_level=True)

PLATFORMS = """
import json, os, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from ruda_opencl.driver import all_devices
    platforms = sorted({d.platform.name.strip() for d in all_devices()})
print(json.dumps({
    "platforms": platforms,
    "order": [d.platform.name.strip() for d in all_devices()],
    "vendors": os.environ.get("OCL_ICD_VENDORS", ""),
    "warnings": [str(w.message) for w in caught],
}))
"""


def _platforms(cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "OCL_ICD_VENDORS"}
    done = subprocess.run(
        [sys.executable, "-c", PLATFORMS],
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "RUDA_CACHE_DIR": str(cache)},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_group_writable_cache_root_is_not_shown_to_the_loader(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o775)
    facts = _platforms(cache)
    vendors = Path(facts["vendors"])
    assert vendors.name.startswith("ruda-opencl-icd-") and cache not in vendors.parents
    assert "Intel(R) OpenCL" in facts["platforms"], "the devices do not depend on the cache"
    (warning,) = facts["warnings"]
    assert f"chmod 700 {cache}" in warning
    assert list(cache.iterdir()) == []
    assert not vendors.exists(), "the private folder goes with its process"


def test_a_cache_that_is_no_folder_leaves_the_opencl_devices_as_they_are(tmp_path: Path) -> None:
    usable = _platforms(tmp_path / "cache")
    blocked = tmp_path / "file"
    blocked.write_text("not a folder\n")
    facts = _platforms(blocked)
    assert facts["order"] == usable["order"], "opencl:k is the same device either way"
    assert "Intel(R) OpenCL" in facts["platforms"]
    (warning,) = facts["warnings"]
    assert f"cannot create the cache folder {blocked}" in warning


def test_a_planted_library_name_is_replaced_by_the_one_ruda_wrote(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _platforms(cache)
    assert "Intel(R) OpenCL" in first["platforms"]
    icds = list((cache / "opencl-icd").rglob("*.icd"))
    assert icds and {oct(p.stat().st_mode & 0o777) for p in icds} == {"0o600"}
    written = {p: p.read_text() for p in icds}
    for path in icds:
        path.write_text(str(tmp_path / "libplanted.so") + "\n")
    again = _platforms(cache)
    assert again["vendors"] == first["vendors"] and again["warnings"] == []
    assert {p: p.read_text() for p in icds} == written
    assert "Intel(R) OpenCL" in again["platforms"]
