"""Building and running generated NumPy kernels: :func:`build` -> :class:`CpuKernel`.

The source of a :class:`CompiledKernel` is compiled once, under the file name
``<ruda-numpy:NAME:HASH:N>`` (HASH of the source, N counting builds in the process), registered
with ``linecache`` so tracebacks show the generated lines while the kernel lives. A
:class:`CpuKernel` runs a whole launch synchronously on the calling thread, as successive
batches of whole cubes (about ``LANES_PER_BATCH`` lanes each; two at least when sanitizing, so
that a cube reading what a later cube writes is seen), and keeps no state between calls,
so one kernel may run on several threads at once. What a launch's units print is written to
``sys.stdout`` (looked up when the launch ends, so a redirection such as pytest's ``capsys`` sees
it) in one write, ordered by cube and unit, also when the launch fails. This module runs only
source made by ``CpuCompiler`` and touches no memory but the arrays a launch passes in.
"""

from __future__ import annotations

import hashlib
import itertools
import linecache
import sys
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ruda_core.runtime import CompilationError, LaunchConfigError, LaunchError, OutOfMemory
from ruda_core.runtime.compiler import CompiledKernel

from . import lockstep
from .compiler import CpuCompiler
from .lockstep import Batch, LaunchShape
from .lockstep.sanitizer import LaunchSanitizer
from .sanitize import is_sanitizing

__all__ = ["LANES_PER_BATCH", "LOCAL_BYTES_PER_BATCH", "CpuKernel", "build"]

#: Lanes per batch (rounded down to whole cubes, at least one cube): bounds memory per launch.
LANES_PER_BATCH = 1 << 18
#: Local-array bytes per batch: kernels with large local arrays run smaller batches.
LOCAL_BYTES_PER_BATCH = 1 << 28


