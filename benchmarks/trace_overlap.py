"""Two streams' kernels overlapping on one device, shown in an exported Chrome trace.

Two clients pinned to two fresh streams (``fixed_execution_queue`` + ``set_stream``) each
enqueue a few one-cube kernels that spin for a while, inside one ``client.profile`` region. The
trace is written as JSON (open it in ``chrome://tracing`` or Perfetto); the summary prints each
stream's kernel intervals and the time during which both streams were running.

Run: ``python benchmarks/trace_overlap.py [device] [trace.json]``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, kernel, u32
from ruda_core.runtime import RudaCount, RudaDim, StreamId, TraceEvent

SPIN = {"cpu": 20_000}  # iterations per kernel; a GPU gets DEFAULT_SPIN
DEFAULT_SPIN = 2_000_000
KERNELS = 3


@kernel
def spin(x: Array[f32], n: u32):
    acc = x[ABSOLUTE_POS]
    for _ in range(n):
        acc = acc * f32(0.5) + f32(1)
    x[ABSOLUTE_POS] = acc


def overlap_ns(a: list[TraceEvent], b: list[TraceEvent]) -> int:
    return sum(max(0, min(x.end_ns, y.end_ns) - max(x.start_ns, y.start_ns)) for x in a for y in b)


def main(device: str, path: str) -> None:
    client = ruda.client(device)
    pinned = []
    for _ in range(2):
        c = client.fixed_execution_queue()
        c.set_stream(StreamId.new())
        pinned.append(c)
    buffers = [c.create_from_slice(np.zeros(32, np.float32)) for c in pinned]
    spin.launch(pinned[0], RudaCount(1), RudaDim(32), ArrayArg(buffers[0], 32), 10)
    client.sync().result()

    n = SPIN.get(client.name(), DEFAULT_SPIN)

    def work() -> None:
        for _ in range(KERNELS):
            for c, h in zip(pinned, buffers, strict=True):
                spin.launch(c, RudaCount(1), RudaDim(32), ArrayArg(h, 32), n)

    _, duration = client.profile(work, "two streams")
    duration.trace.save_chrome(path)
    json.loads(Path(path).read_text())  # the file is valid JSON
    kernels = [e for e in duration.trace.events if e.kind == "kernel"]
    streams = sorted({e.stream for e in kernels})
    print(f"{device}: trace with {len(streams)} stream tracks written to {path}")
    per = [[e for e in kernels if e.stream == s] for s in streams]
    for s, events in zip(streams, per, strict=True):
        spans = ", ".join(f"{e.start_ns / 1e6:.3f}-{e.end_ns / 1e6:.3f}" for e in events)
        print(f"  stream {s}: kernels at {spans} ms")
    if len(per) == 2:
        both = overlap_ns(per[0], per[1])
        busy = duration.execution_ns / 1e6
        print(f"  both streams running for {both / 1e6:.3f} ms of {busy:.3f} ms")


if __name__ == "__main__":
    main(
        sys.argv[1] if len(sys.argv) > 1 else "cpu",
        sys.argv[2] if len(sys.argv) > 2 else "trace.json",
    )
