"""Compiled kernels are given back: a server keeps at most ``max_loaded_kernels`` of them, every
launch after one was let go still runs the right kernel, dropping a kernel lets its compiled
programs go, and a process that specialises kernel after kernel stays in bounded memory."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, Comptime, Kernel, f32, kernel
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim

DEVICES = ("cpu", "opencl:0")
N = 64


def add_kernel() -> Kernel:
    """A new kernel object (its specialisations are its own) that adds ``K`` to each element."""

    @kernel
    def add(x: Array[f32], K: Comptime[int]):
        i = ABSOLUTE_POS
        if i < x.len():
            x[i] = x[i] + f32(K)

    return add


@pytest.fixture(params=DEVICES)
def client(
    request: pytest.FixtureRequest, open_device: Callable[[str], ComputeClient]
) -> Iterator[ComputeClient]:
    client = open_device(request.param)
    cap = client.server.max_loaded_kernels
    yield client
    client.server.max_loaded_kernels = cap


def _zeros(client: ComputeClient) -> ArrayArg:
    return ArrayArg(client.create_from_slice(np.zeros(N, np.float32)), N)


def _values(client: ComputeClient, arg: ArrayArg) -> np.ndarray:
    return np.frombuffer(client.read_one(arg.handle), np.float32)


def test_many_specialisations_stay_within_the_cap_and_launch_right(client):
    server = client.server
    server.max_loaded_kernels = 4
    add = add_kernel()
    x = _zeros(client)
    for _ in range(3):  # every specialisation is let go and loaded again in later rounds
        for k in range(10):
            add.launch(client, RudaCount(1), RudaDim(N), x, K=k)
            assert server.loaded_kernels() <= 4
    assert np.array_equal(_values(client, x), np.full(N, 3 * sum(range(10)), np.float32))


def test_a_prepared_launch_keeps_working_after_its_kernel_is_let_go(client):
    server = client.server
    add = add_kernel()
    x = _zeros(client)
    prepared = add.prepare(client, RudaCount(1), RudaDim(N), x, K=7)
    server.max_loaded_kernels = 1
    for k in range(3):  # loads others: the prepared one's kernel is let go
        add.launch(client, RudaCount(1), RudaDim(N), x, K=100 + k)
    prepared.launch()
    assert np.array_equal(_values(client, x), np.full(N, 7 + 303, np.float32))


def test_dropping_a_kernel_lets_its_compiled_programs_go(client):
    server = client.server
    gc.collect()
    before = server.loaded_kernels()
    add = add_kernel()
    x = _zeros(client)
    for k in range(5):
        add.launch(client, RudaCount(1), RudaDim(N), x, K=k)
    assert server.loaded_kernels() == before + 5
    assert np.array_equal(_values(client, x), np.full(N, 10, np.float32))  # the work is done
    del add
    gc.collect()
    assert server.loaded_kernels() == before


CHILD = """
import gc, json, resource, sys
import numpy as np
import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, Comptime, f32, kernel
from ruda_core.runtime import RudaCount, RudaDim

def rss_mib():
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024

client = ruda.client(sys.argv[1])
x = ArrayArg(client.create_from_slice(np.zeros(64, np.float32)), 64)
rounds = []
for _ in range(3):
    @kernel
    def add(x: Array[f32], K: Comptime[int]):
        i = ABSOLUTE_POS
        if i < x.len():
            x[i] = x[i] + f32(K)
    for k in range(60):
        add.launch(client, RudaCount(1), RudaDim(64), x, K=k)
    client.sync().result()
    del add
    gc.collect()
    client.memory_cleanup()
    rounds.append(rss_mib())
print(json.dumps({"rss_mib": rounds, "loaded": client.server.loaded_kernels()}))
"""


@pytest.mark.parametrize("device", DEVICES)
def test_rounds_of_dropped_specialisations_do_not_grow_memory(device, open_device, tmp_path):
    open_device(device)  # skips where the device is missing
    script = tmp_path / "rounds.py"
    script.write_text(CHILD)
    env = {**os.environ, "RUDA_BACKENDS": device.partition(":")[0]}  # its backend alone
    done = subprocess.run(
        [sys.executable, str(script), device], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    rss = facts["rss_mib"]
    # 60 programs of Intel's CPU OpenCL take about 107 MiB: kept, two more rounds would add
    # 215 MiB; given back, the later rounds stay within allocator noise
    assert rss[-1] - rss[0] < 100, f"RSS after each round of 60 specialisations: {rss} MiB"
    assert facts["loaded"] <= 1, facts
