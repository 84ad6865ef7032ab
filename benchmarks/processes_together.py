"""Processes that start together on one machine with an empty cache: how long each takes to
open the device and get its first ``ops.sum``, ``ops.cumsum`` and ``ops.sort`` of 2**20 f32,
each read back (the first call of each probes the devices, builds and tunes their candidates).

Starts ``RUDA_BENCH_PROCESSES`` children (default 3) sharing one fresh folder as
``RUDA_CACHE_DIR`` and ``XDG_CACHE_HOME``; each imports ruda, then waits until all are ready, so
that they open the device at the same moment (as pytest-xdist or dask workers do). Prints each
child's seconds from that moment to its last result, and the slowest.

Run: ``python benchmarks/processes_together.py [device]`` (default ``cpu``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, os, sys, time
import numpy as np
import ruda_core as ruda
from ruda_core import ops
from ruda_core.tensor import RudaTensor

print("ready", flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.005)
start = time.perf_counter()
client = ruda.client(sys.argv[1])
opened = time.perf_counter() - start
x = RudaTensor.from_numpy(client, np.random.default_rng(0).standard_normal(1 << 20, np.float32))
for op in (ops.sum, ops.cumsum, ops.sort):
    op(x).to_numpy(client)
print(json.dumps({"opened": opened, "done": time.perf_counter() - start}))
"""


def main() -> None:
    device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    count = int(os.environ.get("RUDA_BENCH_PROCESSES", "3"))
    with tempfile.TemporaryDirectory() as folder:
        go = Path(folder) / "go"
        env = {**os.environ, "RUDA_CACHE_DIR": f"{folder}/cache", "XDG_CACHE_HOME": folder}
        children = [
            subprocess.Popen(
                [sys.executable, "-c", CHILD, device, str(go)],
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(count)
        ]
        for child in children:
            assert child.stdout is not None and child.stdout.readline() == "ready\n"
        began = time.perf_counter()
        go.touch()
        runs = []
        for child in children:
            out, _ = child.communicate()
            if child.returncode:
                raise SystemExit(f"a child failed ({child.returncode})")
            runs.append(json.loads(out.strip().splitlines()[-1]))
        wall = time.perf_counter() - began
    for k, run in enumerate(runs):
        print(f"process {k}: device opened {run['opened']:.2f} s, results {run['done']:.2f} s")
    print(f"{device}, {count} processes together: all done after {wall:.2f} s")


if __name__ == "__main__":
    main()
