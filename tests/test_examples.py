"""The README's sample kernels run and agree with NumPy."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


DEVICES = ["cpu", "opencl:0"]


def _run(example: str, device: str) -> None:
    import ruda_core as ruda

    if device not in {str(d) for d in ruda.enumerate_all_devices()}:
        pytest.skip(f"{device} is not present here: no OpenCL driver is installed")
    runpy.run_path(str(EXAMPLES / example))["main"](device)


@pytest.mark.parametrize("device", DEVICES)
def test_quickstart(device, capsys):
    _run("quickstart.py", device)
    assert "agree with NumPy" in capsys.readouterr().out


@pytest.mark.parametrize("device", DEVICES)
def test_plan_reuses_its_scratch(device, capsys):
    _run("plan.py", device)
    assert "one scratch buffer reused" in capsys.readouterr().out


@pytest.mark.parametrize("device", DEVICES)
def test_dask_pipeline_keeps_chunks_on_the_workers_devices(device, capsys):
    pytest.importorskip("distributed", reason="needs pip install 'ruda[dask]'")
    _run("dask_pipeline.py", device)
    assert "by a cluster of 2 Dask workers agree with NumPy" in capsys.readouterr().out
