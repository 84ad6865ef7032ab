"""``KernelCache``: the compiled kernels of one server, each a :class:`LoadedKernel`.

It holds one table per :class:`ExecutionMode` of loaded kernels by task key, the persistent cache
of built kernels (``DiskCache(CacheKind.KERNELS)``, each listed under the server's
``cache_origin`` and the kernel's name, through the server's ``_binary``/``_load_binary``
hooks, only for a backend with a driver fingerprint) and the source dumps of
``RUDA_DUMP_SOURCE``. A kernel is compiled and built at its first lookup, under the server's lock,
and kept for the server's life; a build that fails raises and is not cached, so the next lookup
tries again. This module never enqueues work, touches memory or reads a stream.
"""

from __future__ import annotations

import os
import pickle
import sys
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UnsupportedFeature
from ..ir import ExecutionMode
from .cache import CacheKind, CacheWarning, DiskCache, code_fingerprint, digest
from .compiler import CompiledKernel, RudaTask

if TYPE_CHECKING:
    from .server import ComputeServer

__all__ = ["CompileStats", "KernelCache", "LoadedKernel"]

_CHECKED = ExecutionMode.CHECKED
#: Layout of a persisted kernel (a pickled ``(CompiledKernel, binary)``), part of every key: an
#: entry of another layout is never found, so it is rebuilt, never misread. 2: typed fields.
_KERNEL_FORMAT = 2


@dataclass(frozen=True, slots=True)
class LoadedKernel:
    """A kernel ready to launch on one server: what the compiler made and what the backend
    built from it, made once per (task, mode) and passed to every ``_launch``/``_prepare``.

    :param compiled: the compiler's output (source, argument rows, report names …).
    :param built: what the server's ``_build`` (or ``_load_binary``) returned for it.
    """

    compiled: CompiledKernel
    built: Any


class CompileStats:
    """How this server obtained its kernels: ``compiled`` from IR, or loaded from ``disk_hits``
    entries of the persistent cache."""

    __slots__ = ("compiled", "disk_hits")

    def __init__(self) -> None:
        self.compiled = 0
        self.disk_hits = 0

    def __repr__(self) -> str:
        return f"CompileStats(compiled={self.compiled}, disk_hits={self.disk_hits})"


class KernelCache:
    """Built kernels of ``server`` by (mode, task key). Not thread-safe: the server calls it
    with its lock held.

    :param server: the server whose compiler, options and build hooks make the kernels.
    """

    __slots__ = ("_by_mode", "_checked", "_disk", "_dump_dir", "_server", "stats")

    def __init__(self, server: ComputeServer) -> None:
        self._server = server
        #: one table per mode, looked up by identity on the hot path
        self._by_mode: dict[ExecutionMode, dict[str, LoadedKernel]] = {m: {} for m in ExecutionMode}
        self._checked = self._by_mode[_CHECKED]
        self._dump_dir = os.environ.get("RUDA_DUMP_SOURCE")
        self._disk: DiskCache | None = None
        self.stats = CompileStats()

    def table(self, mode: ExecutionMode) -> dict[str, LoadedKernel]:
        """The loaded kernels of ``mode`` by task key (the live table, for a caller that looks a
        kernel up without a call on its hot path; a miss still goes through :meth:`get`)."""
        return self._by_mode[mode]

    def get(self, task: RudaTask, mode: ExecutionMode) -> LoadedKernel:
        """The loaded kernel of ``task`` in ``mode``: from the table, else from the persistent
        cache, else compiled and built now.

        :raises ServerError: (a ``CompilationError`` …) when compiling or building fails.
        """
        table = self._checked if mode is _CHECKED else self._by_mode[mode]
        entry = table.get(task.key)
        if entry is None:
            entry = table[task.key] = self._compile_and_build(task, mode)
        return entry

    def _compile_and_build(self, task: RudaTask, mode: ExecutionMode) -> LoadedKernel:
        server = self._server
        disk_key = self._disk_key(task, mode)
        loaded = self._load_cached(disk_key) if disk_key is not None else None
        if loaded is not None:
            self._dump(task, loaded.compiled)
            return loaded
        _check_matrices(server, task)
        compiled = task.compile(server.compiler, server.compile_options(), mode)
        self._dump(task, compiled)  # before building: a source that fails to build is dumped too
        built = server._build(compiled)
        self.stats.compiled += 1
        if disk_key is not None and self._disk is not None:
            binary = server._binary(built)
            if binary is not None:
                origin = replace(server.cache_origin, label=task.name)
                self._disk.put(disk_key, pickle.dumps((compiled, binary)), origin)
        return LoadedKernel(compiled, built)

    def _dump(self, task: RudaTask, compiled: CompiledKernel) -> None:
        if self._dump_dir:
            folder = Path(self._dump_dir)
            folder.mkdir(parents=True, exist_ok=True)
            suffix = self._server.compiler.source_suffix
            name = f"{task.name}-{task.key[:12]}-{compiled.mode.value}.{suffix}"
            (folder / name).write_text(compiled.source)

    def _disk_key(self, task: RudaTask, mode: ExecutionMode) -> str | None:
        server = self._server
        driver = server.driver_fingerprint()
        if driver is None:
            return None
        if self._disk is None:
            self._disk = DiskCache(CacheKind.KERNELS)
        backend = type(server).__module__.partition(".")[0]
        return digest(
            _KERNEL_FORMAT,
            task.key,
            mode.value,
            server.compile_options(),
            server.compiler.name,
            code_fingerprint("ruda_core", backend),
            driver,
            server.properties_fingerprint(),
            sys.version_info[:2],
        )

    def _load_cached(self, disk_key: str) -> LoadedKernel | None:
        blob = self._disk.get(disk_key) if self._disk is not None else None
        if blob is None:
            return None
        try:
            compiled, binary = pickle.loads(blob)
            built = self._server._load_binary(compiled, binary)
        except Exception as exc:  # a stale or foreign entry: rebuild it, loudly
            warnings.warn(
                f"cached kernel {disk_key[:12]} could not be loaded ({exc!r}); rebuilding",
                CacheWarning,
                stacklevel=4,
            )
            return None
        self.stats.disk_hits += 1
        return LoadedKernel(compiled, built)


def _check_matrices(server: ComputeServer, task: RudaTask) -> None:
    """Refuse a task that multiplies a matrix configuration the device lacks.

    :raises UnsupportedFeature: naming the kernel, the device and the configuration.
    """
    features = server.features()
    missing = sorted(str(c) for c in task.matrix_configs if not features.supports_matrix(c))
    if missing:
        offered = ", ".join(sorted(str(c) for c in features.matrices)) or "none"
        raise UnsupportedFeature(
            f"kernel {task.name} uses cmma {'; '.join(missing)}, which "
            f"{server.cache_origin.device or server.device_id} ({server.properties().name}) "
            f"does not support (it supports: {offered}). Choose a configuration from "
            "client.features().matrices"
        )
