"""``ruda cache``: what real launches and tunings on ``cpu`` and ``opencl:0`` left on disk,
listed by kind, driver and device; clearing part of it makes exactly that part be rebuilt."""

from __future__ import annotations

import json

import pytest
from fresh_processes import run_in_turn

import ruda_core as ruda
from ruda_core.cli import main

CHILD = """
import json, sys
import numpy as np
import ruda_core as ruda
from ruda_core.autotune import Tunable, TunableSet, Tuner, anchor
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, kernel
from ruda_core.runtime import RudaCount, RudaDim

@kernel
def listed_triple(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * f32(3)

def triple(client, x, n, units):
    out = client.empty(4 * n)
    listed_triple.launch(client, RudaCount(n // units), RudaDim(units), ArrayArg(x, n),
                         ArrayArg(out, n))
    return out

client = ruda.client(sys.argv[1])
x = np.arange(256, dtype=np.float32)
xh = client.create_from_slice(x)
before = client.server.compile_stats.compiled, client.server.compile_stats.disk_hits
out = triple(client, xh, 256, 64)
assert np.array_equal(np.frombuffer(client.read_one(out), np.float32), 3 * x)
stats = client.server.compile_stats
launch = {"compiled": stats.compiled - before[0], "disk_hits": stats.disk_hits - before[1]}
TRIPLE = TunableSet("tests.cache.triple", lambda x, n: anchor(n), [
    Tunable("units-32", lambda c, x, n: triple(c, x, n, 32)),
    Tunable("units-64", lambda c, x, n: triple(c, x, n, 64)),
])
Tuner(samples=1).tune(client, TRIPLE, xh, 256)
print(json.dumps(launch))
"""


def _devices() -> list[str]:
    present = {str(d) for d in ruda.enumerate_all_devices()}
    return [d for d in ("cpu", "opencl:0") if d in present]


def _listing(capsys, *options: str) -> list[dict]:
    assert main(["cache", "list", "--json", *options]) == 0
    return json.loads(capsys.readouterr().out)["entries"]


def _kinds_on(entries: list[dict], device: str) -> dict[str, set[str]]:
    """Labels by kind of the entries made for ``device``."""
    found: dict[str, set[str]] = {}
    for e in entries:
        if e["device"] == device:
            found.setdefault(e["kind"], set()).add(e["label"])
    return found


@pytest.fixture
def launched(tmp_path, monkeypatch) -> list[str]:
    """The devices on which a fresh process launched ``listed_triple`` and tuned a set, into a
    cache folder this test's ``ruda cache`` commands read."""
    devices = _devices()
    for device in devices:
        assert run_in_turn(CHILD, device, tmp_path, times=1) == [{"compiled": 1, "disk_hits": 0}]
    monkeypatch.setenv("RUDA_CACHE_DIR", str(tmp_path / "cache"))
    return devices


def test_list_shows_kernels_tuning_and_probes_per_driver_and_device(launched, capsys, tmp_path):
    entries = _listing(capsys)
    for device in launched:
        kinds = _kinds_on(entries, device)
        assert "listed_triple" in kinds["kernels"]
        assert kinds["tuning"] == {"tests.cache.triple"}
        assert kinds["probes"]
        driver = device.partition(":")[0]
        assert {e["driver"] for e in entries if e["device"] == device} == {driver}
    assert all(e["nbytes"] > 0 and e["path"].startswith(str(tmp_path)) for e in entries)
    assert _listing(capsys, "--kind", "tuning", "--device", "cpu") == [
        e for e in entries if e["kind"] == "tuning" and e["device"] == "cpu"
    ]
    assert main(["cache", "--json", "--kind", "tuning"]) == 0  # ``list`` is the default
    assert json.loads(capsys.readouterr().out)["entries"] == _listing(capsys, "--kind", "tuning")
    tuning = [e for e in entries if e["kind"] == "tuning"]
    assert _listing(capsys, "--kind", "tuning", "--kind", "tuning") == tuning  # a kind once

    assert main(["cache"]) == 0
    text = capsys.readouterr().out
    root = tmp_path / "cache"
    assert f"{root / 'kernels'}:" in text and f"{root / 'autotune'}:" in text
    for device in launched:
        assert device in text


def test_clear_by_kind_and_device_removes_only_that(launched, capsys, tmp_path):
    before = _listing(capsys)
    assert main(["cache", "clear", "--kind", "kernels", "--device", "cpu"]) == 0
    cleared = [e for e in before if e["kind"] == "kernels" and e["device"] == "cpu"]
    entries = "entry" if len(cleared) == 1 else "entries"
    assert f"removed {len(cleared)} {entries} (" in capsys.readouterr().out
    assert _listing(capsys) == [e for e in before if e not in cleared]

    # a new process compiles the cleared kernel again; other devices still load theirs
    for device in launched:
        again = (
            {"compiled": 1, "disk_hits": 0} if device == "cpu" else {"compiled": 0, "disk_hits": 1}
        )
        assert run_in_turn(CHILD, device, tmp_path, times=1) == [again]

    assert main(["cache", "clear", "--driver", "cpu"]) == 0
    capsys.readouterr()
    assert {e["driver"] for e in _listing(capsys)} == (
        {"opencl"} if "opencl:0" in launched else set()
    )
    assert main(["cache", "clear"]) == 0
    capsys.readouterr()
    assert _listing(capsys) == []


def test_path_prints_the_folders(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("RUDA_CACHE_DIR", str(tmp_path))
    assert main(["cache", "path"]) == 0
    assert capsys.readouterr().out == f"{tmp_path}\n"
    assert main(["cache", "path", "--kind", "tuning", "--kind", "kernels"]) == 0
    assert capsys.readouterr().out == f"{tmp_path / 'autotune'}\n{tmp_path / 'kernels'}\n"


def test_a_malformed_cap_is_an_error_naming_the_variable(capsys, monkeypatch):
    monkeypatch.setenv("RUDA_CACHE_MAX_BYTES", "lots")
    assert main(["cache"]) == 2
    assert "RUDA_CACHE_MAX_BYTES='lots' is not a size" in capsys.readouterr().err


def test_a_selection_that_matches_nothing_names_what_the_cache_holds(launched, capsys):
    before = _listing(capsys)
    assert main(["cache", "clear", "--device", "cpu:7"]) == 0
    out, err = capsys.readouterr()
    assert "removed 0 entries" in out
    assert "no entry was made for device cpu:7" in err
    for device in launched:
        assert device in err
    assert _listing(capsys) == before

    assert main(["cache", "list", "--driver", "cdua"]) == 0
    assert "no entry was made for driver cdua; entries are for cpu" in capsys.readouterr().err
