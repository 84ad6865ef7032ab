"""The programming guide's examples run, in order, as one file on the NumPy device."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

GUIDE = Path(__file__).parent.parent / "docs" / "programming-guide.md"


def test_the_guide_runs_as_one_file(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    assert len(blocks) > 10
    script = tmp_path / "guide.py"
    script.write_text("\n".join(blocks))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
