"""What tuning produces: :class:`TuneResult` (the winner, every candidate's time or error),
:class:`TuneStats` (how a tuner obtained its results) and :class:`AutotuneError` (no candidate
could run).

A result serialises to JSON for the persistent cache; :meth:`TuneResult.from_json` refuses an
entry that does not describe the given set, so a stale or foreign entry is never used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..runtime import AutotuneError
from .tunable import TunableSet

__all__ = ["AutotuneError", "TuneResult", "TuneStats"]

_FORMAT = 1


@dataclass(frozen=True, slots=True)
class TuneResult:
    """The outcome of tuning one key of one set on one runtime environment.

    :param set_name: the :class:`TunableSet`'s name.
    :param key: ``repr`` of the key.
    :param winner: the chosen candidate's name (:func:`.benchmark.benchmark` says how).
    :param timings_ns: (name, cost in ns) of each candidate that ran, in the set's order: the
        median over the measured runs of the larger of the run's device time and the host time
        it took to enqueue.
    :param errors: (name, ``"ExceptionType: message"``) of each excluded candidate.
    """

    set_name: str
    key: str
    winner: str
    timings_ns: tuple[tuple[str, int], ...]
    errors: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> bytes:
        """The result as the persistent cache stores it."""
        record = {
            "format": _FORMAT,
            "set": self.set_name,
            "key": self.key,
            "winner": self.winner,
            "timings_ns": [list(pair) for pair in self.timings_ns],
            "errors": [list(pair) for pair in self.errors],
        }
        return json.dumps(record, sort_keys=True).encode()

    @classmethod
    def from_json(cls, raw: bytes, tunable_set: TunableSet, key: str) -> TuneResult:
        """Parse a stored result of ``tunable_set`` for ``key``.

        :raises ValueError: when ``raw`` is not such a result (malformed, another format, another
            set or key, or a winner the set does not have).
        """
        try:
            record = json.loads(raw)
            ok = (
                record["format"] == _FORMAT
                and record["set"] == tunable_set.name
                and record["key"] == key
                and tunable_set.index(record["winner"]) is not None
            )
            timings = tuple((str(n), int(t)) for n, t in record["timings_ns"])
            errors = tuple((str(n), str(e)) for n, e in record["errors"])
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"malformed autotune entry ({exc!r})") from exc
        if not ok:
            raise ValueError(
                f"the entry does not describe {tunable_set!r} for key {key} "
                f"(it names set {record.get('set')!r}, winner {record.get('winner')!r})"
            )
        return cls(tunable_set.name, key, record["winner"], timings, errors)


class TuneStats:
    """Counters of one :class:`~ruda_core.autotune.Tuner`, updated under the tuner's lock.

    ``benchmarked``: keys whose candidates were measured (re-tunings included);
    ``cache_hits``: keys whose result came from the persistent or session cache instead;
    ``retuned``: recorded winners that raised when run and were therefore tuned again.
    """

    __slots__ = ("benchmarked", "cache_hits", "retuned")

    def __init__(self) -> None:
        self.benchmarked = 0
        self.cache_hits = 0
        self.retuned = 0

    def __repr__(self) -> str:
        return (
            f"TuneStats(benchmarked={self.benchmarked}, cache_hits={self.cache_hits}, "
            f"retuned={self.retuned})"
        )
