"""Intel's CPU compiler is set to skip the pass that corrupts its heap, only where each of its
libraries the loader opens knows the option (an unknown one ends the process)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ruda_opencl.intel_cpu import COMPILER_OPTION, avoid_compiler_crash

VARIABLE = "CL_CONFIG_LLVM_OPTIONS"


def _library(folder: Path, name: str, *words: str) -> str:
    path = folder / name
    path.write_bytes(b"\0ELF".join(word.encode() for word in ("header", *words, "end")))
    return str(path)


def test_the_option_is_added_where_every_intel_library_knows_it(tmp_path, monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    knows = _library(tmp_path, "libintelocl.so", VARIABLE, COMPILER_OPTION[1:-2])
    older = _library(tmp_path, "libintelocl.so.2023.1", VARIABLE)
    pocl = _library(tmp_path, "libpocl.so.2")
    assert not avoid_compiler_crash([pocl, "/no/such/libintelocl.so"])
    assert not avoid_compiler_crash([knows, older])  # the older one would end the process
    assert not avoid_compiler_crash([knows, "libintelocl.so"])  # a bare name: not checked
    assert VARIABLE not in os.environ
    assert avoid_compiler_crash([pocl, knows])
    assert os.environ[VARIABLE] == COMPILER_OPTION
    assert avoid_compiler_crash([knows])  # once is enough
    assert os.environ[VARIABLE] == COMPILER_OPTION


def test_the_option_joins_the_user_s_own_and_leaves_their_threshold_alone(tmp_path, monkeypatch):
    knows = _library(tmp_path, "libintelocl.so.2026", VARIABLE, COMPILER_OPTION[1:-2])
    monkeypatch.setenv(VARIABLE, "-time-passes")
    assert avoid_compiler_crash([knows])
    assert os.environ[VARIABLE] == f"-time-passes {COMPILER_OPTION}"
    monkeypatch.setenv(VARIABLE, "-sycl-barrier-copy-instruction-threshold=4")
    assert not avoid_compiler_crash([knows])
    assert os.environ[VARIABLE] == "-sycl-barrier-copy-instruction-threshold=4"


def test_listing_opencl_devices_sets_the_option_for_the_pip_intel_runtime(tmp_path):
    try:
        importlib.metadata.distribution("intel-opencl-rt")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("opencl: Intel's CPU runtime (pip: intel-opencl-rt) is not installed")
    code = "import os\nfrom ruda_opencl.driver import all_devices\nall_devices()\n"
    code += f"print(os.environ.get({VARIABLE!r}, ''))"
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    env["RUDA_CACHE_DIR"] = str(tmp_path / "cache")
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [COMPILER_OPTION]
