"""The programming guide's examples run, in order, as one file on every local device: the
guide opens ``ruda.client("cpu")`` once, and the test sets that device string to each."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

GUIDE = Path(__file__).parent.parent / "docs" / "programming-guide.md"
OPENED = 'ruda.client("cpu")'


# the guide shows what checked launches do with indices past the end (``reverse_rows``)
@pytest.mark.usefixtures("unsanitized")
@pytest.mark.parametrize("device", ["cpu", "opencl:0"])
def test_the_guide_runs_as_one_file(open_device, tmp_path, device):
    open_device(device)
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    assert len(blocks) > 10
    source = "\n".join(blocks)
    assert source.count(OPENED) == 1, "the guide opens its device once, by its string"
    script = tmp_path / "guide.py"
    script.write_text(source.replace(OPENED, f'ruda.client("{device}")'))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
