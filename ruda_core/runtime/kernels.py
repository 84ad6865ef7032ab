"""``KernelCache``: the compiled kernels of one server, each a :class:`LoadedKernel`.

It holds one table per :class:`ExecutionMode` of loaded kernels by task key, the persistent cache
of built kernels (``DiskCache(CacheKind.KERNELS)``, each listed under the server's
``cache_origin`` and the kernel's name, through the server's ``_binary``/``_load_binary``
hooks, only for a backend with a driver fingerprint) and the source dumps of
``RUDA_DUMP_SOURCE``. A kernel is compiled and built at its first lookup, under the server's lock,
and kept for the server's life; a build that fails raises and is not cached, so the next lookup
tries again. This module never enqueues work, touches memory or reads a stream.

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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UnsupportedFeature
from ..ir import ExecutionMode
from .cache import CacheKind, DiskCache, code_fingerprint, digest
from .compiler import CompiledKernel, RudaTask

if TYPE_CHECKING:
    from .server import ComputeServer

__all__ = ["CompileStats", "KernelCache", "LoadedKernel"]

_CHECKED = ExecutionMode.CHECKED
#: Layout of a persisted kernel, part of every key: an entry of another layout is never found, so
#: it is rebuilt, never misread. 3: a JSON line with the source's digest, then the binary (1 and
#: 2 were pickles).
_KERNEL_FORMAT = 3


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
    """How this server built its kernels: ``compiled`` from their generated source, or loaded
    from the binaries of ``disk_hits`` entries of the persistent cache."""

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
        _check_matrices(server, task)
        compiled = task.compile(server.compiler, server.compile_options(), mode)
        self._dump(task, compiled)  # before building: a source that fails to build is dumped too
        disk_key = self._disk_key(task, mode)
        if disk_key is not None:
            loaded = self._load_cached(disk_key, compiled)
            if loaded is not None:
                return loaded
        built = server._build(compiled)
        self.stats.compiled += 1
        if disk_key is not None and self._disk is not None:
            binary = server._binary(built)
            if binary is not None:
                origin = replace(server.cache_origin, label=task.name)
                self._disk.put(disk_key, _encode(compiled, binary), origin)
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

    def _load_cached(self, disk_key: str, compiled: CompiledKernel) -> LoadedKernel | None:
        """``compiled`` with what the server loads from the persisted binary of ``disk_key``;
        None when there is none, or (with one warning per cache root) when it is unusable."""
        disk = self._disk
        blob = disk.get(disk_key) if disk is not None else None
        if disk is None or blob is None:
            return None
        try:
            binary = _decode(blob, compiled)
            built = self._server._load_binary(compiled, binary)
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
