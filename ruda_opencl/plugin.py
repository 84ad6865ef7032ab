"""The ``opencl`` driver plugin. Imports PyOpenCL only when probed."""

from __future__ import annotations

from collections.abc import Mapping

from ruda_core import __version__
from ruda_core.plugins import PLUGIN_API_VERSION, BackendInfo, KnownFailure, NoDevice, hookimpl
from ruda_core.runtime import DeviceProperties

from .runtime import OpenCLDevice, OpenCLRuntime


def on_intel_cpu(properties: DeviceProperties) -> bool:
    """Whether the device is Intel's CPU OpenCL runtime (its platform, the device's
    ``vendor``, is ``Intel(R) OpenCL``; Intel's GPU platform is named otherwise)."""
    return properties.vendor == "Intel(R) OpenCL"


_SHIFT_AND_COMPLEMENT = KnownFailure(
    "Intel's CPU OpenCL compiler (2026.2) gets min(x >> 1, ~x) and max(x >> 1, ~x) wrong on "
    "32- and 64-bit integers, whether written with min()/max(), select() or a conditional "
    "expression; -cl-opt-disable gets them right",
    devices="Intel's CPU OpenCL runtime",
    applies=on_intel_cpu,
)
#: Known failures, by conformance name: what a driver this backend is proven on gets wrong
#: where the reference is exact.
XFAILS = {
    f"test_ops_int::test_min_and_max_of_a_shifted_value_and_its_complement[{elem}]": (
        _SHIFT_AND_COMPLEMENT
    )
    for elem in ("i32", "i64", "u32", "u64")
}


def _probe() -> list[OpenCLDevice]:
    from .driver import all_devices

    devices = all_devices()
    if not devices:
        raise NoDevice(
            "no OpenCL platform or device found; install a driver (pip install "
            "'ruda[opencl-cpu]' gives a CPU one) or point OCL_ICD_VENDORS at your vendor's "
            ".icd files"
        )
    return [OpenCLDevice(k) for k in range(len(devices))]


def _identify(device: object) -> str:
    from .driver import all_devices, driver_fingerprint

    assert isinstance(device, OpenCLDevice)
    return driver_fingerprint(all_devices()[device.index])


@hookimpl
def ruda_conformance_xfails() -> Mapping[str, KnownFailure]:
    """The conformance tests some of this backend's devices are known to fail, each with why
    and on which devices (see :data:`XFAILS`)."""
    return XFAILS


@hookimpl
def ruda_backend_info() -> BackendInfo:
    return BackendInfo(
        "opencl",
        __version__,
        PLUGIN_API_VERSION,
        OpenCLRuntime,
        _probe,
        install_hint="pip install 'ruda[opencl]' (or 'ruda[opencl-cpu]' for a CPU OpenCL driver)",
        identify=_identify,
        dlpack_device_type=None,  # cl_mem objects: not shared with other libraries by address
    )
