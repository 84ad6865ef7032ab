"""The timing loop the benchmarks share (imported by scripts run as ``python benchmarks/x.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_seconds(
    run: Callable[[], object], sync: Callable[[], None], rounds: int = 5, reps: int = 10
) -> float:
    """Seconds per ``run()``: one warm-up run, then the best of ``rounds`` rounds of ``reps``
    runs followed by one ``sync``."""
    run()
    sync()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(reps):
            run()
        sync()
        best = min(best, (time.perf_counter() - start) / reps)
    return best
