"""``DiskCache``: the persistent, cross-process-safe store under compiled kernels, tuning
results and device-probe verdicts.

Entries live under :func:`cache_root` (``platformdirs.user_cache_dir("ruda")``, override:
``RUDA_CACHE_DIR``), in one folder per :class:`CacheKind`, one file per key
(``<folder>/<first two hex digits>/<key>``). A file is ``RUDA-CACHE-2\\n``, the length of the
origin (4 bytes, little-endian), the origin as JSON (:class:`EntryOrigin`: driver, device,
label), the SHA-256 of origin and payload, then the payload. The origin can be read without
the payload (:func:`read_origin`), so entries are listed and filtered without loading a kernel.
A file of another format version is a silent miss that the next write replaces; a torn or
corrupt file is a :class:`CacheWarning` and a miss (the caller rebuilds), never a crash or a
wrong result.

Writes are atomic (a temporary file, created 0600, renamed into place) and take no lock: two
processes writing one key both leave a whole entry, and the last rename wins. Readers treat a
vanished file as a miss, so an entry may be removed at any time (:func:`remove_entry`), by
another process too. A hit sets the entry's modification time to now, so that time is its last
use. The entries under a root are capped at :func:`max_nbytes`: a write that may take them past
it removes the least recently used until they fill 90% of it. This module never reads a payload
it does not return, and no payload is code: callers store data (JSON, driver binaries).

Work, not data, is shared through locks: :meth:`DiskCache.turn` holds a key's turn among the
processes sharing a root (a lock file beside its entry while the turn is held), so that
processes starting together measure or probe a key once and the others then read its entry. A
turn only saves work: a process that cannot have it (a refused folder, a wait that ran out)
goes ahead as if alone, and two that hold it at once (a waiter and a newcomer, as the lock file
goes) both read the entry their predecessor wrote.

Trust, as ssh treats its folder: ruda creates its folders 0700. A root or kind folder owned by
another user (root's folders excepted) or writable by group or others is refused
(:func:`trusted_folder`): whoever can write there could choose what this process loads. The
process then keeps its entries in memory for its own life (a session-only cache), as it does when
the folder cannot be written. Each such trouble is one :class:`CacheWarning` per cache root and
process (:func:`warn_once`), never one per entry.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import hashlib
import importlib
import json
import os
import struct
import tempfile
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import filelock
import platformdirs

from ..errors import RudaWarning
from .nbytes import nbytes_from_env

__all__ = [
    "DEFAULT_MAX_NBYTES",
    "FOLDER_MODE",
    "CacheKind",
    "CacheWarning",
    "DiskCache",
    "EntryOrigin",
    "cache_root",
    "code_fingerprint",
    "digest",
    "entry_files",
    "max_nbytes",
    "read_origin",
    "remove_entry",
    "trusted_folder",
    "warn_once",
]

_MAGIC_PREFIX = b"RUDA-CACHE-"
#: the current format; a file with another version after the prefix is never read
_MAGIC = _MAGIC_PREFIX + b"2\n"
_ORIGIN_LENGTH = struct.Struct("<I")
_HEAD = len(_MAGIC) + _ORIGIN_LENGTH.size
_SUM = 32
_CAP_VARIABLE = "RUDA_CACHE_MAX_BYTES"
#: the cap on every entry under a cache root when ``RUDA_CACHE_MAX_BYTES`` is unset
DEFAULT_MAX_NBYTES = 1 << 30
#: the mode of every folder ruda creates under a cache root: its user's alone
FOLDER_MODE = 0o700


class CacheWarning(RudaWarning):
    """A cache entry could not be read or written; the work is redone."""


class CacheKind(enum.Enum):
    """What a cache holds; the value is the name ``ruda cache --kind`` takes."""

    KERNELS = "kernels"
    TUNING = "tuning"
    PROBES = "probes"

    @property
    def folder_name(self) -> str:
        """The kind's folder under :func:`cache_root` (tuning results keep ``autotune``)."""
        return "autotune" if self is CacheKind.TUNING else self.value


