"""``DiskCache``: the persistent, cross-process-safe store under compiled kernels and autotune
results.

Entries live under ``platformdirs.user_cache_dir("ruda")`` (override: ``RUDA_CACHE_DIR``), one
file per key. Writes are atomic (a temporary file renamed into place) and serialised across
processes by a file lock; every entry carries a checksum, so a torn or corrupt file is a
:class:`CacheWarning` and a miss (the caller rebuilds), never a crash or a wrong result.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import tempfile
import warnings
from pathlib import Path

import filelock
import platformdirs

from ..errors import RudaWarning

__all__ = ["CacheWarning", "DiskCache", "cache_root", "code_fingerprint", "digest"]

_MAGIC = b"RUDA-CACHE-1\n"
_SUM = 32


class CacheWarning(RudaWarning):
    """A cache entry could not be read or written; the work is redone."""


def cache_root() -> Path:
    """The folder of every ruda cache: ``RUDA_CACHE_DIR`` or the user's cache folder."""
    override = os.environ.get("RUDA_CACHE_DIR")
    return Path(override) if override else Path(platformdirs.user_cache_dir("ruda"))


def digest(*parts: object) -> str:
    """A hex SHA-256 of the ``repr`` of ``parts``: a cache key of everything that matters."""
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def code_fingerprint(*packages: str) -> str:
    """A digest of the Python sources of ``packages``: cached entries produced by other code
    (an upgrade, an edited checkout) are never reused. Each package is read once per process."""
    if len(packages) == 1:
        return _package_digest(packages[0])
    return digest(*(_package_digest(name) for name in sorted(packages)))[:32]


@functools.cache
def _package_digest(name: str) -> str:
    h = hashlib.sha256()
    folder = Path(importlib.import_module(name).__file__ or "").parent
    for path in sorted(folder.rglob("*.py")):
        h.update(str(path.relative_to(folder)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:32]


class DiskCache:
    """Bytes by key in one namespace (a sub-folder of :func:`cache_root`)."""

    def __init__(self, namespace: str) -> None:
        self.folder = cache_root() / namespace

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / key

    def get(self, key: str) -> bytes | None:
        """The stored bytes, or None when absent or unreadable (then with a warning)."""
        path = self._path(key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            warnings.warn(f"cannot read cache entry {path}: {exc}", CacheWarning, stacklevel=2)
            return None
        head = len(_MAGIC)
        payload = raw[head + _SUM :]
        if raw[:head] != _MAGIC or hashlib.sha256(payload).digest() != raw[head : head + _SUM]:
            warnings.warn(
                f"cache entry {path} is corrupt; it will be rebuilt", CacheWarning, stacklevel=2
            )
            return None
        return payload

    def put(self, key: str, value: bytes) -> None:
        """Store ``value`` atomically. A failure to write is a warning, not an error."""
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with filelock.FileLock(str(path) + ".lock", timeout=60):
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
                try:
                    with os.fdopen(fd, "wb") as out:
                        out.write(_MAGIC + hashlib.sha256(value).digest() + value)
                    os.replace(tmp, path)
                except BaseException:
                    os.unlink(tmp)
                    raise
        except (OSError, filelock.Timeout) as exc:
            warnings.warn(f"cannot write cache entry {path}: {exc}", CacheWarning, stacklevel=2)
