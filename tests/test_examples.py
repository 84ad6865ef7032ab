"""The README's sample kernels run and agree with NumPy."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("device", ["cpu", "opencl:0"])
def test_quickstart(device, capsys):
    import ruda_core as ruda

    if device not in {str(d) for d in ruda.enumerate_all_devices()}:
        pytest.skip(f"{device} is not present here: no OpenCL driver is installed")
    module = runpy.run_path(str(EXAMPLES / "quickstart.py"))
    module["main"](device)
    assert "agree with NumPy" in capsys.readouterr().out
