"""Driver plugins: isolation of a broken plugin, strict mode, selection, device strings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ruda_core as ruda
from ruda_core import Status

PROBE = """
import json, ruda_core as ruda
print(json.dumps({
    "backends": {s.name: [s.status.value, s.reason] for s in ruda.backends()},
    "devices": [str(d) for d in ruda.enumerate_all_devices()],
}))
"""


def _fake_distribution(root: Path, entry_points: str, modules: dict[str, str]) -> Path:
    """A real installed distribution on a path entry: dist-info metadata plus modules."""
    info = root / "fake_driver-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-driver\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)
    for name, text in modules.items():
        (root / f"{name}.py").write_text(text)
    return root


def _run(code: str, path: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **env}
    if path is not None:
        full_env["PYTHONPATH"] = f"{path}{os.pathsep}{full_env.get('PYTHONPATH', '')}"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=120
    )


@pytest.fixture
def broken_plugin(tmp_path: Path) -> Path:
    return _fake_distribution(
        tmp_path,
        "[ruda.backends]\nbroken = ruda_fake_broken_driver\n",
        {"ruda_fake_broken_driver": "raise ImportError('the vendor library is missing')\n"},
    )


def test_broken_plugin_is_a_status_and_others_still_enumerate(broken_plugin):
    result = _run(PROBE, broken_plugin)
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    status, reason = facts["backends"]["broken"]
    assert status == "import failed"
    assert "fake-driver" in reason and "the vendor library is missing" in reason
    assert facts["backends"]["cpu"][0] == "available"
    assert "cpu" in facts["devices"]


def test_strict_plugins_make_a_broken_plugin_fatal(broken_plugin):
    result = _run(PROBE, broken_plugin, RUDA_STRICT_PLUGINS="1")
    assert result.returncode != 0
    assert "PluginError" in result.stderr and "the vendor library is missing" in result.stderr


def test_selected_backend_that_fails_raises_naming_the_variable(broken_plugin):
    result = _run(PROBE, broken_plugin, RUDA_BACKENDS="broken")
    assert result.returncode != 0
    assert "BackendUnavailable" in result.stderr and "RUDA_BACKENDS" in result.stderr


def test_selection_keeps_the_reference_backend(broken_plugin):
    result = _run(PROBE, broken_plugin, RUDA_BACKENDS="cpu")
    facts = json.loads(result.stdout)
    assert set(facts["backends"]) == {"cpu"}


def test_plugin_with_wrong_api_version_is_refused(tmp_path):
    module = (
        "from ruda_core.plugins import BackendInfo, hookimpl\n"
        "from ruda_cpu import CpuRuntime\n"
        "@hookimpl\n"
        "def ruda_backend_info():\n"
        "    return BackendInfo('future', '9.0', 99, CpuRuntime, lambda: [])\n"
    )
    root = _fake_distribution(
        tmp_path, "[ruda.backends]\nfuture = ruda_fake_future\n", {"ruda_fake_future": module}
    )
    facts = json.loads(_run(PROBE, root).stdout)
    status, reason = facts["backends"]["future"]
    assert status == "import failed" and "plugin API 99" in reason


def test_driverless_backends_report_a_reason():
    for status in ruda.backends():
        if status.status is not Status.AVAILABLE:
            assert status.reason, f"{status.name} is {status.status.value} without a reason"


def test_unknown_device_string_lists_what_exists():
    with pytest.raises(ValueError, match=r"devices present: .*cpu"):
        ruda.client("tpu:0")
    with pytest.raises(ValueError, match="does not exist; cpu devices present: cpu"):
        ruda.client("cpu:3")
    with pytest.raises(ValueError, match="device index"):
        ruda.client("cpu:x")


def test_importing_ruda_core_imports_no_driver():
    code = (
        "import sys, ruda_core, ruda_core.lang, ruda_core.runtime\n"
        "print(sorted(m for m in ('cupy', 'pyopencl') if m in sys.modules))"
    )
    result = _run(code)
    assert result.stdout.strip() == "[]", result.stderr
