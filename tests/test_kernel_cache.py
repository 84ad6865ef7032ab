"""The persistent kernel cache: a second process does not recompile; a corrupt entry is a
warning and a rebuild; RUDA_DUMP_SOURCE writes the generated source."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from fresh_processes import run_in_turn

import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, kernel
from ruda_core.runtime import ComputeClient, DeviceId, RudaCount, RudaDim, RudaWarning
from ruda_core.runtime.cache import CacheWarning
from ruda_cpu.server import CpuServer

CHILD = """
import json, sys
import numpy as np
import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, kernel
from ruda_core.runtime import RudaCount, RudaDim

@kernel
def triple(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * f32(3)

client = ruda.client(sys.argv[1])  # probes the device: a first process builds the probe kernel
before = client.server.compile_stats.compiled, client.server.compile_stats.disk_hits
x = np.arange(100, dtype=np.float32)
xh, out = client.create_from_slice(x), client.empty(x.nbytes)
triple.launch(client, RudaCount(1), RudaDim(128), ArrayArg(xh, 100), ArrayArg(out, 100))
assert np.array_equal(np.frombuffer(client.read_one(out), np.float32), 3 * x)
stats = client.server.compile_stats
compiled, disk_hits = stats.compiled - before[0], stats.disk_hits - before[1]
print(json.dumps({"compiled": compiled, "disk_hits": disk_hits}))
"""

_ids = itertools.count(500)


def _devices() -> list[str]:
    present = {str(d) for d in ruda.enumerate_all_devices()}
    return [d for d in ("cpu", "opencl:0") if d in present]


@pytest.mark.parametrize("device", _devices())
def test_second_process_loads_the_kernel_instead_of_compiling(device, tmp_path):
    runs = run_in_turn(CHILD, device, tmp_path)
    assert runs[0] == {"compiled": 1, "disk_hits": 0}
    assert runs[1] == {"compiled": 0, "disk_hits": 1}


@kernel
def plus_one(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] + f32(1)


def _fresh_client() -> ComputeClient:
    index = next(_ids)
    return ComputeClient(("cache-test-cpu", index), CpuServer(DeviceId(0, index)), None)


def _run_plus_one(client: ComputeClient) -> np.ndarray:
    x = np.arange(64, dtype=np.float32)
    xh, out = client.create_from_slice(x), client.empty(x.nbytes)
    plus_one.launch(client, RudaCount(1), RudaDim(64), ArrayArg(xh, 64), ArrayArg(out, 64))
    return np.frombuffer(client.read_one(out), np.float32)


def test_corrupt_entry_is_a_warning_and_a_rebuild(tmp_path, monkeypatch):
    monkeypatch.setenv("RUDA_CACHE_DIR", str(tmp_path))
    np.testing.assert_array_equal(_run_plus_one(_fresh_client()), np.arange(64) + 1)
    entries = [
        p for p in (tmp_path / "kernels").rglob("*") if p.is_file() and ".lock" not in p.name
    ]
    assert entries, "the first launch stored its kernel"
    for path in entries:
        raw = path.read_bytes()
        path.write_bytes(raw[: len(raw) // 2] + b"garbage")
    client = _fresh_client()
    with pytest.warns(CacheWarning, match="corrupt"):
        result = _run_plus_one(client)
    np.testing.assert_array_equal(result, np.arange(64) + 1)
    assert client.server.compile_stats.compiled == 1


def test_dump_source_writes_the_generated_code(tmp_path, monkeypatch):
    monkeypatch.setenv("RUDA_DUMP_SOURCE", str(tmp_path / "dump"))
    monkeypatch.setenv("RUDA_CACHE_DIR", str(tmp_path / "cache"))
    _run_plus_one(_fresh_client())
    dumped = list(Path(tmp_path / "dump").glob("plus_one-*-checked.py"))
    assert dumped and "plus_one" in dumped[0].read_text()


def test_dump_source_into_a_folder_that_cannot_be_made_warns_once_and_runs(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("RUDA_DUMP_SOURCE", str(blocker / "dump"))
    monkeypatch.setenv("RUDA_CACHE_DIR", str(tmp_path / "cache"))
    client = _fresh_client()
    with pytest.warns(RudaWarning, match="RUDA_DUMP_SOURCE=.*cannot write") as caught:
        result = _run_plus_one(client)
        x = client.create_from_slice(np.zeros(8, np.float32))  # a second kernel: no warning
        plus_one.launch_unchecked(client, RudaCount(1), RudaDim(8), ArrayArg(x, 8), ArrayArg(x, 8))
        client.sync().result()
    np.testing.assert_array_equal(result, np.arange(64) + 1)
    assert len(caught) == 1
    assert client.server.compile_stats.compiled == 2
