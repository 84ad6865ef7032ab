"""Device capabilities: :class:`DeviceProperties` (limits), :class:`Features` (what the device
can do) and :class:`TargetProperties` (what a runtime's code generator targets).

All are frozen values computed once when a server is created; queries never probe the driver.
"""

from __future__ import annotations

import enum
import hashlib
import os
from dataclasses import dataclass, field, fields

from ..errors import SettingError
from ..ir import Elem, MatrixConfig

__all__ = [
    "PLANE_DIMS",
    "DeviceProperties",
    "Feature",
    "Features",
    "TargetProperties",
    "plane_dim_setting",
]

#: The plane widths a device may be set to run with (``RUDA_CPU_PLANE_DIM``,
#: ``RUDA_WEBGPU_PLANE_DIM``); 1: planes of one lane.
PLANE_DIMS = (1, 2, 4, 8, 16, 32, 64)

#: Properties that can differ between two processes on one device, left out of fingerprints:
#: PoCL, for one, reports a share of the memory that is free when the process starts.
_VOLATILE = frozenset({"memory_nbytes"})


class Feature(enum.Enum):
    """An optional capability. Tests and kernels ask for these before using them."""

    PLANE = "plane"  #: plane (warp / subgroup) operations
    PLANE_SHUFFLE = "plane_shuffle"  #: plane_shuffle / plane_broadcast with per-unit lanes
    #: plane operations on a cube whose unit count is not a multiple of the plane width
    PARTIAL_PLANE = "partial_plane"
    #: a plane of a cube of several rows is units consecutive in ``UNIT_POS`` order, across
    #: rows (CUDA's warps); without it a driver may form planes within each row (OpenCL and
    #: Vulkan may), and a kernel that uses plane operations is refused a cube of several rows
    #: that are not whole planes
    PLANES_ACROSS_ROWS = "planes_across_rows"
    ATOMIC_INT64 = "atomic_int64"  #: 64-bit integer atomics
    ATOMIC_FLOAT = "atomic_float"  #: float atomics (native or emulated)
    DYNAMIC_COUNT = "dynamic_count"  #: RudaCount.dynamic
    #: execution time from device events / timestamps; without it ``profile()`` is timed on
    #: the host (``TimingMethod.SYSTEM``: no trace events, transfers counted as execution)
    DEVICE_TIMING = "device_timing"
    PRINT = "print"  #: print() in kernels (printf on C targets)
    #: ``fence_units()`` and ``fence_device()``: memory fences outside a barrier, so a unit's
    #: writes are seen in order by the other units of its cube or of the device (a partial
    #: handed to the last cube of a grid reduction); WGSL has none
    MEMORY_FENCE = "memory_fence"
    #: a unit's loops run as long as their condition holds, so a kernel may spin until another
    #: unit or the host releases it, or for ever; lavapipe stops a unit's loops after 65 535
    #: turns in all
    UNBOUNDED_LOOPS = "unbounded_loops"
    #: launches can run sanitized (``RUDA_SANITIZE=1``): races, uninitialised reads, divergent
    #: barriers and out-of-bounds accesses are reported as a ``SanitizerError``
    SANITIZE = "sanitize"
    #: warpgroup matrix multiply (``wgmma``, Hopper's ``wgmma.mma_async``): CUDA devices of
    #: compute capability 9.0 (``sm_90a``; later architectures lack it) and the NumPy device
    WARPGROUP_MMA = "warpgroup_mma"
    #: asynchronous barriers in shared memory and bulk copies that complete on them
    #: (``mbarrier``, Hopper's ``mbarrier`` and ``cp.async.bulk``): CUDA devices of compute
    #: capability 9.0 and later, and the NumPy device
    ASYNC_BARRIER = "async_barrier"


@dataclass(frozen=True, slots=True)
class Features:
    """What a device supports: capabilities, element types and the cooperative-matrix
    configurations (``cmma``) it can multiply."""

    features: frozenset[Feature]
    elems: frozenset[Elem]
    matrices: frozenset[MatrixConfig] = frozenset()

    def has(self, feature: Feature) -> bool:
        return feature in self.features

    def supports(self, elem: Elem) -> bool:
        return elem in self.elems

    def supports_matrix(self, config: MatrixConfig) -> bool:
        """Whether ``cmma.execute`` of ``config``'s types and shape compiles for the device."""
        return config in self.matrices


@dataclass(frozen=True, slots=True)
class DeviceProperties:
    """Limits and facts of one device.

    :param name: the device's marketing name.
    :param vendor: the vendor or platform.
    :param memory_nbytes: global memory the device reports.
    :param max_units_per_ruda: the most units in one cube (product of RudaDim).
    :param max_ruda_dim: the most units per cube along x, y, z.
    :param max_ruda_count: the most cubes along x, y, z.
    :param max_shared_memory_nbytes: shared memory available to one cube.
    :param plane_dim: the plane (warp / subgroup) width; 1 when the device has no planes.
    :param compute_units: SMs / compute units / CPU cores.
    :param alignment_nbytes: allocation alignment of the memory pools.
    :param extra: further facts as sorted (name, value) pairs, e.g. compute capability.
    """

    name: str
    vendor: str
    memory_nbytes: int
    max_units_per_ruda: int
    max_ruda_dim: tuple[int, int, int]
    max_ruda_count: tuple[int, int, int]
    max_shared_memory_nbytes: int
    plane_dim: int
    compute_units: int
    alignment_nbytes: int
    extra: tuple[tuple[str, str], ...] = field(default=())

    def fingerprint(self, features: Features) -> str:
        """A hex digest of the device's stable identity, which keys the kernel and tuning
        caches: every property but the volatile ``memory_nbytes``, and ``features``. It is the
        same in every process on the same device and driver stack."""
        identity = [
            (f.name, getattr(self, f.name)) for f in fields(self) if f.name not in _VOLATILE
        ]
        parts = [repr(identity), repr(sorted(f.value for f in features.features))]
        parts.append(repr(sorted(e.value for e in features.elems)))
        if features.matrices:
            parts.append(repr(sorted(str(c) for c in features.matrices)))
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]

    def summary(self) -> str:
        """One line for ``ruda devices``."""
        mem = self.memory_nbytes / 2**30
        return (
            f"{mem:.1f} GiB, {self.compute_units} compute units, "
            f"{self.max_units_per_ruda} units/cube, "
            f"{self.max_shared_memory_nbytes // 1024} KiB shared, plane {self.plane_dim}"
        )


@dataclass(frozen=True, slots=True)
class TargetProperties:
    """What a runtime's code generator targets, independent of a particular device."""

    language: str
    default_plane_dim: int


def plane_dim_setting(variable: str, otherwise: str) -> int | None:
    """The plane width that the environment variable ``variable`` sets (one of
    :data:`PLANE_DIMS`); None where it is unset or empty.

    :param otherwise: what the device runs with where it is unset, for the error message.
    :raises SettingError: it is set to anything else; the message names it.
    """
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return None
    if raw not in {str(width) for width in PLANE_DIMS}:
        allowed = ", ".join(str(width) for width in PLANE_DIMS)
        raise SettingError(
            f"{variable}={raw!r} is not a plane width ruda runs; set it to one of {allowed}, "
            f"or unset it for {otherwise}"
        )
    return int(raw)
