"""Running a script in fresh Python processes, one after another, that share one cache folder:
what a later process finds of an earlier one's work (compiled kernels, tuning results)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

__all__ = ["run_in_turn"]


def run_in_turn(source: str, device: str, folder: Path, times: int = 2) -> list[dict]:
    """Run the script ``source`` ``times`` times, each in a new interpreter with ``device`` as its
    argument and ``folder / "cache"`` as ``RUDA_CACHE_DIR``, and return the JSON object each run
    printed last. A run that fails fails the test with its stderr."""
    script = folder / "child.py"
    script.write_text(source)
    env = {**os.environ, "RUDA_CACHE_DIR": str(folder / "cache")}
    facts = []
    for _ in range(times):
        done = subprocess.run(
            [sys.executable, str(script), device],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        facts.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return facts
