"""Host memory under load, each case in a fresh process so that its RSS is its own: a loop of
launches with NumPy arrays as arguments and no sync stays flat (the kept batches hold the host
back), and a large ``to_client`` through the host holds at most two chunks of host memory
besides its source and destination, and nothing once both handles are dropped and both devices
synced."""

from __future__ import annotations

from pathlib import Path

import pytest

import ruda_core
from tests.fresh_processes import run_in_turn

MIB = 1 << 20

_RSS = """
import gc, json, os, sys, threading, time
import numpy as np
import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, f32, kernel
from ruda_core.runtime import RudaCount, RudaDim

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

def peak_during(work, every=0.0005):  # the highest RSS seen while work() runs, and its result
    peak, running = [rss()], [True]

    def watch():
        while running[0]:
            peak[0] = max(peak[0], rss())
            time.sleep(every)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        result = work()
    finally:
        running[0] = False
        watcher.join()
    return peak[0], result
"""

_LAUNCH_LOOP = (
    _RSS
    + """
@kernel
def add_into(x: Array[f32], y: Array[f32]):
    i = ABSOLUTE_POS
    if i < y.len():
        y[i] = y[i] + x[i]

client = ruda.client(sys.argv[1])
x, y = np.ones(256, np.float32), np.zeros(256, np.float32)
one, cube = RudaCount(1), RudaDim(256)
add_into.launch(client, one, cube, x, y)
client.sync().result()
base = rss()
peak = base
for k in range(20_000):
    add_into.launch(client, one, cube, x, y)
    if k % 1000 == 0:
        peak = max(peak, rss())
client.sync().result()
gc.collect()
print(json.dumps({"peak": peak - base, "after": rss() - base, "sum": float(y[0])}))
"""
)

_LARGE_COPY = (
    _RSS
    + """
source, dest = ruda.client("cpu"), ruda.client(sys.argv[1])
n = 128 << 20
handle = source.create_from_slice(np.arange(n // 4, dtype=np.uint32))
source.sync().result()
base = rss()

def copy_and_sync():
    copy = source.to_client(handle, dest)
    dest.sync().result()
    return copy

top, copy = peak_during(copy_and_sync)
peak = [top]
head = np.frombuffer(dest.read_one(copy), np.uint32)[-4:].tolist()
del copy, handle
gc.collect()
source.sync().result()
dest.sync().result()
source.memory_cleanup()
dest.memory_cleanup()
print(json.dumps({"base": base, "peak": peak[0] - base, "after": rss() - base, "tail": head}))
"""
)


def test_a_numpy_argument_launch_loop_keeps_host_memory_flat(tmp_path: Path) -> None:
    """20 000 launches with the same two NumPy arrays and no sync: the host waits for the
    oldest kept batch instead of queueing every launch, so RSS stays within a few MiB, also
    after the sync, and every launch ran. (Their two 1 KiB arguments alone, kept, would be
    40 MiB: more than twice the bound.)"""
    (facts,) = run_in_turn(_LAUNCH_LOOP, "cpu", tmp_path, times=1)
    assert facts["sum"] == 20_001.0
    assert facts["peak"] < 16 * MIB, facts
    assert facts["after"] < 16 * MIB, facts


def test_a_large_copy_through_the_host_leaves_nothing_resident(tmp_path: Path) -> None:
    """128 MiB from cpu to opencl:0 (Intel's CPU OpenCL: its memory is host memory too) in
    64 MiB chunks arrives whole, and once both handles are dropped and both devices synced the
    process holds less than before the copy (its input is gone too): no read or write copy of
    a chunk stays behind."""
    if "opencl:0" not in {str(d) for d in ruda_core.enumerate_all_devices()}:
        pytest.skip("needs opencl:0 to copy to through the host")
    (facts,) = run_in_turn(_LARGE_COPY, "opencl:0", tmp_path, times=1)
    assert facts["tail"] == [(128 << 20) // 4 - k for k in (4, 3, 2, 1)]
    assert facts["after"] < 16 * MIB, facts


_CHUNKED_COPY = (
    _RSS
    + """
source, dest = (ruda.client(name) for name in sys.argv[1].split(","))
n = 128 << 20
handle = source.create_from_slice(np.arange(n // 4, dtype=np.uint32))
source.sync().result()
gc.collect()
base = rss()

def copy_and_sync():
    copy = source.to_client(handle, dest)
    dest.sync().result()
    return copy

top, copy = peak_during(copy_and_sync)
peak = [top]
tail = np.frombuffer(dest.read_one(copy), np.uint32)[-4:].tolist()
del copy, handle
source.sync().result()
dest.sync().result()
source.memory_cleanup()
dest.memory_cleanup()
print(json.dumps({"peak": peak[0] - base, "after": rss() - base, "tail": tail}))
"""
)


def _holds_host_memory(device: str) -> bool:
    """Whether ``device`` keeps its buffers in host memory (the NumPy device, a CPU OpenCL
    device: ``type_id`` 2), so that they count in the process's RSS."""
    client = ruda_core.client(device)
    return client.name() == "cpu" or (client.name() == "opencl" and client.device_id().type_id == 2)


@pytest.mark.usefixtures("unsanitized")  # the sanitizer's maps of written bytes take memory
@pytest.mark.parametrize("pair", ["cpu,opencl:0", "opencl:0,cpu", "opencl:0,opencl:1"])
def test_a_chunked_copy_holds_two_chunks_of_host_memory(
    pair: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """128 MiB in eight 16 MiB chunks between two devices whose memory is host memory (cpu,
    Intel's CPU OpenCL): at its peak the process holds the source, the destination and at most two
    chunks (and a few MiB of slack), and once both handles are dropped and both devices synced
    the source and the destination are gone and no chunk stays with ruda. The allocator may
    keep up to two chunks' worth of freed pages for reuse (glibc keeps freed blocks below its
    32 MiB mmap threshold in the thread's arena), so "after" allows that much."""
    available = {str(d) for d in ruda_core.enumerate_all_devices()}
    missing = [name for name in pair.split(",") if name not in available]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} to copy between")
    elsewhere = [name for name in pair.split(",") if not _holds_host_memory(name)]
    if elsewhere:
        pytest.skip(f"{', '.join(elsewhere)} keeps its memory off the host, out of RSS")
    monkeypatch.setenv("RUDA_TRANSFER_CHUNK", "16MiB")
    (facts,) = run_in_turn(_CHUNKED_COPY, pair, tmp_path, times=1)
    size, chunk, slack = 128 * MIB, 16 * MIB, 8 * MIB
    assert facts["tail"] == [size // 4 - k for k in (4, 3, 2, 1)]
    assert facts["peak"] < size + 2 * chunk + slack, facts  # the destination and two chunks
    assert facts["after"] < -size + 2 * chunk + slack, facts  # the source is gone too
