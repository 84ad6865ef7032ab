"""The ``opencl`` driver plugin. Imports PyOpenCL only when probed."""

from __future__ import annotations

from ruda_core import __version__
from ruda_core.plugins import PLUGIN_API_VERSION, BackendInfo, NoDevice, hookimpl

from .runtime import PLANE_DIM_VARIABLE, SUBGROUPS_VARIABLE, OpenCLDevice, OpenCLRuntime


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
        settings=(SUBGROUPS_VARIABLE, PLANE_DIM_VARIABLE),
    )
