"""A Python value that a kernel reads (a module constant, a closure cell) is frozen at first use:
a specialisation's IR is built at its first launch in a process, and both the in-process
specialisations and the persistent cache key on what that build saw. A later change in the same
process is not seen by that specialisation, a specialisation first built after the change reads
the new value, and a new process reads the value its module has at its first launch, never a
stale cache entry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from fresh_processes import known_verdicts

from ruda_core.runtime import ComputeClient

DEVICES = ("cpu", "opencl:0")

MODULE = """
from ruda_core.lang import ABSOLUTE_POS, Array, Comptime, f32, kernel

SCALE = {scale}


@kernel
def fill(out: Array[f32], K: Comptime[int]):
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = f32(SCALE) + f32(K)
"""

CHILD = """
import json, sys
import numpy as np
import ruda_core as ruda
from ruda_core.lang import ArrayArg
from ruda_core.runtime import RudaCount, RudaDim
import captured

client = ruda.client(sys.argv[1])
out = ArrayArg(client.create_from_slice(np.zeros(8, np.float32)), 8)


def launched(k):
    captured.fill.launch(client, RudaCount(1), RudaDim(8), out, K=k)
    return float(np.frombuffer(client.read_one(out.handle), np.float32)[0])


seen = {"first": launched(0)}
if sys.argv[2] == "change":
    captured.SCALE = 5.0
    seen["same_specialisation"] = launched(0)
    seen["new_specialisation"] = launched(1)
stats = client.server.compile_stats
seen["compiled"], seen["disk_hits"] = stats.compiled, stats.disk_hits
print(json.dumps(seen))
"""


def _run(folder: Path, device: str, scale: float, change: bool = False) -> dict[str, float]:
    """A fresh interpreter, sharing ``folder/cache`` as its ``RUDA_CACHE_DIR``, whose module
    ``captured`` sets ``SCALE = scale`` at import: the JSON the child printed."""
    (folder / "captured.py").write_text(MODULE.format(scale=scale))
    path = os.pathsep.join(filter(None, (str(folder), os.environ.get("PYTHONPATH"))))
    env = {**os.environ, "RUDA_CACHE_DIR": str(folder / "cache"), "PYTHONPATH": path}
    env["RUDA_BACKENDS"] = device.partition(":")[0]  # a new cache would probe every driver
    known_verdicts(folder / "cache", [env["RUDA_BACKENDS"]])  # and this one again
    done = subprocess.run(  # -B: a rewritten module is never read from a stale .pyc
        [sys.executable, "-B", str(folder / "child.py"), device, "change" if change else "keep"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize("device", DEVICES)
def test_a_captured_constant_is_frozen_at_first_use_in_both_caches(
    device: str, open_device: Callable[[str], ComputeClient], tmp_path: Path
) -> None:
    open_device(device)  # skips where the device is missing
    (tmp_path / "child.py").write_text(CHILD)

    first = _run(tmp_path, device, 2.0, change=True)
    assert first["first"] == 2.0
    assert first["same_specialisation"] == 2.0, "a launched specialisation keeps what it read"
    assert first["new_specialisation"] == 6.0, "one built after the change reads the new value"
    assert (first["compiled"], first["disk_hits"]) == (2, 0), first  # K=0 was built once

    changed = _run(tmp_path, device, 5.0)
    assert changed["first"] == 5.0, "a new process reads its module's value, not the disk's"
    assert (changed["compiled"], changed["disk_hits"]) == (1, 0), changed

    again = _run(tmp_path, device, 2.0)
    assert again["first"] == 2.0
    assert (again["compiled"], again["disk_hits"]) == (0, 1), "2.0's entry is found again"
