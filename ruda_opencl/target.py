"""``OpenCLTarget``: what OpenCL C is generated for, the ``CompileOptions.target`` of an OpenCL
device: the :class:`Capability` values its extensions and OpenCL C 3.0 features give the code.
Pure: imports no driver.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["CAPABILITIES", "OPENCL_C_3", "SUBGROUPS", "Capability", "OpenCLTarget"]


class Capability(StrEnum):
    """A device capability the generated code may use (see :data:`CAPABILITIES`)."""

    FP16 = "fp16"
    FP64 = "fp64"
    INT64_ATOMICS = "int64_atomics"
    SUBGROUPS = "subgroups"
    OPENCL_C_SUBGROUPS = "opencl_c_subgroups"
    INTEL_SUBGROUPS = "intel_subgroups"
    INTEL_REQD_SUBGROUP_SIZE = "intel_reqd_subgroup_size"
    SUBGROUP_SHUFFLE = "subgroup_shuffle"
    SUBGROUP_ARITH = "subgroup_arith"
    SUBGROUP_BALLOT = "subgroup_ballot"
    SUBGROUP_SHUFFLE_RELATIVE = "subgroup_shuffle_relative"
    BF16 = "bf16"
    WORK_GROUP_COLLECTIVES = "work_group_collectives"
    ATOMIC_SCOPE_DEVICE = "atomic_scope_device"
    ONE_LANE_PLANES = "one_lane_planes"
    SHARED_ARGUMENT = "shared_argument"
    PTX = "ptx"


#: The OpenCL extensions (or OpenCL C 3.0 features) each capability stands for: all the names
#: joined by " and ", any of those joined by " or ".
CAPABILITIES = {
    Capability.FP16: "cl_khr_fp16",
    Capability.FP64: "cl_khr_fp64",
    Capability.INT64_ATOMICS: "cl_khr_int64_base_atomics and cl_khr_int64_extended_atomics",
    Capability.SUBGROUPS: "cl_khr_subgroups",
    # OpenCL C 3.0: build with -cl-std=CL3.0
    Capability.OPENCL_C_SUBGROUPS: "__opencl_c_subgroups",
    Capability.INTEL_SUBGROUPS: "cl_intel_subgroups",
    Capability.INTEL_REQD_SUBGROUP_SIZE: "cl_intel_required_subgroup_size",
    Capability.SUBGROUP_SHUFFLE: "cl_khr_subgroup_shuffle",
    Capability.SUBGROUP_ARITH: "cl_khr_subgroup_non_uniform_arithmetic",
    Capability.SUBGROUP_BALLOT: "cl_khr_subgroup_ballot",
    Capability.SUBGROUP_SHUFFLE_RELATIVE: "cl_khr_subgroup_shuffle_relative",
    Capability.BF16: "cl_intel_bfloat16 or cl_intel_bfloat16_conversions",
    # OpenCL C 3.0 features:
    Capability.WORK_GROUP_COLLECTIVES: "__opencl_c_work_group_collective_functions",
    Capability.ATOMIC_SCOPE_DEVICE: (
        "__opencl_c_atomic_order_acq_rel and __opencl_c_atomic_scope_device"
    ),
    # set by the driver, not an extension: plane operations as planes of one lane where there are
    # no subgroups (not on PoCL, whose compiler aborted the process on such kernels)
    Capability.ONE_LANE_PLANES: "planes of one lane (every driver but PoCL)",
    # set by the driver: every shared array carved out of the kernel's shared-memory argument,
    # none declared static (Intel's CPU runtime, see ruda_opencl.intel_cpu)
    Capability.SHARED_ARGUMENT: "shared arrays in the shared-memory argument (Intel's CPU runtime)",
    # set by the driver: kernels become PTX, then machine code through NVIDIA's assembler, whose
    # fusing of integer min and max the code works around (NVIDIA's OpenCL)
    Capability.PTX: "kernels assembled from PTX (NVIDIA's OpenCL)",
}
#: The capabilities that each give the subgroup functions (``get_sub_group_size`` …).
SUBGROUPS = (Capability.SUBGROUPS, Capability.OPENCL_C_SUBGROUPS, Capability.INTEL_SUBGROUPS)
#: The capabilities whose functions exist only in OpenCL C 3.0: a device with any of them builds
#: every program with ``-cl-std=CL3.0`` (and its fences then follow OpenCL 2.0's scopes).
OPENCL_C_3 = (Capability.OPENCL_C_SUBGROUPS, Capability.WORK_GROUP_COLLECTIVES)


@dataclass(frozen=True, slots=True)
class OpenCLTarget:
    """The capabilities OpenCL C is generated with, sorted and unique (so that the ``repr``, a
    cache key, is the same in every process).

    :raises ValueError: for a capability that is not a :class:`Capability` value.
    """

    capabilities: tuple[Capability, ...] = ()

    def __post_init__(self) -> None:
        unknown = {str(c) for c in self.capabilities} - set(Capability)
        if unknown:
            raise ValueError(
                f"unknown OpenCL capabilities {sorted(unknown)}; use {[str(c) for c in Capability]}"
            )
        unique = sorted({Capability(c) for c in self.capabilities})
        object.__setattr__(self, "capabilities", tuple(unique))

    def __contains__(self, capability: Capability) -> bool:
        return capability in self.capabilities

    @classmethod
    def offered(cls, extensions: str, features: Iterable[str] = ()) -> OpenCLTarget:
        """The target of a device whose ``CL_DEVICE_EXTENSIONS`` string is ``extensions`` and
        whose OpenCL C 3.0 features (``CL_DEVICE_OPENCL_C_FEATURES`` names) are ``features``."""
        names = set(extensions.split()) | set(features)

        def offered(spec: str) -> bool:
            return any(set(alt.split(" and ")) <= names for alt in spec.split(" or "))

        return cls(tuple(c for c, spec in CAPABILITIES.items() if offered(spec)))

    def without(self, drop: Iterable[Capability]) -> OpenCLTarget:
        """This target less the capabilities ``drop``."""
        gone = set(drop)
        return OpenCLTarget(tuple(c for c in self.capabilities if c not in gone))