@dataclass(frozen=True, slots=True)
class EntryOrigin:
    """What an entry was made for, stored in its header.

    :param driver: the runtime's name (``Runtime.name``: ``"cpu"``, ``"opencl"``, ``"cuda"``).
    :param device: the device as ``ruda_core.client()`` takes it (``"opencl:0"``).
    :param label: what the entry holds, for people (a kernel's name, a tunable set's name).
    """

    driver: str
    device: str
    label: str = ""

    def to_json(self) -> bytes:
        return json.dumps([self.driver, self.device, self.label]).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> EntryOrigin:
        """:raises ValueError: when ``raw`` is not what :meth:`to_json` writes."""
        try:
            driver, device, label = json.loads(raw)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"not an entry origin: {raw[:80]!r}") from exc
        return cls(str(driver), str(device), str(label))


def cache_root() -> Path:
    """The folder of every ruda cache: ``RUDA_CACHE_DIR`` or the user's cache folder."""
    override = os.environ.get("RUDA_CACHE_DIR")
    return Path(override) if override else Path(platformdirs.user_cache_dir("ruda"))


def max_nbytes() -> int:
    """The cap on the bytes of all entries under a cache root: ``RUDA_CACHE_MAX_BYTES`` (bytes,
    or a number with KiB, MiB, GiB or TiB; 0: no cap), else :data:`DEFAULT_MAX_NBYTES`.

    :raises ValueError: when the variable is set to something else.
    """
    found = nbytes_from_env(_CAP_VARIABLE)
    return DEFAULT_MAX_NBYTES if found is None else found


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


def _checksum(origin: bytes, payload: bytes) -> bytes:
    h = hashlib.sha256(origin)
    h.update(payload)
    return h.digest()


def trusted_folder(folder: Path, root: Path, *, create: bool) -> bool:
    """Whether this process may trust what the folder ``folder`` (``root`` or a folder under it)
    holds: it is owned by this process's user or by root, and writable by no one else. With
    ``create``, a missing ``folder`` (and its missing parents) is made :data:`FOLDER_MODE` first;
    without, a missing folder is untrusted and unwarned (there is nothing in it to read).

    A refused folder, or one that cannot be created, is one :class:`CacheWarning` per ``root``
    and process (see :func:`warn_once`), naming the folder and the fix. Where the platform has no
    POSIX owners (Windows), every existing folder is trusted.
    """
    if create:
        try:
            folder.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        except OSError as exc:
            on_path = (folder, *folder.parents)
            file = next((p for p in on_path if p.exists() and not p.is_dir()), None)
            fix = (
                f"{file} is a file, not a folder: move it away or set RUDA_CACHE_DIR elsewhere"
                if file is not None
                else "Make the folder's parent writable or set RUDA_CACHE_DIR to a folder you own"
            )
            warn_once(
                root,
                "write",
                f"cannot create the cache folder {folder}: {exc}; this process keeps its cache "
                f"in memory only. {fix}",
            )
            return False
    try:
        stat = folder.stat()
    except OSError:
        return False
    return trusted(stat, folder, root, "folder")


def trusted(stat: os.stat_result, path: Path, root: Path, what: str) -> bool:
    """Whether ``path`` (a ``what``: ``"folder"`` or ``"entry"`` of the cache at ``root``), whose
    status is ``stat``, is owned by this process's user or by root and writable by no one else;
    if not, one :class:`CacheWarning` per ``root`` and process says why and how to fix it.
    Where the platform has no POSIX owners (Windows), everything is trusted."""
    if not hasattr(os, "geteuid"):
        return True
    user = os.geteuid()
    mode, instead = (
        ("700", "keeps its cache in memory only")
        if what == "folder"
        else ("600", "builds the entry again and replaces it")
    )
    if stat.st_uid not in (user, 0):
        problem, fix = f"is owned by uid {stat.st_uid}, not by uid {user}", f"chown {user}"
    elif stat.st_mode & 0o022:
        problem, fix = f"is writable by others (mode {stat.st_mode & 0o777:o})", f"chmod {mode}"
    else:
        return True
    warn_once(
        root,
        "trust",
        f"refusing the cache {what} {path}: it {problem}, so another user could choose what "
        f"this process loads; this process {instead}. Run `{fix} {path}` or set "
        "RUDA_CACHE_DIR to a folder only you can write",
    )
    return False


#: (cache root, what went wrong) pairs this process has warned about
_warned: set[tuple[Path, str]] = set()
_warned_lock = threading.Lock()


