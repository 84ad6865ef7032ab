"""Time to a first result in a new process, with the persistent kernel cache cold and warm.

Runs a child process twice with one fresh ``RUDA_CACHE_DIR``: the first compiles and stores the
kernel, the second finds it on disk. Each child reports the seconds from after its imports to
its first result read back, and how the kernel was obtained (``CompileStats``).

Run: ``python benchmarks/cold_start.py [device]`` (default ``cpu``); with
``RUDA_BENCH_PREIMPORT=cupy`` the child imports that library before the clock starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import importlib, json, os, sys, time
import numpy as np
for name in filter(None, os.environ.get("RUDA_BENCH_PREIMPORT", "").split(",")):
    importlib.import_module(name)  # count a driver library's import as import time
import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, kernel
from ruda_core.runtime import RudaCount, RudaDim

@kernel
def scale(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * f32(3)

start = time.perf_counter()
client = ruda.client(sys.argv[1])
ready = time.perf_counter()
x = np.arange(1024, dtype=np.float32)
xh, out = client.create_from_slice(x), client.empty(x.nbytes)
scale.launch(client, RudaCount(4), RudaDim(256), ArrayArg(xh, 1024), ArrayArg(out, 1024))
result = np.frombuffer(client.read_one(out), dtype=np.float32)
done = time.perf_counter()
assert np.array_equal(result, 3 * x)
stats = client.server.compile_stats
print(json.dumps({"seconds": done - start, "client": ready - start, "first": done - ready,
                  "compiled": stats.compiled, "disk_hits": stats.disk_hits}))
"""


def main(device: str) -> None:
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "RUDA_CACHE_DIR": cache}
        script = os.path.join(cache, "first_result.py")  # kernels need a source file
        with open(script, "w") as f:
            f.write(CHILD)
        for label in ("cold cache", "warm cache"):
            out = subprocess.run(
                [sys.executable, script, device],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            facts = json.loads(out.strip().splitlines()[-1])
            print(
                f"{device} {label}: first result {facts['seconds']:.3f} s after import = "
                f"{facts['client']:.3f} s to the client (driver import, device context) + "
                f"{facts['first']:.3f} s to the result (compiled {facts['compiled']}, loaded "
                f"from disk {facts['disk_hits']})"
            )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cpu")
