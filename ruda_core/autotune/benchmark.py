"""Measuring the candidates of a set on a device: :func:`benchmark`.

Each candidate runs once to warm up (compilation, first-use allocation), then ``samples`` times
under ``client.profile``; its cost is the median over those runs of the larger of the device
time of the run's kernels and copies and the host time the run took to enqueue them (a candidate
is as slow as its bottleneck). The candidates within :data:`TIE` of the cheapest cost tie, and
the one among them with the least median device time wins: where every candidate is bound by
the host's enqueueing, their costs differ by the host's noise alone. Every run is followed by a
sync, so a failure at launch or at execution is attributed to the candidate that caused it;
such a candidate is excluded and its error recorded; :mod:`.progress` reports each candidate as
it goes. When a profile is already running on the device (tuning inside a profiled region),
runs are timed by the host clock around a sync instead.

One tuning runs at a time per device (other work on the device while tuning distorts the
timings). This module never stores results (see :mod:`.cache`).
"""

from __future__ import annotations

import contextlib
import logging
import statistics
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from ..runtime import ComputeClient, ComputeServer, ServerError, UnsupportedFeature
from .progress import TuningProgress
from .result import AutotuneError, TuneResult
from .tunable import Tunable, TunableSet

__all__ = ["TIE", "benchmark", "every_candidate_failed"]

#: Costs within this fraction of the cheapest tie (:func:`benchmark`).
TIE = 0.1

_log = logging.getLogger("ruda.autotune")
_locks: weakref.WeakKeyDictionary[ComputeServer, threading.RLock] = weakref.WeakKeyDictionary()
_locks_guard = threading.Lock()


def _device_lock(server: ComputeServer) -> threading.RLock:
    with _locks_guard:
        lock = _locks.get(server)
        if lock is None:
            lock = _locks[server] = threading.RLock()
        return lock


def benchmark(
    client: ComputeClient,
    tunable_set: TunableSet,
    key: str,
    inputs: tuple[Any, ...],
    *,
    warmup: int,
    samples: int,
) -> TuneResult:
    """Measure every candidate of ``tunable_set`` on ``inputs`` and return the result; blocks
    until done. Candidates that raise are excluded and recorded in ``TuneResult.errors``.

    :param key: the key's ``repr``, recorded in the result and in error messages.
    :raises AutotuneError: when every candidate raised.
    :raises ServerError: a pending error of work enqueued before tuning began, surfaced by the
        sync that starts the tuning (it belongs to that work, not to a candidate).
    """
    with _device_lock(client.server):
        client.sync().result()
        timings: dict[str, int] = {}
        device: dict[str, int] = {}
        errors: dict[str, BaseException] = {}
        input_fn = tunable_set.input_fn
        with TuningProgress(tunable_set.name, key, len(tunable_set.tunables)) as progress:
            for index, tunable in enumerate(tunable_set.tunables):
                progress.start(index, tunable.name)
                args = tuple(inputs if input_fn is None else input_fn(client, *inputs))
                try:
                    cost, device[tunable.name] = _measure(client, tunable, args, warmup, samples)
                except Exception as exc:  # any failure excludes the candidate; it is recorded
                    errors[tunable.name] = exc
                    _drain(client)
                    progress.excluded(index, tunable.name, exc)
                else:
                    timings[tunable.name] = cost
                    progress.measured(index, tunable.name, cost)
    if not timings:
        raise every_candidate_failed(client, tunable_set, key, errors)
    order = {name: k for k, name in enumerate(tunable_set.names)}
    cheapest = min(timings.values())
    tied = [name for name, cost in timings.items() if cost <= cheapest * (1 + TIE)]
    winner = min(tied, key=lambda name: (device[name], order[name]))
    _log.info("autotune %s %s: %s wins %s", tunable_set.name, key, winner, timings)
    return TuneResult(
        set_name=tunable_set.name,
        key=key,
        winner=winner,
        timings_ns=tuple(timings.items()),
        errors=tuple((n, f"{type(e).__name__}: {e}") for n, e in errors.items()),
    )


def _measure(
    client: ComputeClient, tunable: Tunable, args: tuple[Any, ...], warmup: int, samples: int
) -> tuple[int, int]:
    """The candidate's cost and device time in ns, medians over ``samples`` runs (see the module
    docstring); raises what the candidate raised, at launch or at the sync after it."""

    def run() -> None:
        tunable.fn(client, *args)

    for _ in range(warmup):
        run()
        client.sync().result()
    runs = [_timed(client, run, f"autotune {tunable.name}") for _ in range(samples)]
    return (
        int(statistics.median(cost for cost, _ in runs)),
        int(statistics.median(device for _, device in runs)),
    )


def _timed(client: ComputeClient, run: Callable[[], None], name: str) -> tuple[int, int]:
    """One run's cost and device time in ns (the host's time for both where the device is
    profiled already)."""
    started = False

    def body() -> None:
        nonlocal started
        started = True
        run()

    try:
        _, duration = client.profile(body, name=name)
    except ServerError:
        if started:
            raise
        host = _timed_by_host(client, run)  # the device is being profiled already
        return host, host
    client.sync().result()
    device = duration.execution_ns + duration.transfer_ns
    return max(device, duration.submission_ns), device


def _timed_by_host(client: ComputeClient, run: Callable[[], None]) -> int:
    start = time.perf_counter_ns()
    run()
    client.sync().result()
    return time.perf_counter_ns() - start


def _drain(client: ComputeClient) -> None:
    """Clear what a failed candidate left pending on the stream, so that the next candidate is
    not blamed for it."""
    with contextlib.suppress(ServerError):  # the excluded candidate's own error, recorded already
        client.sync().result()


def every_candidate_failed(
    client: ComputeClient, tunable_set: TunableSet, key: str, errors: dict[str, BaseException]
) -> Exception:
    """The error for a key on which every candidate raised (``errors``: name -> exception): an
    :class:`AutotuneError` listing them, its ``__cause__`` the first; but where every one that
    the device runs (not an ``UnsupportedFeature``) ran out of device memory (a
    ``MemoryError``: ``OutOfMemory``, ``BufferTooBig``), the problem does not fit, whatever
    the candidate, and the first of those errors is the one to raise."""
    listing = "\n".join(f"  {n}: {type(e).__name__}: {e}" for n, e in errors.items())
    first = next(iter(errors.values()))
    ran = [e for e in errors.values() if not isinstance(e, UnsupportedFeature)]
    if ran and isinstance(ran[0], ServerError) and all(isinstance(e, MemoryError) for e in ran):
        ran[0].add_note(f"every candidate of {tunable_set!r} for key {key} failed:\n{listing}")
        return ran[0]
    error = AutotuneError(
        f"every candidate of {tunable_set!r} failed for key {key} on {client.name()} "
        f"{client.device}; fix or add a candidate that runs here:\n{listing}",
        errors,
    )
    error.__cause__ = first
    return error
