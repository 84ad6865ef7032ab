"""Candidates and the sets they are tuned in: :class:`Tunable`, :class:`TunableSet`, and
:func:`anchor` for coarse keys.

A :class:`Tunable` is one way of computing an operation: ``fn(client, *inputs)`` enqueues the
work on ``client`` and returns the output (device handles, usually) without waiting. Every
candidate of a set must compute the same result from the same inputs. A :class:`TunableSet`
groups the candidates of one operation with ``key_fn``, which maps the inputs to a coarse,
hashable key: inputs with the same key share one tuning result.

This module only describes candidates; it never runs them (see :mod:`.tuner`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from ..runtime.cache import digest

__all__ = ["Tunable", "TunableSet", "anchor"]


@dataclass(frozen=True, slots=True)
class Tunable:
    """One candidate of a :class:`TunableSet`.

    :param name: unique within its set; it names the candidate in results, errors and the
        persistent cache.
    :param fn: ``fn(client, *inputs) -> output``: enqueue the work on ``client`` and return at
        once. It may raise (any ``Exception``) when it cannot run on this device or for these
        inputs; the tuner then excludes it.
    """

    name: str
    fn: Callable[..., Any]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"a Tunable needs a non-empty str name, got {self.name!r}")
        if not callable(self.fn):
            raise TypeError(f"Tunable {self.name!r}: fn must be callable, got {self.fn!r}")


class TunableSet:
    """The candidates of one operation and the key that decides when tuning is reused.

    Immutable after construction (by convention; the attributes are not meant to be assigned).

    :param name: the operation's name; part of every cache key, so it must be unique in the
        program (use a dotted, module-qualified name).
    :param key_fn: ``key_fn(*inputs) -> key``. The key must be hashable, cheap to compute (it
        runs on every call) and coarse, so that similar problems share a result: round sizes
        with :func:`anchor`. Its ``repr`` is stored in the persistent cache, so build it from
        ints, strs, bools, floats, enums, tuples or frozen dataclasses of those.
    :param tunables: the candidates, at least one, with distinct names. Their order breaks ties
        (an earlier candidate wins an equal time).
    :param version: bump it when a candidate's code changes in a way that may change its speed:
        persisted results of other versions are then not reused.
    :param input_fn: ``input_fn(client, *inputs) -> tuple`` returns the inputs a candidate is
        benchmarked on (called once per candidate). Give it when candidates write their inputs
        (in-place operations), so that benchmarking works on copies; by default candidates are
        benchmarked on the caller's inputs and must therefore leave them unchanged.
    :raises TypeError: for a malformed name, key function or candidate.
    :raises ValueError: for an empty set or duplicate candidate names.
    """

    __slots__ = ("_index", "checksum", "input_fn", "key_fn", "name", "tunables", "version")

    def __init__(
        self,
        name: str,
        key_fn: Callable[..., Hashable],
        tunables: Sequence[Tunable],
        *,
        version: int | str = 1,
        input_fn: Callable[..., tuple[Any, ...]] | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"a TunableSet needs a non-empty str name, got {name!r}")
        if not callable(key_fn):
            raise TypeError(f"TunableSet {name!r}: key_fn must be callable, got {key_fn!r}")
        if input_fn is not None and not callable(input_fn):
            raise TypeError(f"TunableSet {name!r}: input_fn must be callable, got {input_fn!r}")
        candidates = tuple(tunables)
        if not candidates:
            raise ValueError(f"TunableSet {name!r} has no candidates; give at least one Tunable")
        for t in candidates:
            if not isinstance(t, Tunable):
                raise TypeError(f"TunableSet {name!r}: {t!r} is not a Tunable")
        names = [t.name for t in candidates]
        if len(set(names)) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"TunableSet {name!r} has duplicate candidate names {dupes}")
        #: the operation's name
        self.name = name
        #: ``key_fn(*inputs) -> key``
        self.key_fn = key_fn
        #: the candidates, in tie-breaking order
        self.tunables: tuple[Tunable, ...] = candidates
        #: the candidates' code version
        self.version = version
        #: ``input_fn(client, *inputs) -> inputs`` for benchmarking, or None
        self.input_fn = input_fn
        #: identity of the set (name, version, candidate names): part of every cache key
        self.checksum = digest("TunableSet", name, version, tuple(names))[:32]
        self._index = {n: k for k, n in enumerate(names)}

    @property
    def names(self) -> tuple[str, ...]:
        """The candidates' names, in order."""
        return tuple(t.name for t in self.tunables)

    def index(self, name: str) -> int | None:
        """The position of the candidate called ``name``, or None."""
        return self._index.get(name)

    def __repr__(self) -> str:
        return f"TunableSet({self.name!r}, version={self.version!r}, candidates={self.names})"


def anchor(n: int, maximum: int | None = None, minimum: int = 1) -> int:
    """``n`` rounded up to a power of two, clamped to ``[minimum, maximum]``: a coarse key
    component, so that sizes of the same magnitude share one tuning result.

    >>> anchor(1000), anchor(1024), anchor(5000, maximum=4096)
    (1024, 1024, 4096)
    """
    if n < 0:
        raise ValueError(f"anchor() needs a non-negative size, got {n}")
    value = max(1 << max(n - 1, 0).bit_length(), minimum)
    return min(value, maximum) if maximum is not None else value
