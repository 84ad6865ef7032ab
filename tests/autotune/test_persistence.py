"""Tuning results persist across processes under RUDA_CACHE_DIR; a corrupt or foreign entry is a
warning and a new tuning; a device without a driver fingerprint tunes into a session-only
store and writes nothing."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from fresh_processes import known_verdicts, run_in_turn, start

import ruda_core as ruda
from ruda_core.autotune import Tuner, runtime_environment
from ruda_core.autotune.cache import entry_key, key_repr
from ruda_core.runtime import ComputeClient, DeviceId
from ruda_core.runtime.cache import CacheKind, CacheWarning, DiskCache, EntryOrigin
from ruda_cpu import CpuRuntime
from ruda_cpu.server import CpuServer

from .kernels import N, inputs, make_set, present_devices, read_u32, run_fast, run_slow

EXPECTED = 2 * np.arange(N, dtype=np.uint32)

CHILD = """
import json, sys
import numpy as np
import ruda_core as ruda
from ruda_core.autotune import Tunable, TunableSet, Tuner, anchor
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, kernel, u32
from ruda_core.runtime import RudaCount, RudaDim

@kernel
def child_fast(x: Array[u32], out: Array[u32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * u32(2)

@kernel
def child_slow(x: Array[u32], out: Array[u32], reps: u32, mul: u32, add: u32):
    i = ABSOLUTE_POS
    if i < out.len():
        acc = x[i]
        for _k in range(reps):
            acc = acc * mul + add
        out[i] = acc * u32(2)

def fast(client, x, n):
    out = client.empty(4 * n)
    child_fast.launch(client, RudaCount(n // 64), RudaDim(64), ArrayArg(x, n), ArrayArg(out, n))
    return out

def slow(client, x, n):
    out = client.empty(4 * n)
    child_slow.launch(client, RudaCount(n // 64), RudaDim(64), ArrayArg(x, n), ArrayArg(out, n),
                      REPS, 1, 0)
    return out

client = ruda.client(sys.argv[1])
# the slow candidate's steps must outlast a launch's noise on a loaded host (a GPU's OpenCL
# launch varies by tens of µs), yet stay short on a CPU; the NumPy device interprets each step
GPU = client.properties().compute_units >= 64
REPS = 256 if sys.argv[1] == "cpu" else 1 << 16 if GPU else 1 << 15
DOUBLE = TunableSet("child.double", lambda x, n: anchor(n),
                    [Tunable("slow", slow), Tunable("fast", fast)])
tuner = Tuner()
x = np.arange(4096, dtype=np.uint32)
out = tuner.execute(client, DOUBLE, client.create_from_slice(x), 4096)
assert np.array_equal(np.frombuffer(client.read_one(out), np.uint32), 2 * x)
winner = tuner.tune(client, DOUBLE, None, 4096).winner
stats = tuner.stats
print(json.dumps({"benchmarked": stats.benchmarked, "cache_hits": stats.cache_hits,
                  "winner": winner}))
"""


@pytest.mark.parametrize("device", present_devices())
def test_a_second_process_uses_the_stored_result_without_benchmarking(device, tmp_path):
    runs = run_in_turn(CHILD, device, tmp_path)
    assert runs[0] == {"benchmarked": 1, "cache_hits": 1, "winner": "fast"}  # tune(): a hit
    assert runs[1] == {"benchmarked": 0, "cache_hits": 2, "winner": "fast"}
    assert _entries(tmp_path / "cache"), "the entry was written"


TOGETHER = """
import json, os, sys, time
import numpy as np
import ruda_core as ruda
from ruda_core.autotune import Tunable, TunableSet, Tuner, anchor

def copy(client, x, n):
    time.sleep(0.1)  # each run outlasts the other process's start: the tunings would overlap
    return client.create_from_slice(np.arange(n, dtype=np.uint32))

client = ruda.client("cpu")
print("ready", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
SET = TunableSet("child.together", lambda x, n: anchor(n), [Tunable("a", copy), Tunable("b", copy)])
tuner = Tuner()
winner = tuner.tune(client, SET, None, 4096).winner
print(json.dumps({"benchmarked": tuner.stats.benchmarked, "cache_hits": tuner.stats.cache_hits,
                  "winner": winner}))
"""


def test_processes_that_tune_one_key_together_measure_it_once(tmp_path, monkeypatch):
    monkeypatch.setenv("RUDA_BACKENDS", "cpu")
    known_verdicts(tmp_path / "cache", ["cpu"])
    go = tmp_path / "go"
    children = [start(TOGETHER, tmp_path, str(go)) for _ in range(2)]
    outputs = []
    try:
        for child in children:
            assert child.stdout is not None and child.stdout.readline() == "ready\n"
        go.touch()  # both ask for the key at once
        for child in children:
            out, err = child.communicate(timeout=120)
            assert child.returncode == 0, err
            outputs.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for child in children:
            child.kill()
    counts = sorted((run["benchmarked"], run["cache_hits"]) for run in outputs)
    assert counts == [(0, 1), (1, 0)], "one process measured, the other waited and read it"
    assert outputs[0]["winner"] == outputs[1]["winner"]


def _entries(root: Path) -> list[Path]:
    return [p for p in (root / "autotune").rglob("*") if p.is_file() and ".lock" not in p.name]


def test_a_corrupt_entry_is_a_warning_and_a_new_tuning(tmp_path, monkeypatch):
    monkeypatch.setenv("RUDA_CACHE_DIR", str(tmp_path))
    client = ruda.client("cpu")
    tunables = make_set("corrupt", ("slow", run_slow), ("fast", run_fast))
    x, n = inputs(client)
    Tuner().execute(client, tunables, x, n)
    (entry,) = _entries(tmp_path)
    raw = entry.read_bytes()
    entry.write_bytes(raw[: len(raw) // 2] + b"garbage")

    tuner = Tuner()
    with pytest.warns(CacheWarning, match="corrupt"):
        out = tuner.execute(client, tunables, x, n)
    np.testing.assert_array_equal(read_u32(client, out), EXPECTED)
    assert (tuner.stats.benchmarked, tuner.stats.cache_hits) == (1, 0)
    again = Tuner()  # the new tuning replaced the entry: read back with no warning
    assert again.tune(client, tunables, x, n).winner == "fast"
    assert again.stats.cache_hits == 1


def test_a_well_formed_entry_naming_an_unknown_winner_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("RUDA_CACHE_DIR", str(tmp_path))
    client = ruda.client("cpu")
    tunables = make_set("foreign", ("slow", run_slow), ("fast", run_fast))
    x, n = inputs(client)
    text = key_repr(tunables, tunables.key_fn(x, n))
    entry = entry_key(runtime_environment(client), tunables, text)
    record = {
        "format": 1,
        "set": tunables.name,
        "key": text,
        "winner": "gone",
        "timings_ns": [],
        "errors": [],
    }
    origin = EntryOrigin("cpu", "cpu", tunables.name)
    DiskCache(CacheKind.TUNING).put(entry, json.dumps(record).encode(), origin)
    tuner = Tuner()
    with pytest.warns(CacheWarning, match="unusable"):
        result = tuner.tune(client, tunables, x, n)
    assert result.winner == "fast" and tuner.stats.benchmarked == 1


_ids = itertools.count(900)


def test_no_driver_fingerprint_tunes_into_a_session_only_store(tmp_path, monkeypatch):
    monkeypatch.setenv("RUDA_CACHE_DIR", str(tmp_path))
    index = next(_ids)
    server = CpuServer(DeviceId(0, index), fingerprint=None)  # a driver it cannot identify
    client = ComputeClient(("session-only-cpu", index), server, None, CpuRuntime)
    env = runtime_environment(client)
    assert env.driver_fingerprint is None and not env.persistent
    tunables = make_set("session", ("slow", run_slow), ("fast", run_fast))
    x, n = inputs(client)
    first = Tuner()
    np.testing.assert_array_equal(read_u32(client, first.execute(client, tunables, x, n)), EXPECTED)
    assert first.stats.benchmarked == 1
    assert _entries(tmp_path) == [], "nothing is persisted without a driver fingerprint"
    second = Tuner()  # the session store answers other tuners of this process
    assert second.tune(client, tunables, x, n).winner == "fast"
    assert (second.stats.benchmarked, second.stats.cache_hits) == (0, 1)

    persistent = ruda.client("cpu")  # the same set on a device with a fingerprint is stored
    Tuner().execute(persistent, tunables, *inputs(persistent))
    assert len(_entries(tmp_path)) == 1