def warn_once(root: Path, topic: str, message: str) -> None:
    """Issue ``message`` as a :class:`CacheWarning` unless one of ``topic`` (``"trust"``,
    ``"write"``, ``"read"`` …) was issued for the cache root ``root`` before in this process: a
    cache that cannot be used says so once, not once per kernel. Thread-safe."""
    with _warned_lock:
        if (root, topic) in _warned:
            return
        _warned.add((root, topic))
    warnings.warn(message, CacheWarning, stacklevel=3)


#: entries of caches this process cannot keep on disk, by (kind folder, key), for its own life
_session: dict[tuple[Path, str], bytes] = {}
_session_lock = threading.Lock()


class DiskCache:
    """Bytes by key in the folder of one :class:`CacheKind` under the current
    :func:`cache_root`; in memory for the process's life when that folder is refused or cannot
    be written (see :func:`trusted_folder`). Thread- and process-safe."""

    def __init__(self, kind: CacheKind) -> None:
        self.kind = kind
        self.root = cache_root()
        self.folder = self.root / kind.folder_name

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / key

    def _trusted(self, *, create: bool) -> bool:
        return trusted_folder(self.root, self.root, create=create) and trusted_folder(
            self.folder, self.root, create=create
        )

    def warn_unusable(self, message: str) -> None:
        """Report an entry of this cache that could not be used (corrupt, unreadable, foreign):
        a :class:`CacheWarning` carrying ``message``, once per cache root and process."""
        warn_once(
            self.root,
            "read",
            f"{message} (later unusable entries under {self.root} are rebuilt without a warning)",
        )

    def get(self, key: str) -> bytes | None:
        """The stored bytes, or None when absent, of another format version, or unreadable
        (then with a warning). A hit marks the entry as used now."""
        with _session_lock:
            kept = _session.get((self.folder, key))
        if kept is not None or not self._trusted(create=False):
            return kept
        path = self._path(key)
        if not trusted_folder(path.parent, self.root, create=False):
            return None  # missing (nothing to read), or another user's to fill
        try:
            with path.open("rb") as entry:
                if not trusted(os.fstat(entry.fileno()), path, self.root, "entry"):
                    return None
                raw = entry.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self.warn_unusable(f"cannot read cache entry {path}: {exc}")
            return None
        if not raw.startswith(_MAGIC) and raw.startswith(_MAGIC_PREFIX):
            return None  # another format version: the caller rebuilds and replaces it
        if raw.startswith(_MAGIC) and len(raw) >= _HEAD + _SUM:
            (length,) = _ORIGIN_LENGTH.unpack_from(raw, len(_MAGIC))
            origin = raw[_HEAD : _HEAD + length]
            stored = raw[_HEAD + length : _HEAD + length + _SUM]
            payload = raw[_HEAD + length + _SUM :]
            if _checksum(origin, payload) == stored:
                with contextlib.suppress(OSError):  # recency is advisory: a read-only cache
                    os.utime(path)  # still serves its hits
                return payload
        self.warn_unusable(f"cache entry {path} is corrupt; it will be rebuilt")
        return None

    def put(self, key: str, value: bytes, origin: EntryOrigin) -> None:
        """Store ``value`` atomically under ``key``, with ``origin`` in its header, then keep
        the root within :func:`max_nbytes`. A refused folder or a failure to write keeps
        ``value`` in memory for this process instead, with one :class:`CacheWarning` per cache
        root; a failure to prune is a :class:`CacheWarning` too; neither is an error.

        :raises ValueError: when ``RUDA_CACHE_MAX_BYTES`` is malformed (before writing).
        """
        cap = max_nbytes()
        if not self._trusted(create=True):
            self._keep_in_session(key, value)
            return
        path = self._path(key)
        meta = origin.to_json()
        record = b"".join(
            (_MAGIC, _ORIGIN_LENGTH.pack(len(meta)), meta, _checksum(meta, value), value)
        )
        try:
            path.parent.mkdir(mode=FOLDER_MODE, exist_ok=True)
            if not trusted_folder(path.parent, self.root, create=False):
                self._keep_in_session(key, value)
                return
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")  # created 0600
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(record)
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as exc:
            warn_once(
                self.root,
                "write",
                f"cannot write cache entry {path}: {exc}; this process keeps its cache in "
                f"memory only. Free space or make {self.root} writable",
            )
            self._keep_in_session(key, value)
            return
        try:
            _keep_within(self.root, cap, len(record))
        except OSError as exc:
            warn_once(self.root, "prune", f"cannot prune {self.root}: {exc}")

    @contextlib.contextmanager
    def turn(self, key: str, wait_s: float) -> Iterator[None]:
        """Hold the turn of ``key`` among the processes sharing this cache's folder, waiting at
        most ``wait_s`` seconds for another process that holds it (a lock on a file beside the
        entry, let go when its holder ends, however it ends); past that, or where the folder is
        refused or cannot be written, go ahead without it. Read the entry inside the turn: the
        process that held it before may have written it. Threads of one process take turns
        too; a thread must not ask for a turn it holds.
        """
        lock = None
        if self._trusted(create=True):
            path = self._path(key)
            with contextlib.suppress(OSError):
                path.parent.mkdir(mode=FOLDER_MODE, exist_ok=True)
            if trusted_folder(path.parent, self.root, create=False):
                lock = filelock.FileLock(f"{path}.lock", mode=0o600)
                with contextlib.suppress(filelock.Timeout, OSError):
                    lock.acquire(timeout=wait_s)
        try:
            yield
        finally:
            if lock is not None and lock.is_locked:
                with contextlib.suppress(OSError):  # a waiter then holds a file no longer there
                    os.unlink(lock.lock_file)
                lock.release()

    def _keep_in_session(self, key: str, value: bytes) -> None:
        with _session_lock:
            _session[(self.folder, key)] = value


