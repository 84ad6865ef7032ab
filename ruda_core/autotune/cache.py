"""Where tuning results are kept between tuners and processes.

A result is stored under a digest of the runtime environment, the set's name, version and
candidate names, the key's ``repr`` and the bounds-check mode. Environments with a driver
fingerprint store results in ``DiskCache(CacheKind.TUNING)`` (under ``RUDA_CACHE_DIR``; atomic,
cross-process safe, checksummed), so another process on the same stack reuses them.
Environments without one keep results in a process-wide session store: nothing is written to
disk and the next process tunes again.

Processes sharing the disk cache take turns to tune an entry (:func:`tuning_turn`): those
that start together measure it once, and do not measure it while another process times its
candidates on the same device. A process waits for the turn at most :data:`TURN_WAIT_S`.

A corrupt, malformed or foreign disk entry is a :class:`CacheWarning` and a miss (the caller
tunes again and overwrites it), never an error and never a wrong winner. This module does not
measure anything.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Hashable

from ..runtime import BoundsCheckMode, ComputeClient
from ..runtime.cache import CacheKind, CacheWarning, DiskCache, EntryOrigin, digest
from .environment import RuntimeEnvironment
from .result import TuneResult
from .tunable import TunableSet

__all__ = ["TURN_WAIT_S", "entry_key", "key_repr", "load_result", "store_result", "tuning_turn"]

#: How long a process waits for another that is tuning the same entry before it tunes the
#: entry itself (:func:`tuning_turn`).
TURN_WAIT_S = 300.0

_session: dict[str, TuneResult] = {}
_session_lock = threading.Lock()


def key_repr(tunable_set: TunableSet, key: Hashable) -> str:
    """The ``repr`` of ``key`` as it enters persistent keys.

    :raises TypeError: when the key is not hashable, or its ``repr`` names an object address,
        which differs between processes (build keys from ints, strs, tuples, enums or frozen
        dataclasses of those).
    """
    try:
        hash(key)
    except TypeError as exc:
        raise TypeError(
            f"TunableSet {tunable_set.name!r}: key_fn returned {key!r}, which is not hashable "
            f"({exc}); return a tuple instead of a list or dict"
        ) from None
    text = repr(key)
    if " at 0x" in text:
        raise TypeError(
            f"TunableSet {tunable_set.name!r}: key {text} has no stable repr (it shows an object "
            "address); make key_fn return ints, strs, bools, floats, enums or tuples of those"
        )
    return text


def entry_key(env: RuntimeEnvironment, tunable_set: TunableSet, key: str) -> str:
    """The digest a result of ``tunable_set`` for ``key`` (a :func:`key_repr`) is stored under.
    The bounds-check mode in force is part of it: unchecked launches time differently."""
    return digest(
        "autotune",
        env,
        tunable_set.name,
        tunable_set.version,
        tunable_set.names,
        key,
        BoundsCheckMode.current().value,
    )


def load_result(
    env: RuntimeEnvironment, tunable_set: TunableSet, key: str, entry: str
) -> TuneResult | None:
    """The stored result under ``entry``, or None (absent, or unusable with a warning)."""
    if not env.persistent:
        with _session_lock:
            return _session.get(entry)
    raw = DiskCache(CacheKind.TUNING).get(entry)
    if raw is None:
        return None
    try:
        return TuneResult.from_json(raw, tunable_set, key)
    except ValueError as exc:
        warnings.warn(
            f"autotune entry {entry[:12]} for {tunable_set.name} {key} is unusable ({exc}); "
            "tuning again",
            CacheWarning,
            stacklevel=3,
        )
        return None


def store_result(
    client: ComputeClient, env: RuntimeEnvironment, entry: str, result: TuneResult
) -> None:
    """Keep ``result``, measured on ``client``, under ``entry``: on disk for a persistent
    environment (listed under the runtime, the device and the set's name; a failed write is a
    :class:`CacheWarning`), else in the session store."""
    if env.persistent:
        origin = EntryOrigin(env.runtime, str(client.device), result.set_name)
        DiskCache(CacheKind.TUNING).put(entry, result.to_json(), origin)
    else:
        with _session_lock:
            _session[entry] = result


def tuning_turn(env: RuntimeEnvironment, entry: str) -> contextlib.AbstractContextManager[None]:
    """This process's turn to read, else tune, ``entry`` among the processes sharing the disk
    cache (:meth:`DiskCache.turn`). An environment that stores nothing on disk has it at once."""
    if not env.persistent:
        return contextlib.nullcontext()
    return DiskCache(CacheKind.TUNING).turn(entry, TURN_WAIT_S)
