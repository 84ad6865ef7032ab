"""``Tuner``: runs the fastest candidate of a :class:`TunableSet` for each key and device,
benchmarking the candidates the first time a key is seen.

Lookup order for a call: the tuner's own table of winners for the client's device (one
dictionary lookup on the hot path), then the stored results (:mod:`.cache`: the persistent
cache, or the session store when the device's driver fingerprint is None), then a benchmark
(:mod:`.benchmark`), whose result is stored: processes sharing the cache take turns
(:func:`.cache.tuning_turn`), and one that waited for another reads that one's result. A
recorded winner that raises when it is run is tuned again, once per failure. Tuning never
panics: failing candidates are excluded, and only a key on which every candidate fails raises
(:class:`AutotuneError`). Without tuning
(``execute(..., tune=False)``, for problems too small for the candidates to differ) the first
candidate that runs is taken and remembered in the same table, and nothing is measured or
stored.

This module must not keep per-call state beyond the winners table, and must not measure
anything on a hit.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Hashable
from typing import Any

from ..runtime import ComputeClient, ComputeServer
from .benchmark import benchmark, every_candidate_failed
from .cache import entry_key, key_repr, load_result, store_result, tuning_turn
from .environment import RuntimeEnvironment, runtime_environment
from .result import TuneResult, TuneStats
from .tunable import TunableSet

__all__ = ["Tuner"]

_Winners = dict[tuple[str, Hashable], int]
_log = logging.getLogger("ruda.autotune")

#: one lock per stored entry, process-wide: threads (of any tuner) that miss on the same key
#: tune it once; the others wait and then find the stored result
_entry_locks: dict[str, threading.RLock] = {}
_entry_locks_guard = threading.Lock()


def _entry_lock(entry: str) -> threading.RLock:
    with _entry_locks_guard:
        lock = _entry_locks.get(entry)
        if lock is None:
            lock = _entry_locks[entry] = threading.RLock()
        return lock


class Tuner:
    """Selects and runs the fastest candidate of tunable sets, per key and device.

    Make one per process (a module-level ``TUNER = Tuner()``) or one per operation; tuners
    share stored results, each keeps its own table of winners and its own :attr:`stats`.
    All methods are thread-safe: threads that miss on the same key wait for one tuning (across
    tuners too: a waiting tuner then finds the stored result).

    :param warmup: untimed runs of each candidate before it is measured (at least 1 is
        advisable: the first run compiles).
    :param samples: timed runs of each candidate; the median is its cost.
    :raises ValueError: for ``warmup < 0`` or ``samples < 1``.
    """

    __slots__ = ("_lock", "_winners", "samples", "stats", "warmup")

    def __init__(self, *, warmup: int = 1, samples: int = 5) -> None:
        if warmup < 0 or samples < 1:
            raise ValueError(f"Tuner needs warmup >= 0 and samples >= 1, got {warmup}, {samples}")
        #: untimed runs per candidate
        self.warmup = warmup
        #: timed runs per candidate
        self.samples = samples
        #: how this tuner obtained its results
        self.stats = TuneStats()
        self._winners: weakref.WeakKeyDictionary[ComputeServer, _Winners] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def execute(
        self, client: ComputeClient, tunable_set: TunableSet, *inputs: Any, tune: bool = True
    ) -> Any:
        """Run the fastest candidate of ``tunable_set`` for ``inputs`` on ``client`` and return
        its output. With ``tune=False``, run the first candidate that runs here instead (on a
        miss the candidates are tried in order; the first that does not raise is remembered for
        the key), measuring nothing: for keys whose problems are too small for the candidates
        to differ, where tuning would only build every candidate's kernels.

        On a hit this computes the key and calls the recorded winner's ``fn``: it enqueues and
        returns without waiting. On a miss it first obtains the winner (a stored result, else a
        benchmark of every candidate, which blocks until the device is done); then it runs the
        winner on ``inputs``. When a recorded winner raises, the key is tuned again once and the
        new winner is run; if that raises too, its exception propagates. Errors of the winner's
        enqueued work surface at the next sync, as for any launch.

        :raises AutotuneError: every candidate failed for this key on this device.
        :raises MemoryError: every candidate the device runs ran out of device memory: the
            first one's ``OutOfMemory`` or ``BufferTooBig``.
        :raises ServerError: on a miss, a pending error of earlier work on the stream (the
            tuning syncs before it measures).
        :raises TypeError: when the key has no stable ``repr`` (see :class:`TunableSet`).
        """
        key = tunable_set.key_fn(*inputs)
        winners = self._winners.get(client.server)
        try:
            index = winners.get((tunable_set.checksum, key)) if winners is not None else None
        except TypeError:
            key_repr(tunable_set, key)  # raises a TypeError that says what is wrong with the key
            raise
        fresh = False
        if index is None:
            if not tune:
                return self._first(client, tunable_set, key, inputs)
            index, fresh = self._select(client, tunable_set, key, inputs, failed=None)
        try:
            return tunable_set.tunables[index].fn(client, *inputs)
        except Exception as exc:
            if fresh:  # measured just now, on these inputs: tuning again would not help
                raise
            _log.info("autotune %s: recorded winner raised %r; tuning again", tunable_set, exc)
        if not tune:  # the remembered candidate no longer runs here: take the first that does
            return self._first(client, tunable_set, key, inputs)
        # the recorded winner no longer runs here: tune this key again, once
        index, _ = self._select(client, tunable_set, key, inputs, failed=index)
        return tunable_set.tunables[index].fn(client, *inputs)

    def tune(self, client: ComputeClient, tunable_set: TunableSet, *inputs: Any) -> TuneResult:
        """The tuning result for ``inputs`` on ``client``: stored, or benchmarked now (blocking).
        Runs no winner; use it to tune ahead of time or to inspect timings and excluded
        candidates.

        :raises AutotuneError: every candidate failed for this key on this device.
        :raises MemoryError: every candidate the device runs ran out of device memory: the
            first one's ``OutOfMemory`` or ``BufferTooBig``.
        :raises ServerError: when it measures, a pending error of earlier work on the stream.
        :raises TypeError: when the key has no stable ``repr`` (see :class:`TunableSet`).
        """
        key = tunable_set.key_fn(*inputs)
        env = runtime_environment(client)
        text = key_repr(tunable_set, key)
        entry = entry_key(env, tunable_set, text)
        with _entry_lock(entry):
            result, _ = self._stored_or_measured(client, env, tunable_set, text, entry, inputs)
            self._record(client.server, tunable_set, key, result)
            return result

    def _select(
        self,
        client: ComputeClient,
        tunable_set: TunableSet,
        key: Hashable,
        inputs: tuple[Any, ...],
        failed: int | None,
    ) -> tuple[int, bool]:
        """The winner's index for ``key``, and whether it was benchmarked by this call.
        ``failed`` is the index of a recorded winner that just raised: its result is not reused
        (unless another thread has replaced it meanwhile)."""
        env = runtime_environment(client)
        text = key_repr(tunable_set, key)
        entry = entry_key(env, tunable_set, text)
        with _entry_lock(entry):
            winners = self._winners.get(client.server)
            index = winners.get((tunable_set.checksum, key)) if winners is not None else None
            if index is not None and index != failed:
                return index, False  # another thread tuned (or re-tuned) this key meanwhile
            if failed is not None:
                self._count("retuned")
            result, measured = self._stored_or_measured(
                client, env, tunable_set, text, entry, inputs, failed
            )
            return self._record(client.server, tunable_set, key, result), measured

    def _stored_or_measured(
        self,
        client: ComputeClient,
        env: RuntimeEnvironment,
        tunable_set: TunableSet,
        text: str,
        entry: str,
        inputs: tuple[Any, ...],
        failed: int | None = None,
    ) -> tuple[TuneResult, bool]:
        """The stored result under ``entry``, unless its winner is the candidate ``failed``
        (then it is measured again); else, in this process's turn (:func:`.tuning_turn`), the
        one another process stored meanwhile or one benchmarked now and stored. Also whether it
        was benchmarked by this call."""

        def stored() -> TuneResult | None:
            result = load_result(env, tunable_set, text, entry)
            return None if result is None or tunable_set.index(result.winner) == failed else result

        result = stored()  # a hit takes no turn
        if result is None:
            with tuning_turn(env, entry):
                result = stored()
                if result is None:
                    result = self._benchmark(client, tunable_set, text, inputs)
                    store_result(client, env, entry, result)
                    return result, True
        self._count("cache_hits")
        return result, False

    def _first(
        self, client: ComputeClient, tunable_set: TunableSet, key: Hashable, inputs: tuple[Any, ...]
    ) -> Any:
        """Run the candidates in order until one does not raise; remember it for ``key``."""
        errors: dict[str, BaseException] = {}
        for index, tunable in enumerate(tunable_set.tunables):
            try:
                output = tunable.fn(client, *inputs)
            except Exception as exc:  # this candidate cannot run here: the next one may
                errors[tunable.name] = exc
                continue
            self._remember(client.server, tunable_set, key, index)
            return output
        raise every_candidate_failed(client, tunable_set, key_repr(tunable_set, key), errors)

    def _benchmark(
        self, client: ComputeClient, tunable_set: TunableSet, text: str, inputs: tuple[Any, ...]
    ) -> TuneResult:
        result = benchmark(
            client, tunable_set, text, inputs, warmup=self.warmup, samples=self.samples
        )
        self._count("benchmarked")
        return result

    def _count(self, counter: str) -> None:
        with self._lock:
            setattr(self.stats, counter, getattr(self.stats, counter) + 1)

    def _record(
        self, server: ComputeServer, tunable_set: TunableSet, key: Hashable, result: TuneResult
    ) -> int:
        index = tunable_set.index(result.winner)
        if index is None:  # from_json checks this for stored results; benchmarks pick from the set
            raise ValueError(f"{result.winner!r} is not a candidate of {tunable_set!r}")
        self._remember(server, tunable_set, key, index)
        return index

    def _remember(
        self, server: ComputeServer, tunable_set: TunableSet, key: Hashable, index: int
    ) -> None:
        with self._lock:
            winners = self._winners.get(server)
            if winners is None:
                winners = self._winners[server] = {}
            winners[(tunable_set.checksum, key)] = index

    def __repr__(self) -> str:
        return f"Tuner(warmup={self.warmup}, samples={self.samples}, {self.stats})"
