"""The wgpu binding: finding adapters, opening a device on one, and translating wgpu's errors.
Imports wgpu.

An adapter is usable when wgpu-native reaches it through a native API (Vulkan, Metal, D3D12);
OpenGL adapters are left out (their compute is a subset). ``translate`` is the one place a wgpu
exception becomes a ruda error; :class:`WgpuErrors` applies it to the calls of a ``with`` block.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import tempfile
from collections.abc import Sequence
from importlib.resources import files
from types import TracebackType
from typing import Any

import wgpu
from wgpu.backends.wgpu_native import extras

from ruda_core.codegen.names import words
from ruda_core.errors import LaunchError, OutOfMemory, ServerError
from ruda_core.runtime import plane_dim_setting

from .runtime import PLANE_DIM_VARIABLE

__all__ = [
    "OPTIONAL_FEATURES",
    "WgpuErrors",
    "all_adapters",
    "bind_group",
    "describe",
    "open_device",
    "own_pipeline",
    "plane_width",
    "read_back",
    "translate",
]

_NATIVE = ("Vulkan", "Metal", "D3D12")
#: The adapter features ruda asks for when the adapter offers them.
OPTIONAL_FEATURES = (
    "shader-f16",
    "shader-int64",
    "subgroup",
    "subgroup-barrier",
    "timestamp-query",
    "timestamp-query-inside-encoders",
)
#: The adapter limits ruda raises from WebGPU's defaults to the adapter's own.
_LIMITS = words(
    """
    max-storage-buffer-binding-size max-buffer-size max-storage-buffers-per-shader-stage
    max-compute-workgroup-storage-size max-compute-invocations-per-workgroup
    max-compute-workgroup-size-x max-compute-workgroup-size-y max-compute-workgroup-size-z
    max-bindings-per-bind-group
    """
)


@functools.cache
def all_adapters() -> tuple[Any, ...]:
    """The adapters of native APIs, in wgpu-native's order; empty without a driver."""
    # Mesa's Vulkan drivers write "error: XDG_RUNTIME_DIR is invalid or not set" to stderr
    # when the variable names no directory of ours (a container, a CI job): a private one
    # keeps that line out of every process's stderr (the probe's children report theirs)
    if os.name == "posix" and not os.path.isdir(os.environ.get("XDG_RUNTIME_DIR", "")):
        os.environ["XDG_RUNTIME_DIR"] = _private_runtime_dir()
    # timestamps resolved in nanoseconds (wgpu-py has no query of the timestamp period)
    extras.set_instance_extras(flags=["Default", "AutomaticTimestampNormalization"])
    adapters = wgpu.gpu.enumerate_adapters_sync()
    return tuple(a for a in adapters if a.info["backend_type"] in _NATIVE)


def _private_runtime_dir() -> str:
    """``ruda-xdg-<uid>`` in the temporary folder, made private to this user; a new folder of
    its own where another user holds that name or lets others in (the name can be foreseen)."""
    uid = os.getuid()
    path = os.path.join(tempfile.gettempdir(), f"ruda-xdg-{uid}")
    with contextlib.suppress(OSError):
        os.makedirs(path, mode=0o700, exist_ok=True)
    info = os.lstat(path) if os.path.lexists(path) else None
    if info and stat.S_ISDIR(info.st_mode) and info.st_uid == uid and not info.st_mode & 0o077:
        return path
    return tempfile.mkdtemp(prefix="ruda-xdg-")


def describe(adapter: Any) -> str:
    """A stable identity of an adapter and the stack serving it (no device opened)."""
    info = adapter.info
    return (
        f"{info['device']} | {info['backend_type']} {info['description']} | "
        f"vendor {info['vendor_id']:#x} device {info['device_id']:#x} | wgpu-py {wgpu.__version__}"
    )


def open_device(adapter: Any) -> Any:
    """A device on ``adapter`` with the optional features it offers and its own limits."""
    features = [f for f in OPTIONAL_FEATURES if f in adapter.features]
    limits = {name: adapter.limits[name] for name in _LIMITS}
    with WgpuErrors(f"opening a device on {adapter.info['device']}"):
        return adapter.request_device_sync(required_features=features, required_limits=limits)