def read_origin(path: Path) -> EntryOrigin | None:
    """The origin in the header of the entry file ``path``, reading nothing else; None when the
    file is of another format version, unreadable or gone."""
    try:
        with path.open("rb") as f:
            head = f.read(_HEAD)
            if len(head) < _HEAD or not head.startswith(_MAGIC):
                return None
            (length,) = _ORIGIN_LENGTH.unpack_from(head, len(_MAGIC))
            return EntryOrigin.from_json(f.read(length))
    except (OSError, ValueError):
        return None


def entry_files(root: Path, kind: CacheKind) -> Iterator[tuple[Path, os.stat_result]]:
    """Every entry file of ``kind`` under ``root`` with its ``stat``: not its lock file, not a
    write's temporary file. Files removed meanwhile are left out."""
    folder = root / kind.folder_name
    if not folder.is_dir():
        return
    for shard in folder.iterdir():
        if not shard.is_dir():
            continue
        with contextlib.suppress(FileNotFoundError):
            for path in shard.iterdir():
                name = path.name
                if name.startswith(".") or name.endswith(".lock"):
                    continue
                with contextlib.suppress(FileNotFoundError):
                    yield path, path.stat()


def remove_entry(path: Path) -> None:
    """Remove the entry file ``path``, and the lock file of its turns (:meth:`DiskCache.turn`)
    beside it, if there. Safe while other processes use the cache: their
    reads miss, and a write in flight lands afterwards.

    :raises OSError: when a file exists but cannot be removed.
    """
    for target in (path, path.with_name(path.name + ".lock")):
        with contextlib.suppress(FileNotFoundError):
            target.unlink()


def _prune(root: Path, cap: int) -> int:
    """Remove the least recently used entries of every kind under ``root`` until they fill at
    most 90% of ``cap``; nothing when they fit in ``cap`` already. Returns the bytes left.

    :raises OSError: when an entry cannot be removed.
    """
    files = sorted(
        (stat.st_mtime_ns, stat.st_size, str(path))
        for kind in CacheKind
        for path, stat in entry_files(root, kind)
    )
    total = sum(size for _, size, _ in files)
    if total <= cap:
        return total
    target = cap * 9 // 10
    for _, size, path in files:
        if total <= target:
            break
        remove_entry(Path(path))
        total -= size
    return total


#: per root: its bytes at this process's last scan plus what the process wrote since
_estimates: dict[Path, int] = {}
_estimates_lock = threading.Lock()


def _keep_within(root: Path, cap: int, written: int) -> None:
    """After a write of ``written`` bytes under ``root``: scan and prune when this process's
    estimate of the root's size passes ``cap`` (and at its first write), else only count."""
    if cap == 0:
        return
    with _estimates_lock:
        estimate = _estimates.get(root)
        if estimate is not None and estimate + written <= cap:
            _estimates[root] = estimate + written
            return
    left = _prune(root, cap)
    with _estimates_lock:
        _estimates[root] = left