class CpuKernel:
    """One compiled kernel of the NumPy device. Thread-safe; see :meth:`__call__`."""

    __slots__ = (
        "__weakref__",  # for the finalizer that lets go of its lines in linecache
        "_checking",
        "_compiled",
        "_dtypes",
        "_fn",
        "_local_bytes",
        "_meta_count",
        "_pairs",
        "_plane_dim",
        "_scalar_types",
        "_written",
        "name",
    )

    def __init__(self, compiled: CompiledKernel, fn: Callable[..., None]) -> None:
        defn = compiled.definition
        self.name = defn.name
        self._fn = fn
        self._compiled = compiled
        #: the sanitizing variant and its sites, built at the first sanitized launch
        self._checking: tuple[Callable[..., None], tuple[tuple[str, str], ...]] | None = None
        self._plane_dim = compiled.plane_dim
        self._local_bytes = compiled.local_bytes
        arrays = defn.array_params
        self._dtypes = tuple(p.elem.numpy for p in arrays)
        self._scalar_types = tuple(p.elem.numpy.type for p in defn.scalar_params)
        self._meta_count = len(defn.metadata_layout())
        written = set(compiled.written)
        #: the positions of the buffers the kernel may write
        self._written = tuple(sorted(written))
        #: (read-only, written) buffer positions whose overlap forbids views of the former
        self._pairs = tuple(
            (r, w) for r in range(len(arrays)) if r not in written for w in sorted(written)
        )

    def __call__(
        self,
        count: tuple[int, int, int],
        dim: tuple[int, int, int],
        buffers: Sequence[np.ndarray],
        scalars: Sequence[np.generic],
        metadata: Sequence[int],
        written: Sequence[np.ndarray | None] = (),
    ) -> None:
        """Run the launch: ``count`` cubes of ``dim`` units over ``buffers`` (1-D arrays of the
        array parameters' dtypes, written in place), ``scalars`` (in parameter order) and the
        ``u32`` ``metadata`` of ``KernelDefinition.metadata_layout()``. Returns when done.
        ``written`` holds, per buffer, which of its bytes something wrote (a ``bool`` array
        of its bytes, or None where that is not followed; none when empty).

        When the sanitizer is on (:func:`~ruda_cpu.sanitize.is_sanitizing`), the launch runs
        the kernel's checking variant, which reports reads of elements nothing wrote and marks
        the elements its units write, and then raises what it found. Otherwise the buffers the
        kernel may write are marked written whole.

        :raises LaunchConfigError: when the arguments do not match the kernel's parameters.
        :raises LaunchError: (naming the kernel) for any failure while the kernel runs.
        :raises SanitizerError: when sanitizing found faults (after the whole launch ran).
        """
        args = self._arguments(buffers, scalars, metadata)
        shape = LaunchShape(
            (count[0], count[1], count[2]), (dim[0], dim[1], dim[2]), self._plane_dim
        )
        if shape.units == 0 or shape.cubes == 0:
            return
        views = True  # loads from read-only buffers may be views unless a write could alias
        for r, w in self._pairs:
            if np.may_share_memory(buffers[r], buffers[w]):
                views = False
        lanes = LANES_PER_BATCH
        if self._local_bytes:
            lanes = min(lanes, LOCAL_BYTES_PER_BATCH // self._local_bytes)
        per_batch = max(1, lanes // shape.units)
        fn = self._fn
        sanitizer = None
        if is_sanitizing():
            # two batches at least, one after the other: a cube that reads what a later cube
            # writes (one that took the wrong ticket) meets that write as a race
            per_batch = min(per_batch, max(1, -(-shape.cubes // 2)))
            fn, sites = self._checking_variant()
            elements = [_elements(w, b) for w, b in zip(written, buffers, strict=False)]
            sanitizer = LaunchSanitizer(self.name, sites, shape.count, shape.dim, elements)
        printed: list[str] = []
        try:
            with np.errstate(all="ignore"):
                for first in range(0, shape.cubes, per_batch):
                    batch = Batch(shape, first, min(per_batch, shape.cubes - first), views)
                    try:
                        if sanitizer is None:
                            fn(batch, *args)
                        else:
                            fn(batch, sanitizer.batch(batch), *args)
                    finally:
                        printed.append(lockstep.batch_output(batch))
        except MemoryError as exc:
            raise OutOfMemory(
                f"kernel {self.name} ran out of host memory on the NumPy device ({exc}); "
                "free memory or launch fewer units"
            ) from exc
        except Exception as exc:
            raise LaunchError(
                f"kernel {self.name} failed on the NumPy device (RudaCount{tuple(count)}, "
                f"RudaDim{tuple(dim)}): {type(exc).__name__}: {exc}; the traceback's "
                "<ruda-numpy:...> frames point at the generated source"
            ) from exc
        finally:
            _write_output("".join(printed))
        if written and sanitizer is None:
            for k in self._written:
                mark = written[k] if k < len(written) else None
                if mark is not None:
                    mark[:] = True
        found = sanitizer.error() if sanitizer is not None else None
        if found is not None:
            raise found

    def _checking_variant(self) -> tuple[Callable[..., None], tuple[tuple[str, str], ...]]:
        """The sanitizing variant of the kernel and its sites (built once, kept)."""
        if self._checking is None:
            checked = CpuCompiler().compile_sanitizing(self._compiled)
            namespace = _module(checked, _register(checked, self))
            self._checking = (_entry(checked, namespace), namespace["SITES"])
        return self._checking

    def _arguments(
        self, buffers: Sequence[np.ndarray], scalars: Sequence[Any], metadata: Sequence[int]
    ) -> list[Any]:
        if len(buffers) != len(self._dtypes) or len(scalars) != len(self._scalar_types):
            raise LaunchConfigError(
                f"kernel {self.name} takes {len(self._dtypes)} buffers and "
                f"{len(self._scalar_types)} scalars; got {len(buffers)} and {len(scalars)}"
            )
        if len(metadata) != self._meta_count:
            raise LaunchConfigError(
                f"kernel {self.name} takes {self._meta_count} metadata values; got {len(metadata)}"
            )
        for k, (buf, dtype) in enumerate(zip(buffers, self._dtypes, strict=True)):
            if buf.dtype != dtype or buf.ndim != 1:
                raise LaunchConfigError(
                    f"kernel {self.name}: buffer {k} must be a 1-D {dtype} array, got a "
                    f"{buf.ndim}-D {buf.dtype} array"
                )
        values = [t(s) for t, s in zip(self._scalar_types, scalars, strict=True)]
        return [*buffers, *values, *(np.uint32(v) for v in metadata)]

    def __repr__(self) -> str:
        return f"CpuKernel({self.name})"


def _elements(written: np.ndarray | None, buffer: np.ndarray) -> np.ndarray | None:
    """A buffer's map of written bytes as one row per element (its bytes), or None."""
    if written is None:
        return None
    size = buffer.itemsize
    return written[: buffer.shape[0] * size].reshape(buffer.shape[0], size)


def _write_output(text: str) -> None:
    """Write what a launch printed to the process's current ``sys.stdout`` and flush it."""
    out = sys.stdout
    if text and out is not None:
        out.write(text)
        out.flush()


#: numbers the builds of this process: each kernel's file name is its own, so dropping one kernel
#: removes only its lines from ``linecache``
_builds = itertools.count()


def _register(compiled: CompiledKernel, owner: object | None) -> str:
    """Put ``compiled.source`` in ``linecache`` under a file name of its own; with ``owner``,
    its lines go when ``owner`` does. Returns the file name."""
    digest = hashlib.sha256(compiled.source.encode()).hexdigest()[:12]
    filename = f"<ruda-numpy:{compiled.definition.name}:{digest}:{next(_builds)}>"
    lines = compiled.source.splitlines(keepends=True)
    linecache.cache[filename] = (len(compiled.source), None, lines, filename)
    if owner is not None:
        forget = weakref.finalize(owner, linecache.cache.pop, filename, None)
        forget.atexit = False
    return filename


def build(compiled: CompiledKernel) -> CpuKernel:
    """Compile ``compiled.source`` (made by ``CpuCompiler``) into a runnable kernel. Its
    generated lines stay in ``linecache`` while it lives."""
    filename = _register(compiled, None)
    try:
        kernel = CpuKernel(compiled, _entry(compiled, _module(compiled, filename)))
    except BaseException:
        linecache.cache.pop(filename, None)
        raise
    forget = weakref.finalize(kernel, linecache.cache.pop, filename, None)
    forget.atexit = False
    return kernel


def _module(compiled: CompiledKernel, filename: str) -> dict[str, Any]:
    """The namespace of ``compiled.source`` run as a module compiled under ``filename``.

    :raises CompilationError: when the source does not compile.
    """
    namespace: dict[str, Any] = {"np": np, "L": lockstep, "__name__": filename}
    try:
        code = compile(compiled.source, filename, "exec")
    except SyntaxError as exc:
        loc = compiled.definition.source
        raise CompilationError(
            f"kernel {compiled.definition.name}: its generated NumPy source does not compile: "
            f"{exc.msg} (generated line {exc.lineno})",
            file=loc.file if loc else None,
            line=loc.line if loc else None,
        ) from exc
    exec(code, namespace)  # our own generated source
    return namespace


def _entry(compiled: CompiledKernel, namespace: dict[str, Any]) -> Callable[..., None]:
    """The entry point of ``compiled`` in its module's ``namespace``.

    :raises CompilationError: when the module does not define it.
    """
    try:
        entry: Callable[..., None] = namespace[compiled.entrypoint]
    except KeyError:
        raise CompilationError(
            f"kernel {compiled.definition.name}: the generated source defines no function "
            f"{compiled.entrypoint!r}"
        ) from None
    return entry