def plane_width(device: Any) -> int:
    """The width of the planes kernels are generated for: 1 (planes of one lane) where
    ``device`` has no subgroups; else ``RUDA_WEBGPU_PLANE_DIM`` where it is set (a driver may
    give a kernel subgroups of another width than the probe's, which the kernel then reports);
    else the subgroup width of the probe's compute shader where every unit of a 64-unit cube
    reports the same width and the lane ``UNIT_POS % width`` (planes of consecutive units, as
    ruda's planes are), else 1.

    :raises ValueError: ``RUDA_WEBGPU_PLANE_DIM`` is set to a width ruda does not run.
    """
    if "subgroup" not in device.features or "subgroup-barrier" not in device.features:
        return 1
    setting = plane_dim_setting(PLANE_DIM_VARIABLE, "the width ruda measures")
    if setting is not None:
        return setting
    usage = wgpu.BufferUsage
    out = device.create_buffer(size=256, usage=usage.STORAGE | usage.COPY_SRC)
    with WgpuErrors("measuring the subgroup width"):
        pipeline = own_pipeline(device, "plane_probe")
        group = bind_group(device, pipeline.get_bind_group_layout(0), [(out, 0, 256)])
        encoder = device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, group)
        compute.dispatch_workgroups(1)
        compute.end()
        device.queue.submit([encoder.finish()])
        widths = set(device.queue.read_buffer(out).cast("I"))
    out.destroy()
    width = widths.pop() if len(widths) == 1 else 0
    return width if width in (2, 4, 8, 16, 32, 64) else 1


def own_pipeline(device: Any, name: str, **constants: int) -> Any:
    """The compute pipeline, its layout derived, of the driver's shader ``name.wgsl`` (entry
    point ``main``) with its override ``constants``."""
    code = files(__package__).joinpath(f"{name}.wgsl").read_text(encoding="utf-8")
    module = device.create_shader_module(code=code)
    compute = {"module": module, "entry_point": "main", "constants": constants}
    return device.create_compute_pipeline(layout="auto", compute=compute)


def bind_group(device: Any, layout: Any, windows: Sequence[tuple[Any, int, int]]) -> Any:
    """A bind group of ``layout`` binding each ``(buffer, offset, size)`` window in turn, from
    binding 0."""
    entries = [
        {"binding": k, "resource": {"buffer": buffer, "offset": offset, "size": size}}
        for k, (buffer, offset, size) in enumerate(windows)
    ]
    return device.create_bind_group(layout=layout, entries=entries)


def read_back(buffer: Any) -> memoryview:
    """A copy of the bytes of a mappable buffer, once the submission that fills it is done
    (blocks until then)."""
    buffer.map_sync(wgpu.MapMode.READ)
    data: memoryview = buffer.read_mapped()
    buffer.unmap()
    return data


def translate(what: str, exc: BaseException, kind: type[ServerError] = LaunchError) -> ServerError:
    """The ruda error for a wgpu exception raised while doing ``what``: ``OutOfMemory`` for
    wgpu's, else ``kind``."""
    text = str(exc).strip()
    if isinstance(exc, wgpu.GPUOutOfMemoryError) or "out of memory" in text.lower():
        return OutOfMemory(f"{what} failed: wgpu is out of memory: {text}. Free memory and retry")
    return kind(f"{what} failed: {text}")


class WgpuErrors:
    """A context manager that raises what a wgpu call in its block raises (wgpu raises plain
    ``Exception``s) as the ruda error :func:`translate` gives for doing ``what``. Reusable."""

    __slots__ = ("kind", "what")

    def __init__(self, what: str, kind: type[ServerError] = LaunchError) -> None:
        self.what = what
        self.kind = kind

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if isinstance(exc, Exception):
            raise translate(self.what, exc, self.kind) from exc
