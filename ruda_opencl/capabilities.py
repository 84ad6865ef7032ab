"""``OpenCLCapabilities``: what one OpenCL device gives ruda, read once when its server starts:
the :class:`~ruda_opencl.target.OpenCLTarget` its code is generated for, the plane width, the
program build options, and the features and element types they imply. Imports PyOpenCL.

``PLANE_DIM`` is a compile-time constant and ``properties().plane_dim`` one number per device,
but OpenCL lets the compiler choose each kernel's subgroup size. Subgroups are therefore enabled
only where the width can be fixed for every kernel:

- ``cl_intel_required_subgroup_size``: every kernel requires the width with
  ``intel_reqd_sub_group_size``, chosen by :func:`choose_plane_dim` from the sizes the device
  supports (``CL_DEVICE_SUB_GROUP_SIZES_INTEL``);
- ``cl_khr_subgroups`` on NVIDIA: the warp width (``CL_DEVICE_WARP_SIZE_NV``).

Elsewhere (AMD, NVIDIA's driver without ``cl_khr_subgroups`` …), and where subgroups give
neither the non-uniform arithmetic nor shuffles (which ``plane_prod`` needs), the subgroup
capabilities are dropped: a plane is then one lane, ``PLANE_DIM`` reads 1, and every plane
operation is the one-lane form the dialect writes without subgroup built-ins, so the cube
collectives (``units_sum`` …) run there too. ``RUDA_OPENCL_SUBGROUPS=0``
(read when a server is made; see :func:`subgroups_from_env`) drops them on every device, so a
device with subgroups runs as one without. Subgroups found through the OpenCL C 3.0 feature
``__opencl_c_subgroups`` and work-group collectives need ``-cl-std=CL3.0`` (OpenCL C 1.2 is the
default; see :data:`~ruda_opencl.target.OPENCL_C_3`).

PoCL turns a kernel into loops over a cube's units by its "work-group method". Its default
(PoCL 5: ``loopvec``) stops the process with an assertion in its parallel-region formation on
kernels where a branch after a barrier skips a loop of variable length (the radix sort's
histogram and ``bincount`` are such kernels); its ``cbs`` method builds them. So a PoCL device's
capabilities carry ``POCL_WORK_GROUP_METHOD=cbs`` (:data:`POCL_ENVIRONMENT`), which its server
sets for the process unless the variable is set already. Under ``cbs`` PoCL 5 aborts the process
building kernels with plane operations, of its subgroups (16 lanes on an AVX-512 CPU) and of one
lane alike: a PoCL device has no planes, its subgroups are dropped, plane operations are refused
when a kernel is generated, and the operations built on them take their shared-memory forms.

Intel's CPU runtime gets ``Capability.SHARED_ARGUMENT``: its kernels declare no static shared
array, every one is carved out of the shared-memory argument (see :mod:`ruda_opencl.intel_cpu`).
NVIDIA's gets ``Capability.PTX``: its kernels pass through NVIDIA's PTX assembler, whose fusing
of integer ``min`` and ``max`` the dialect works around.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyopencl as cl

from ruda_core.errors import SettingError
from ruda_core.ir import Elem
from ruda_core.runtime import CompileOptions, Feature, Features, plane_dim_setting, switch_setting

from .runtime import PLANE_DIM_VARIABLE, SUBGROUPS_VARIABLE
from .target import OPENCL_C_3, SUBGROUPS, Capability, OpenCLTarget

__all__ = [
    "PLANE_DIM_VARIABLE",
    "PREFERRED_PLANE_DIM",
    "SUBGROUPS_VARIABLE",
    "OpenCLCapabilities",
    "choose_plane_dim",
    "subgroups_from_env",
]

#: The plane width asked of Intel's compilers where a device has no vector registers of its
#: own to fit: the one width every Intel device with required subgroup sizes supports (GPUs
#: offer 8/16/32 or 16/32, CPUs 4 to 64). A CPU is asked for the float lanes of its vector
#: registers (8 with AVX2, 16 with AVX-512), the width its compiler picks unasked: planes wider
#: than a register split into several, make the smallest whole-plane cube larger, and take
#: longer to build (the runtime builds the radix sort's scatter at 16 lanes in about twice the
#: time it takes at 8 on an AVX2 CPU).
PREFERRED_PLANE_DIM = 16
_SUB_GROUP_SIZES_INTEL = 0x4108  # CL_DEVICE_SUB_GROUP_SIZES_INTEL: size_t[]
_WARP_SIZE_NV = 0x4003  # CL_DEVICE_WARP_SIZE_NV: cl_uint
#: The variables a PoCL device's server sets (unless set) before it builds anything.
POCL_ENVIRONMENT = (("POCL_WORK_GROUP_METHOD", "cbs"),)
#: Capabilities that mean nothing without a fixed plane width: every subgroup one.
_PLANE_KEYS = frozenset(c for c in Capability if "subgroup" in c)


def subgroups_from_env() -> bool:
    """Whether :data:`SUBGROUPS_VARIABLE` lets servers use subgroups (unset, ``1``) or not
    (``0``). Read when a server is made, so a process that sets it before its first OpenCL
    client runs every OpenCL device without subgroups.

    :raises SettingError: for another value, naming the variable and the values it takes.
    """
    on, off = "subgroups where the device has them", "planes of one lane, no subgroups"
    return switch_setting(SUBGROUPS_VARIABLE, on, off, default=True)


def choose_plane_dim(sizes: Iterable[int], lanes: int = 1, asked: int | None = None) -> int:
    """The plane width to require from the subgroup ``sizes`` a device supports: the width
    ``asked`` (:data:`PLANE_DIM_VARIABLE`) where given, else its vector registers' float
    ``lanes`` where above 1 and offered, else :data:`PREFERRED_PLANE_DIM` where offered, else the
    largest power of two above 1 up to 32 (CUDA's warp), else 1 (no planes).

    :raises SettingError: ``asked`` is neither 1 (planes of one lane) nor one of ``sizes``.
    """
    offered = set(sizes)
    if asked is not None:
        if asked != 1 and asked not in offered:
            widths = ", ".join(str(n) for n in sorted({1, *offered}))
            raise SettingError(
                f"{PLANE_DIM_VARIABLE}={asked}: the device offers no subgroups of that width; "
                f"set it to one of {widths} (1: planes of one lane), or unset it"
            )
        return asked
    for width in (lanes, PREFERRED_PLANE_DIM):
        if width > 1 and width in offered:
            return width
    fitting = [n for n in offered if 1 < n <= 32 and n & (n - 1) == 0]
    return max(fitting, default=1)


@dataclass(frozen=True, slots=True)
class OpenCLCapabilities:
    """The capabilities of one device.

    :param target: the capabilities its code is generated with.
    :param plane_dim: the fixed subgroup width every kernel runs with; 1 without planes.
    :param build_options: the options every program is built with.
    :param environment: variables the device's driver reads when it builds kernels, with the
        values its server sets for the process where the user has not set them.
    :param builds_apart: whether its programs are built in a child process, as for Intel's CPU
        runtime, whose compiler ends the process on some kernels (see
        :mod:`ruda_opencl.builds_apart`).
    """

    target: OpenCLTarget
    plane_dim: int
    build_options: tuple[str, ...]
    environment: tuple[tuple[str, str], ...] = ()
    builds_apart: bool = False

    @classmethod
    def of(cls, device: Any, subgroups: bool = True) -> OpenCLCapabilities:
        """Read ``device`` (a ``pyopencl.Device``); without ``subgroups`` it is read as a device
        that has none (planes of one lane)."""
        features = [f.name for f in _features(device)]
        target = OpenCLTarget.offered(device.extensions, features)
        pocl = "Portable Computing Language" in device.platform.name
        # PoCL 5 under cbs aborts the process building any plane kernel: no planes there
        plane_dim = _plane_dim(device, target.capabilities) if subgroups and not pocl else 1
        if plane_dim == 1:
            target = target.without(_PLANE_KEYS)
            if not pocl:
                target = OpenCLTarget((*target.capabilities, Capability.ONE_LANE_PLANES))
        options = []
        if device.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT:
            options.append("-cl-fp32-correctly-rounded-divide-sqrt")
        if any(key in target for key in OPENCL_C_3):
            options.append("-cl-std=CL3.0")
        environment = POCL_ENVIRONMENT if pocl else ()
        intel_cpu = bool(device.type & cl.device_type.CPU) and device.platform.vendor.startswith(
            "Intel"
        )
        if intel_cpu:
            target = OpenCLTarget((*target.capabilities, Capability.SHARED_ARGUMENT))
        if device.platform.name.startswith("NVIDIA"):
            target = OpenCLTarget((*target.capabilities, Capability.PTX))
        # the child's answers are awaited with select(), which takes pipes on POSIX only
        apart = intel_cpu and os.name == "posix"
        return cls(target, plane_dim, tuple(options), environment, builds_apart=apart)

    @property
    def compile_options(self) -> CompileOptions:
        """The options the compiler generates this device's code with."""
        return CompileOptions(plane_dim=self.plane_dim, target=self.target)

    def features(self) -> Features:
        """The features and element types the capabilities give: every plane operation, on
        planes of one lane or of the subgroups' width (partial ones too, shuffles of any lane
        with ``cl_khr_subgroup_shuffle``); none on PoCL."""
        caps = self.target
        features = {
            Feature.ATOMIC_FLOAT,
            Feature.DYNAMIC_COUNT,
            Feature.DEVICE_TIMING,
            Feature.PRINT,  # printf is core OpenCL C 1.2
            Feature.UNBOUNDED_LOOPS,
        }
        # mem_fence is core OpenCL C 1.2; an OpenCL C 3.0 program fences the device with
        # atomic_work_item_fence of device scope, an optional feature there
        if not any(key in caps for key in OPENCL_C_3) or Capability.ATOMIC_SCOPE_DEVICE in caps:
            features.add(Feature.MEMORY_FENCE)
        if self.plane_dim == 1:  # one lane: no subgroup built-in, and no plane is partial
            if Capability.ONE_LANE_PLANES in caps:
                features |= {Feature.PLANE, Feature.PLANE_SHUFFLE, Feature.PARTIAL_PLANE}
        else:
            features |= {Feature.PLANE, Feature.PARTIAL_PLANE}
            if Capability.SUBGROUP_SHUFFLE in caps:
                features.add(Feature.PLANE_SHUFFLE)
        if Capability.INT64_ATOMICS in caps:
            features.add(Feature.ATOMIC_INT64)
        optional = {Elem.F64: Capability.FP64, Elem.BF16: Capability.BF16}
        elems = {e for e in Elem if e not in optional or optional[e] in caps}
        return Features(frozenset(features), frozenset(elems))


def _features(device: Any) -> list[Any]:
    """The device's OpenCL C 3.0 features (none before OpenCL 3.0, whose drivers reject it)."""
    try:
        return list(device.opencl_c_features)
    except (cl.Error, AttributeError):
        return []


def _plane_dim(device: Any, caps: Iterable[Capability]) -> int:
    """The width subgroups can be fixed to on ``device`` where they give every plane operation
    (a product needs the non-uniform arithmetic or shuffles), or 1."""
    have = set(caps)
    if not have & set(SUBGROUPS) or not have & {
        Capability.SUBGROUP_ARITH,
        Capability.SUBGROUP_SHUFFLE,
    }:
        return 1
    if Capability.INTEL_REQD_SUBGROUP_SIZE in have:
        cpu = device.type & cl.device_type.CPU
        lanes = int(device.native_vector_width_float) if cpu else 1
        asked = plane_dim_setting(PLANE_DIM_VARIABLE, "the width ruda picks")
        return choose_plane_dim(_intel_subgroup_sizes(device), lanes, asked)
    if Capability.SUBGROUPS in have:
        try:  # NVIDIA reports its warp width through cl_nv_device_attribute_query
            return int(device.get_info(_WARP_SIZE_NV))
        except cl.Error:
            return 1
    return 1


def _intel_subgroup_sizes(device: Any) -> tuple[int, ...]:
    """``CL_DEVICE_SUB_GROUP_SIZES_INTEL``. PyOpenCL's ``get_info`` answers only the queries it
    knows (this one raises ``INVALID_VALUE`` without reaching the driver), so it is asked of
    the ICD loader directly; empty when that fails."""
    get_info = _loader_get_device_info()
    if get_info is None:
        return ()
    nbytes = ctypes.c_size_t()
    handle = ctypes.c_void_p(device.int_ptr)
    if get_info(handle, _SUB_GROUP_SIZES_INTEL, 0, None, ctypes.byref(nbytes)) != 0:
        return ()
    sizes = (ctypes.c_size_t * (nbytes.value // ctypes.sizeof(ctypes.c_size_t)))()
    if get_info(handle, _SUB_GROUP_SIZES_INTEL, nbytes, sizes, None) != 0:
        return ()
    return tuple(int(n) for n in sizes)


@functools.cache
def _loader_get_device_info() -> Callable[..., int] | None:
    """``clGetDeviceInfo`` of the ICD loader PyOpenCL's wheel bundles, else the system's (any
    loader dispatches through the device handle to its driver); None without one."""
    bundled = sorted((Path(cl.__file__).parent / ".libs").glob("libOpenCL*"))
    name = str(bundled[0]) if bundled else ctypes.util.find_library("OpenCL")
    if name is None:
        return None
    try:
        fn = ctypes.CDLL(name).clGetDeviceInfo
    except (OSError, AttributeError):
        return None
    fn.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_size_t,
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_size_t),
    ]
    fn.restype = ctypes.c_int32
    return fn
