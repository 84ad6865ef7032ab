"""Kernel ``print`` throughput: ``N`` lines printed by one launch, each device's time from the
launch to a completed sync (the output written), next to the NumPy device's, with their ratio.

Each line is ``line <i> value <f32>`` from one unit. Standard output (``sys.stdout`` and file
descriptor 1, where C targets' ``printf`` writes) goes to a file during each run, and every
device's text is compared with the NumPy device's: ``same`` (byte for byte), ``same lines``
(in another order) or ``DIFFERENT``. The best of ``ROUNDS`` runs is reported after one warm-up
launch that compiles the kernel.

Run: ``python benchmarks/kernel_print.py [N] [device ...]`` (default: 10**6 lines, every device).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator

import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, f32, kernel, u32
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim

ROUNDS = 3
UNITS = 256


@kernel
def print_lines(n: u32):
    i = ABSOLUTE_POS
    if i < n:
        print("line", i, "value", f32(i) * f32(0.5))


@contextlib.contextmanager
def _stdout_to(path: str) -> Iterator[None]:
    """``sys.stdout`` and file descriptor 1 write to ``path`` inside the block."""
    sys.stdout.flush()
    saved = os.dup(1)
    with open(path, "w") as out:
        os.dup2(out.fileno(), 1)
        previous, sys.stdout = sys.stdout, out
        try:
            yield
        finally:
            out.flush()
            sys.stdout = previous
            os.dup2(saved, 1)
            os.close(saved)


def _run(client: ComputeClient, n: int, path: str) -> float:
    """Seconds from the launch of ``n`` lines to its completed sync, the text going to
    ``path``."""
    with _stdout_to(path):
        start = time.perf_counter()
        print_lines.launch(client, RudaCount(-(-n // UNITS)), RudaDim(UNITS), n)
        client.sync().result()
        return time.perf_counter() - start


def _best(client: ComputeClient, n: int, path: str) -> float:
    _run(client, 1, path)  # compiles
    return min(_run(client, n, path) for _ in range(ROUNDS))


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10**6
    devices = sys.argv[2:] or [str(d) for d in ruda.enumerate_all_devices()]
    with tempfile.TemporaryDirectory() as folder:
        reference = os.path.join(folder, "cpu.txt")
        cpu_s = _best(ruda.client("cpu"), n, reference)
        with open(reference) as f:
            want = f.read()
        print(f"{n} lines; best of {ROUNDS}")
        print(f"{'cpu':<10} {cpu_s:8.3f} s")
        for device in devices:
            if device == "cpu":
                continue
            path = os.path.join(folder, "device.txt")
            seconds = _best(ruda.client(device), n, path)
            with open(path) as f:
                got = f.read()
            if got == want:
                text = "same"
            elif sorted(got.splitlines()) == sorted(want.splitlines()):
                text = "same lines"
            else:
                text = "DIFFERENT"
            print(f"{device:<10} {seconds:8.3f} s  {seconds / cpu_s:5.2f}x cpu  output {text}")


if __name__ == "__main__":
    main()
