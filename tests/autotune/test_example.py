"""``examples/autotune.py`` runs, agrees with NumPy and reuses one result for sizes of one key."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from .kernels import present_devices

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "autotune.py"


@pytest.mark.parametrize("device", present_devices())
def test_the_autotune_example_runs(device, capsys):
    runpy.run_path(str(EXAMPLE))["main"](device)
    out = capsys.readouterr().out
    assert f"{device} n=60000 (key 65536)" in out
    assert "TuneStats(benchmarked=2, cache_hits=3, retuned=0)" in out
