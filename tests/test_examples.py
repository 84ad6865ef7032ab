"""The README's kernel and sample programs run and agree with NumPy, on every local device; the
ops page's examples run on the NumPy device."""

from __future__ import annotations

import re
import runpy
import subprocess
import sys
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
def test_the_readme_kernel_runs_unchanged_on_every_device(device, tmp_path):
    import ruda_core as ruda

    if device not in {str(d) for d in ruda.enumerate_all_devices()}:
        pytest.skip(f"{device} is not present here: no OpenCL driver is installed")
    readme = (EXAMPLES.parent / "README.md").read_text()
    source = readme.split("## A kernel\n\n```python\n")[1].split("```")[0]
    script = tmp_path / "readme_kernel.py"
    script.write_text(source.replace('ruda.client("cpu")', f'ruda.client("{device}")'))
    printed = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=True
    ).stdout
    assert printed.strip() == "[0. 3. 6. 9.]"


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


def test_the_ops_page_runs_as_one_file(tmp_path):
    """``docs/ops.md``'s examples, in order, as one file on the NumPy device: the primitives
    print what the page shows."""
    page = (EXAMPLES.parent / "docs" / "ops.md").read_text()
    script = tmp_path / "ops_page.py"
    script.write_text("\n".join(re.findall(r"```python\n(.*?)```", page, re.S)))
    printed = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=True
    ).stdout.splitlines()
    assert printed[-3:] == ["[-inf  -0.   0.   3.  nan] [4 1 3 0 2]", "45", "[0 2 0 1 0]"]
