"""``KernelCache``: the compiled kernels of one server, each a :class:`LoadedKernel`.

It holds one table per :class:`ExecutionMode` of loaded kernels by task key, the persistent cache
of built kernels (``DiskCache(CacheKind.KERNELS)``, each listed under the cache's ``origin``
and the kernel's name, through the driver's ``binary``/``load_binary``
hooks, only for a backend with a driver fingerprint) and the source dumps of
``RUDA_DUMP_SOURCE``. A kernel is compiled and built at its first lookup, under the server's lock;
a build that fails raises and is not cached, so the next lookup tries again. This module never
enqueues work, touches memory or reads a stream.

Loaded kernels are given back. A kernel is let go when the task that loaded it is gone (a
``@kernel``'s specialisation keeps its task), and the least recently looked-up one when more
than :attr:`KernelCache.capacity` are loaded (``RUDA_MAX_LOADED_KERNELS``, default
:data:`DEFAULT_MAX_LOADED_KERNELS`). So what a backend builds (and the launch functions it
keeps with it) must not refer to the task. Letting go is always safe: the next lookup loads
the kernel again (from the persistent cache where there is one), what a prepared launch or a
capture holds keeps working, a launch function made of a kernel (:meth:`KernelCache.hold`) is
told, and the server keeps the kernel alive until the work already enqueued is done.

A persisted kernel is data, never code to unpickle: a JSON line naming the SHA-256 of the source
it was built from, then the driver's binary. The source is generated again from the IR (codegen
is pure and cheap; the driver's build is what the cache saves), and the binary is used only when
that digest matches.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import warnings
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CompilationError, RudaWarning, ServerError, UnsupportedFeature
from ..ir import ExecutionMode
from .cache import CacheKind, DiskCache, EntryOrigin, code_fingerprint, digest
from .compiler import CompiledKernel, CompileOptions, RudaTask
from .properties import DeviceProperties, Feature, Features
from .settings import count_setting

if TYPE_CHECKING:
    from .driver import KernelDriver

__all__ = [
    "DEFAULT_MAX_LOADED_KERNELS",
    "BuildTarget",
    "CompileStats",
    "KernelCache",
    "LoadedKernel",
    "max_loaded_kernels_from_env",
]

_CHECKED = ExecutionMode.CHECKED
#: Loaded kernels a server keeps at most unless ``RUDA_MAX_LOADED_KERNELS`` says otherwise: more
#: than a program launches in turn (a reload costs a build, or a persistent-cache load), few
#: enough to bound a process that specialises without end (a kernel holds about 1.8 MiB of
#: Intel's CPU OpenCL runtime).
DEFAULT_MAX_LOADED_KERNELS = 1024
#: (mode, task key): one loaded kernel of a server
Slot = tuple[ExecutionMode, str]
#: told (with None) when the kernel it was given by :meth:`KernelCache.hold` is let go
Watcher = Callable[[None], None]
#: Layout of a persisted kernel, part of every key: an entry of another layout is never found, so
#: it is rebuilt, never misread. 3: a JSON line with the source's digest, then the binary (1 and
#: 2 were pickles).
_KERNEL_FORMAT = 3


@dataclass(frozen=True, slots=True)
class LoadedKernel:
    """A kernel ready to launch on one server: what the compiler made and what the backend
    built from it, made once per (task, mode) and passed to every ``_launch``/``_prepare``.

    :param compiled: the compiler's output (source, argument rows, report names …).
    :param built: what the driver's ``build`` (or ``load_binary``) returned for it.
    """

    compiled: CompiledKernel
    built: Any


@dataclass(frozen=True, slots=True)
class BuildTarget:
    """What a server's kernels are compiled for, and what keys them in the persistent cache.

    :param options: the device's compile options.
    :param features: the device's features (a kernel using a matrix configuration it lacks is
        refused before it is compiled).
    :param properties: the device's properties.
    :param properties_fingerprint: the device's hardware/capability identity.
    :param driver_fingerprint: the loaded driver stack's identity; None keeps built kernels in
        this process only.
    :param device: the device, as errors name it.
    """

    options: CompileOptions
    features: Features
    properties: DeviceProperties
    properties_fingerprint: str
    driver_fingerprint: str | None
    device: object


class CompileStats:
    """How this server built its kernels: ``compiled`` from their generated source, or loaded
    from the binaries of ``disk_hits`` entries of the persistent cache."""

    __slots__ = ("compiled", "disk_hits")

    def __init__(self) -> None:
        self.compiled = 0
        self.disk_hits = 0

    def __repr__(self) -> str:
        return f"CompileStats(compiled={self.compiled}, disk_hits={self.disk_hits})"


def max_loaded_kernels_from_env() -> int:
    """``RUDA_MAX_LOADED_KERNELS`` (a positive integer), else
    :data:`DEFAULT_MAX_LOADED_KERNELS`.

    :raises SettingError: when the variable is set to anything else; the message names it.
    """
    what = "compiled kernels a device may keep loaded"
    return count_setting("RUDA_MAX_LOADED_KERNELS", DEFAULT_MAX_LOADED_KERNELS, what)


class KernelCache:
    """Built kernels of ``server`` by (mode, task key), at most :attr:`capacity` of them. Not
    thread-safe: the server calls it with its lock held (but a task may die on any thread:
    that only queues its kernel, let go at the next :meth:`get` miss or :meth:`collect`).

    :param driver: the driver whose compiler and build hooks make the kernels.
    :param target: what the kernels are compiled for and keyed by.
    :param retire: called with the kernels let go (lock held), to keep them alive until the
        work already enqueued with them is done.
    """

    __slots__ = (
        "_by_mode",
        "_capacity",
        "_checked",
        "_disk",
        "_driver",
        "_dump_dir",
        "_owners",
        "_recent",
        "_released",
        "_retire",
        "_target",
        "_watchers",
        "origin",
        "stats",
    )

    def __init__(
        self,
        driver: KernelDriver,
        target: BuildTarget,
        retire: Callable[[list[LoadedKernel]], None],
    ) -> None:
        self._driver = driver
        self._target = target
        #: the driver and device persisted kernels are listed under (``ruda cache``); set by
        #: each client made of the server
        self.origin = EntryOrigin("", "")
        self._retire = retire
        #: one table per mode, looked up by identity on the hot path
        self._by_mode: dict[ExecutionMode, dict[str, LoadedKernel]] = {m: {} for m in ExecutionMode}
        self._checked = self._by_mode[_CHECKED]
        #: every loaded kernel, least recently looked up first
        self._recent: OrderedDict[Slot, None] = OrderedDict()
        #: per loaded kernel, the finalizer of the task that loaded it (which queues it in
        #: ``_released``)
        self._owners: dict[Slot, weakref.finalize[[Slot], RudaTask]] = {}
        #: kernels whose tasks died, to let go under the lock (a deque: appended from anywhere)
        self._released: deque[Slot] = deque()
        #: per loaded kernel, the launch functions made of it (:meth:`hold`), told when it goes
        self._watchers: dict[Slot, weakref.WeakSet[Watcher]] = {}
        self._capacity = max_loaded_kernels_from_env()
        self._dump_dir = os.environ.get("RUDA_DUMP_SOURCE")
        self._disk: DiskCache | None = None
        self.stats = CompileStats()

    @property
    def capacity(self) -> int:
        """The most kernels kept loaded (all modes together); setting it lets the least
        recently looked-up ones go at once.

        :raises ValueError: when set below 1.
        """
        return self._capacity

    @capacity.setter
    def capacity(self, count: int) -> None:
        if count < 1:
            raise ValueError(f"a server keeps at least 1 loaded kernel; {count} was asked for")
        self._capacity = count
        self._trim()

    def __len__(self) -> int:
        """How many kernels are loaded now (all modes together)."""
        return len(self._recent)

    def table(self, mode: ExecutionMode) -> dict[str, LoadedKernel]:
        """The loaded kernels of ``mode`` by task key (the live table, for a caller that looks a
        kernel up without a call on its hot path; a miss still goes through :meth:`get`). An
        entry may leave it at any :meth:`get`: look it up again rather than keep it."""
        return self._by_mode[mode]

    def get(self, task: RudaTask, mode: ExecutionMode) -> LoadedKernel:
        """The loaded kernel of ``task`` in ``mode``: from the table, else from the persistent
        cache, else compiled and built now (then kept while ``task`` lives, within
        :attr:`capacity`).

        :raises ServerError: (a ``CompilationError`` …) when compiling or building fails.
        """
        table = self._checked if mode is _CHECKED else self._by_mode[mode]
        key = task.key
        entry = table.get(key)
        if entry is not None:
            self._recent.move_to_end((mode, key))
            return entry
        if self._released:
            self.collect()
        entry = table[key] = self._compile_and_build(task, mode)
        slot = (mode, key)
        self._recent[slot] = None
        owner = weakref.finalize(task, self._released.append, slot)
        owner.atexit = False
        self._owners[slot] = owner
        self._trim()
        return entry

    def hold(self, task: RudaTask, mode: ExecutionMode, watcher: Watcher) -> LoadedKernel | None:
        """The loaded kernel of ``task`` in ``mode``, or None when none is loaded. ``watcher``
        (kept by weak reference: its holder keeps it alive) is called with None when that
        kernel is let go, under the lock: a launch function made of the kernel drops it then
        and looks it up again."""
        slot = (mode, task.key)
        entry = self._by_mode[mode].get(task.key)
        if entry is not None:
            self._recent.move_to_end(slot)
            watchers = self._watchers.get(slot)
            if watchers is None:
                watchers = self._watchers[slot] = weakref.WeakSet()
            watchers.add(watcher)
        return entry

    def collect(self) -> None:
        """Let go of the kernels whose tasks are gone."""
        released = self._released
        gone = []
        while released:
            slot = released.popleft()
            owner = self._owners.get(slot)
            if owner is not None and not owner.alive:  # else let go already, perhaps reloaded
                gone.append(self._let_go(slot))
        if gone:
            self._retire(gone)

    def _trim(self) -> None:
        """Let go of the least recently looked-up kernels beyond :attr:`capacity`."""
        recent = self._recent
        gone = [self._let_go(next(iter(recent))) for _ in range(len(recent) - self._capacity)]
        if gone:
            self._retire(gone)

    def _let_go(self, slot: Slot) -> LoadedKernel:
        mode, key = slot
        del self._recent[slot]
        self._owners.pop(slot).detach()
        for watcher in self._watchers.pop(slot, ()):
            watcher(None)
        return self._by_mode[mode].pop(key)

    def _compile_and_build(self, task: RudaTask, mode: ExecutionMode) -> LoadedKernel:
        driver, target = self._driver, self._target
        _check_matrices(target, self.origin, task)
        compiled = task.compile(driver.compiler, target.options, mode)
        self._dump(task, compiled)  # before building: a source that fails to build is dumped too
        disk_key = self._disk_key(task, mode)
        if disk_key is not None:
            loaded = self._load_cached(disk_key, compiled)
            if loaded is not None:
                return loaded
        try:
            built = driver.build(compiled)
        except ServerError:
            raise
        except Exception as exc:  # a driver that did not translate: recorded and poisoned alike
            raise CompilationError(
                f"kernel {task.name} could not be built for {self.origin.device or 'its device'}:"
                f" the driver's build raised {type(exc).__name__}: {exc}"
            ) from exc
        self.stats.compiled += 1
        if disk_key is not None and self._disk is not None:
            binary = driver.binary(built)
            if binary is not None:
                origin = replace(self.origin, label=task.name)
                self._disk.put(disk_key, _encode(compiled, binary), origin)
        return LoadedKernel(compiled, built)

    def _dump(self, task: RudaTask, compiled: CompiledKernel) -> None:
        """Write the source into ``RUDA_DUMP_SOURCE``; a folder that cannot hold it is warned
        about once, and the kernel runs all the same."""
        if not self._dump_dir:
            return
        folder = Path(self._dump_dir)
        name = f"{task.name}-{task.key[:12]}-{compiled.mode.value}"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{name}.{self._driver.compiler.source_suffix}").write_text(compiled.source)
        except OSError as exc:
            self._dump_dir = None
            warnings.warn(
                f"RUDA_DUMP_SOURCE={str(folder)!r}: cannot write the generated sources there "
                f"({exc.strerror or exc}); kernels run without them. Name a folder you can write",
                RudaWarning,
                stacklevel=2,
            )

    def _disk_key(self, task: RudaTask, mode: ExecutionMode) -> str | None:
        target = self._target
        driver = target.driver_fingerprint
        if driver is None:
            return None
        if self._disk is None:
            self._disk = DiskCache(CacheKind.KERNELS)
        backend = type(self._driver).__module__.partition(".")[0]
        return digest(
            _KERNEL_FORMAT,
            task.key,
            mode.value,
            target.options,
            self._driver.compiler.name,
            code_fingerprint("ruda_core", backend),
            driver,
            target.properties_fingerprint,
            sys.version_info[:2],
        )

    def _load_cached(self, disk_key: str, compiled: CompiledKernel) -> LoadedKernel | None:
        """``compiled`` with what the server loads from the persisted binary of ``disk_key``;
        None when there is none, or (with one warning per cache root) when it is unusable."""
        disk = self._disk
        blob = disk.get(disk_key) if disk is not None else None
        if disk is None or blob is None:
            return None
        try:
            binary = _decode(blob, compiled)
            built = self._driver.load_binary(compiled, binary)
        except Exception as exc:  # a stale or foreign entry, or one the driver refuses: rebuild
            disk.warn_unusable(
                f"cached kernel {compiled.entrypoint} ({disk_key[:12]}) could not be loaded "
                f"({exc}); rebuilding it"
            )
            return None
        self.stats.disk_hits += 1
        return LoadedKernel(compiled, built)


def _source_digest(compiled: CompiledKernel) -> str:
    return hashlib.sha256(compiled.source.encode()).hexdigest()


def _encode(compiled: CompiledKernel, binary: bytes) -> bytes:
    """A persisted kernel: a JSON line naming the source ``binary`` was built from, then
    ``binary``."""
    head = {"entrypoint": compiled.entrypoint, "source_sha256": _source_digest(compiled)}
    return json.dumps(head).encode() + b"\n" + binary


def _decode(blob: bytes, compiled: CompiledKernel) -> bytes:
    """The binary in ``blob`` (what :func:`_encode` wrote) when it was built from the source of
    ``compiled``.

    :raises ValueError: when ``blob`` is not such a record, or names another source.
    """
    line, newline, binary = blob.partition(b"\n")
    try:
        head = json.loads(line) if newline else None
    except ValueError as exc:
        raise ValueError(f"its header is not JSON: {line[:60]!r}") from exc
    if not isinstance(head, dict) or not isinstance(head.get("source_sha256"), str):
        raise ValueError(f"its header is not a persisted kernel's: {line[:60]!r}")
    if head["source_sha256"] != _source_digest(compiled):
        raise ValueError("it was built from another source than the one generated now")
    return binary


def _check_matrices(target: BuildTarget, origin: EntryOrigin, task: RudaTask) -> None:
    """Refuse a task that multiplies a matrix configuration the device lacks, or that uses
    warpgroup matrices (``wgmma``) or asynchronous barriers (``mbarrier``) on a device without
    them.

    :raises UnsupportedFeature: naming the kernel, the device and the configuration.
    """
    features = target.features
    if task.uses_warpgroups and not features.has(Feature.WARPGROUP_MMA):
        raise UnsupportedFeature(
            f"kernel {task.name} uses warpgroup matrices (wgmma), which "
            f"{origin.device or target.device} ({target.properties.name}) does not have: "
            "only CUDA devices of compute capability 9.0 (sm_90a) and the NumPy device do. "
            "Check client.features().has(Feature.WARPGROUP_MMA) and choose another kernel"
        )
    if task.uses_barriers and not features.has(Feature.ASYNC_BARRIER):
        raise UnsupportedFeature(
            f"kernel {task.name} uses asynchronous barriers or bulk copies (mbarrier), which "
            f"{origin.device or target.device} ({target.properties.name}) does not have: "
            "only CUDA devices of compute capability 9.0 or later and the NumPy device do. "
            "Check client.features().has(Feature.ASYNC_BARRIER) and choose another kernel"
        )
    missing = sorted(str(c) for c in task.matrix_configs if not features.supports_matrix(c))
    if missing:
        offered = ", ".join(sorted(str(c) for c in features.matrices)) or "none"
        raise UnsupportedFeature(
            f"kernel {task.name} uses cmma {'; '.join(missing)}, which "
            f"{origin.device or target.device} ({target.properties.name}) "
            f"does not support (it supports: {offered}). Choose a configuration from "
            "client.features().matrices"
        )
