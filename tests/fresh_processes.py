"""Running a script in fresh Python processes that share one cache folder: what a later process
finds of an earlier one's work (compiled kernels, tuning results), or what a process running
beside the test does to the caches."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Collection
from pathlib import Path

from ruda_core.runtime.cache import CacheKind, cache_root, entry_files, read_origin

__all__ = ["known_verdicts", "run_in_turn", "start"]


def known_verdicts(cache: Path, drivers: Collection[str]) -> None:
    """Copy into the cache folder ``cache`` the probe verdicts that this test session's cache
    folder holds on the devices of ``drivers`` (read when the session enumerated them): a
    process using ``cache`` opens those devices without probing them again, seconds per driver.
    What it finds is what its own probes would have stored."""
    source = cache_root()
    if source.resolve() == cache.resolve():
        return
    for path, _ in entry_files(source, CacheKind.PROBES):
        origin = read_origin(path)
        if origin is None or origin.driver not in drivers:
            continue
        target = cache / path.relative_to(source)
        for folder in (cache, target.parent.parent, target.parent):
            folder.mkdir(mode=0o700, exist_ok=True)  # as ruda makes its own: trusted
        shutil.copyfile(path, target)


def _command(source: str, folder: Path, name: str, *args: str) -> tuple[list[str], dict[str, str]]:
    script = folder / name
    script.write_text(source)
    return [sys.executable, str(script), *args], {
        **os.environ,
        "RUDA_CACHE_DIR": str(folder / "cache"),
    }


def run_in_turn(source: str, device: str, folder: Path, times: int = 2) -> list[dict]:
    """Run the script ``source`` ``times`` times, each in a new interpreter with ``device`` (one
    device, or several joined by commas) as its argument, ``folder / "cache"`` as
    ``RUDA_CACHE_DIR`` (holding the session's probe verdicts: :func:`known_verdicts`) and only
    those devices' backends loaded (``RUDA_BACKENDS``), and return the JSON
    object each run printed last. A run that fails fails the test with its stderr."""
    command, env = _command(source, folder, "child.py", device)
    env["RUDA_BACKENDS"] = ",".join(name.partition(":")[0] for name in device.split(","))
    known_verdicts(folder / "cache", env["RUDA_BACKENDS"].split(","))
    facts = []
    for _ in range(times):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        facts.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return facts


def start(source: str, folder: Path, *args: str) -> subprocess.Popen[str]:
    """Start the script ``source`` in a new interpreter with ``args`` and ``folder / "cache"`` as
    ``RUDA_CACHE_DIR``, without waiting; its stdout and stderr are pipes."""
    command, env = _command(source, folder, "started.py", *args)
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
