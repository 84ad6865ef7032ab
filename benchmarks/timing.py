"""The timing loop the benchmarks share (imported by scripts run as ``python benchmarks/x.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def best_seconds(
    run: Callable[[], object],
    sync: Callable[[], None],
    rounds: int = 5,
    reps: int = 10,
    min_round_s: float = 0.0,
) -> float:
    """Seconds per ``run()``: one warm-up run, then the best of ``rounds`` rounds of ``reps``
    runs followed by one ``sync``. With ``min_round_s``, the warm-up is a round of ``reps`` and
    ``reps`` grows until a round lasts that long: a GPU left idle by the host (tuning,
    building) runs its first milliseconds at a lower clock, which short rounds would measure."""
    run()
    sync()
    while min_round_s:
        start = time.perf_counter()
        for _ in range(reps):
            run()
        sync()
        took = time.perf_counter() - start
        if took >= min_round_s:
            break
        reps = max(reps + 1, int(reps * min_round_s / max(took, 1e-9) * 1.1))
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(reps):
            run()
        sync()
        best = min(best, (time.perf_counter() - start) / reps)
    return best


def fastest(fn: Callable[[], object], repeat: int) -> float:
    """Seconds of the fastest of ``repeat`` calls of ``fn``, each timed alone."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def queued_seconds(
    torch: Any, stream: Any, run: Callable[[], object], rounds: int = 5, reps: int = 20
) -> float:
    """Device seconds per ``run()`` on CUDA, without the host's gaps: ``reps`` runs are
    enqueued on ``stream`` (a ``torch.cuda`` stream, or ``ExternalStream`` of another library's)
    behind a kernel that sleeps, between two CUDA events; a round counts only when the first
    event has not yet been reached once every run is enqueued (else the sleep doubles and the
    round is run again). The best of ``rounds`` rounds, after one warm-up run."""
    run()
    torch.cuda.synchronize()
    best, cycles, counted = float("inf"), 4_000_000, 0
    while counted < rounds:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(stream):
            torch.cuda._sleep(cycles)
        start.record(stream)
        for _ in range(reps):
            run()
        end.record(stream)
        ahead = not start.query()
        end.synchronize()
        if not ahead:
            cycles *= 2
            continue
        counted += 1
        best = min(best, start.elapsed_time(end) / 1e3 / reps)
    return best
