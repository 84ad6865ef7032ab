"""Listing and clearing the persistent caches: :func:`list_entries` and :func:`clear`, which
``ruda cache`` prints and runs.

Both read entry headers only (:func:`~.cache.read_origin`), never a payload, and both are safe
while other processes use the caches (see :func:`~.cache.remove_entry`). An entry of another
format version, or one whose header cannot be read, has no origin: a filter by device or driver
never matches it, and clearing its whole kind removes it. This module never writes an entry.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .cache import CacheKind, EntryOrigin, cache_root, entry_files, read_origin, remove_entry

__all__ = ["CacheEntry", "clear", "list_entries"]

#: a write's temporary file this old belongs to a process that died while writing
_STALE_TEMPORARY_S = 3600.0


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """One entry file of a persistent cache.

    :param kind: what it holds.
    :param path: the file.
    :param nbytes: its size on disk.
    :param used_at: its last use (the write, or the latest hit), in seconds since the epoch.
    :param origin: the driver, device and label in its header; None for an entry of another
        format version or an unreadable one.
    """

    kind: CacheKind
    path: Path
    nbytes: int
    used_at: float
    origin: EntryOrigin | None

    def matches(self, device: str | None, driver: str | None) -> bool:
        """Whether its origin has ``device`` and ``driver`` (None: any)."""
        if device is None and driver is None:
            return True
        origin = self.origin
        return (
            origin is not None
            and device in (None, origin.device)
            and driver in (None, origin.driver)
        )


def _order(entry: CacheEntry) -> tuple[int, str, str, str, str]:
    origin = entry.origin or EntryOrigin("", "")
    kinds = list(CacheKind)
    return kinds.index(entry.kind), origin.driver, origin.device, origin.label, str(entry.path)


def list_entries(
    kinds: Iterable[CacheKind] | None = None,
    *,
    device: str | None = None,
    driver: str | None = None,
) -> list[CacheEntry]:
    """The entries of ``kinds`` (None: every kind) under the current :func:`cache_root` whose
    origin has ``device`` and ``driver`` (None: any), by kind, driver, device and label."""
    root = cache_root()
    found = [
        CacheEntry(kind, path, stat.st_size, stat.st_mtime, read_origin(path))
        for kind in (CacheKind if kinds is None else kinds)
        for path, stat in entry_files(root, kind)
    ]
    return sorted((e for e in found if e.matches(device, driver)), key=_order)


def clear(
    kinds: Iterable[CacheKind] | None = None,
    *,
    device: str | None = None,
    driver: str | None = None,
) -> list[CacheEntry]:
    """Remove the entries :func:`list_entries` gives for the same arguments and return them.
    Without a device or driver, also remove the temporary files that writes which died left
    behind, and the lock files of turns (:meth:`DiskCache.turn`). Safe while other processes
    read and write: an entry whose write is in flight lands after the clear and stays, and a
    turn held meanwhile only saves less work.

    :raises OSError: when an entry exists but cannot be removed.
    """
    chosen = list(CacheKind if kinds is None else kinds)
    removed = list_entries(chosen, device=device, driver=driver)
    for entry in removed:
        remove_entry(entry.path)
    if device is None and driver is None:
        stale = time.time() - _STALE_TEMPORARY_S
        for kind in chosen:
            folder = cache_root() / kind.folder_name
            for temporary in folder.glob("*/.tmp-*"):
                with contextlib.suppress(FileNotFoundError):
                    if temporary.stat().st_mtime < stale:
                        temporary.unlink()
            for lock in folder.glob("*/*.lock"):
                with contextlib.suppress(FileNotFoundError):
                    lock.unlink()
    return removed
