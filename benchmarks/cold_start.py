"""Time to a first result in a new process, with the persistent caches cold and warm.

Runs a child process ``RUDA_BENCH_RUNS`` times (default 2) with one fresh folder as
``RUDA_CACHE_DIR`` and ``XDG_CACHE_HOME`` (so the drivers' own caches start empty too): the
first probes the device, compiles and stores the kernel, the later ones find both on disk. Each
child reports the seconds from after its imports to its first result read back, how the kernel
was obtained (``CompileStats``), and then the seconds of its first ``ops.sum``, ``ops.sort``
and ``ops.cumsum`` of 2**20 f32, each read back (the first run builds and tunes their
candidates).

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
from ruda_core import ops
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, kernel
from ruda_core.runtime import RudaCount, RudaDim
from ruda_core.tensor import RudaTensor

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
facts = {"seconds": done - start, "client": ready - start, "first": done - ready,
         "compiled": stats.compiled, "disk_hits": stats.disk_hits}
values = RudaTensor.from_numpy(client, np.random.default_rng(0).random(1 << 20, np.float32))
for name in ("sum", "sort", "cumsum"):
    began = time.perf_counter()
    getattr(ops, name)(values).numpy()
    facts[name] = time.perf_counter() - began
print(json.dumps(facts))
"""


def main(device: str) -> None:
    runs = int(os.environ.get("RUDA_BENCH_RUNS", "2"))
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "RUDA_CACHE_DIR": cache, "XDG_CACHE_HOME": cache}
        script = os.path.join(cache, "first_result.py")  # kernels need a source file
        with open(script, "w") as f:
            f.write(CHILD)
        for label in ("cold cache", *["warm cache"] * (runs - 1)):
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
                f"from disk {facts['disk_hits']}); then sum {facts['sum']:.2f} s, sort "
                f"{facts['sort']:.2f} s, cumsum {facts['cumsum']:.2f} s"
            )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cpu")
